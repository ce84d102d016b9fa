package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/**
 * Base Transport Header (12 bytes, IBA vol 1 §9.2), read and written in place at an absolute offset of a
 * big-endian {@link ByteBuffer}; no state, no allocation.
 *
 * <pre>
 *  byte 0      opcode
 *  byte 1      SE(7) M(6) PadCnt(5..4) TVer(3..0)
 *  bytes 2-3   P_Key
 *  byte 4      resv8a (FECN(7) BECN(6) resv6 in RoCEv2; masked to ones in the ICRC)
 *  bytes 5-7   DestQP (24 bits)
 *  byte 8      AckReq(7) resv7
 *  bytes 9-11  PSN (24 bits)
 * </pre>
 */
public final class Bth {
    public static final int BYTES = 12;
    /** The default partition key (full member of the default partition). */
    public static final int DEFAULT_PKEY = 0xFFFF;

    private Bth() {}

    public static int opcode(ByteBuffer b, int off) { return b.get(off) & 0xFF; }
    public static boolean solicitedEvent(ByteBuffer b, int off) { return (b.get(off + 1) & 0x80) != 0; }
    public static boolean migReq(ByteBuffer b, int off) { return (b.get(off + 1) & 0x40) != 0; }
    public static int padCount(ByteBuffer b, int off) { return (b.get(off + 1) >>> 4) & 0x3; }
    public static int tver(ByteBuffer b, int off) { return b.get(off + 1) & 0xF; }
    public static int pkey(ByteBuffer b, int off) { return b.getShort(off + 2) & 0xFFFF; }
    public static int resv8a(ByteBuffer b, int off) { return b.get(off + 4) & 0xFF; }
    public static int destQp(ByteBuffer b, int off) { return b.getInt(off + 4) & 0xFFFFFF; }
    public static boolean ackReq(ByteBuffer b, int off) { return (b.get(off + 8) & 0x80) != 0; }
    public static int psn(ByteBuffer b, int off) { return b.getInt(off + 8) & 0xFFFFFF; }

    /** Writes a whole BTH (TVer 0, resv8a 0). */
    public static void write(ByteBuffer b, int off, int opcode, boolean se, boolean migReq, int padCount,
                             int pkey, int destQp, boolean ackReq, int psn) {
        b.put(off, (byte) opcode);
        b.put(off + 1, (byte) ((se ? 0x80 : 0) | (migReq ? 0x40 : 0) | ((padCount & 3) << 4)));
        b.putShort(off + 2, (short) pkey);
        b.putInt(off + 4, destQp & 0xFFFFFF);
        b.putInt(off + 8, (ackReq ? 0x8000_0000 : 0) | (psn & 0xFFFFFF));
    }

    public static void setOpcode(ByteBuffer b, int off, int opcode) { b.put(off, (byte) opcode); }
    public static void setSolicitedEvent(ByteBuffer b, int off, boolean se) {
        b.put(off + 1, (byte) ((b.get(off + 1) & 0x7F) | (se ? 0x80 : 0)));
    }
    public static void setPadCount(ByteBuffer b, int off, int pad) {
        b.put(off + 1, (byte) ((b.get(off + 1) & 0xCF) | ((pad & 3) << 4)));
    }
    public static void setDestQp(ByteBuffer b, int off, int qpn) {
        b.putInt(off + 4, (b.getInt(off + 4) & 0xFF00_0000) | (qpn & 0xFFFFFF));
    }
    public static void setAckReq(ByteBuffer b, int off, boolean ackReq) {
        b.put(off + 8, (byte) ((b.get(off + 8) & 0x7F) | (ackReq ? 0x80 : 0)));
    }
    public static void setPsn(ByteBuffer b, int off, int psn) {
        b.putInt(off + 8, (b.getInt(off + 8) & 0xFF00_0000) | (psn & 0xFFFFFF));
    }

    /** Pad bytes that bring a payload of {@code len} bytes to a multiple of 4. */
    public static int padFor(int len) { return -len & 3; }
}
