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
 *  byte 8      AckReq(7) resv7 (jrdma: 0x40 selective-repeat mark, 0x20 carries an ACK, 0x10 takes carried ACKs)
 *  bytes 9-11  PSN (24 bits)
 * </pre>
 */
public final class Bth {
    /** The BTH's size in bytes. */
    public static final int BYTES = 12;
    /** The default partition key (full member of the default partition). */
    public static final int DEFAULT_PKEY = 0xFFFF;

    private Bth() {}

    /**
     * {@return the opcode (byte 0), an {@link Opcode} code}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int opcode(ByteBuffer b, int off) {
        return b.get(off) & 0xFF;
    }
    /**
     * {@return whether the SE bit asks the receiver for a solicited event}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean solicitedEvent(ByteBuffer b, int off) {
        return (b.get(off + 1) & 0x80) != 0;
    }
    /**
     * {@return the MigReq bit (path migration state; jrdma sends 0)}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean migReq(ByteBuffer b, int off) {
        return (b.get(off + 1) & 0x40) != 0;
    }
    /**
     * {@return the pad count, 0..3: the bytes after the payload that make it a multiple of 4}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int padCount(ByteBuffer b, int off) {
        return (b.get(off + 1) >>> 4) & 0x3;
    }
    /**
     * {@return the transport header version, 0..15 (only 0 is valid)}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int tver(ByteBuffer b, int off) {
        return b.get(off + 1) & 0xF;
    }
    /**
     * {@return the partition key, 16 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int pkey(ByteBuffer b, int off) {
        return b.getShort(off + 2) & 0xFFFF;
    }
    /**
     * {@return byte 4: reserved in IBA, FECN/BECN in RoCEv2}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int resv8a(ByteBuffer b, int off) {
        return b.get(off + 4) & 0xFF;
    }
    /**
     * {@return the destination QP number, 24 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int destQp(ByteBuffer b, int off) {
        return b.getInt(off + 4) & 0xFFFFFF;
    }
    /**
     * {@return whether the AckReq bit asks the responder to acknowledge this packet}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean ackReq(ByteBuffer b, int off) {
        return (b.get(off + 8) & 0x80) != 0;
    }
    /**
     * {@return whether resv7's top bit (byte 8, 0x40) is set: jrdma's selective-repeat mark} A PSN sequence NAK that
     * carries it comes from a jrdma responder that keeps the packets after the missing one; plain RoCEv2 sends the bit 0
     * and its receivers ignore reserved bits.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean holdsMark(ByteBuffer b, int off) {
        return (b.get(off + 8) & 0x40) != 0;
    }

    /**
     * Sets jrdma's selective-repeat mark ({@link #holdsMark}).
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static void setHoldsMark(ByteBuffer b, int off) {
        b.put(off + 8, (byte) (b.get(off + 8) | 0x40));
    }

    /**
     * {@return whether resv7's bit 0x20 is set: a request carries jrdma's carried ACK ({@link CarriedAck}) between its
     * payload (and pad) and the ICRC} Sent only to a jrdma QP that offered to take carried ACKs ({@link #takesAcks}).
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean carriesAck(ByteBuffer b, int off) {
        return (b.get(off + 8) & CARRIES_ACK) != 0;
    }

    /**
     * Sets or clears the carried-ACK bit ({@link #carriesAck}), leaving the other fields.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param carries whether a {@link CarriedAck} follows the payload
     */
    public static void setCarriesAck(ByteBuffer b, int off, boolean carries) {
        b.put(off + 8, (byte) ((b.get(off + 8) & ~CARRIES_ACK) | (carries ? CARRIES_ACK : 0)));
    }

    /**
     * {@return whether resv7's bit 0x10 is set: jrdma's offer to take carried ACKs} A jrdma requester sets it on its
     * requests to a peer it knows to be jrdma; a responder that executes such a request in sequence may then put the
     * ACKs it owes into its own requests ({@link #carriesAck}). Plain RoCEv2 sends the bit 0 and ignores it.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static boolean takesAcks(ByteBuffer b, int off) {
        return (b.get(off + 8) & TAKES_ACKS) != 0;
    }

    /**
     * Sets jrdma's offer to take carried ACKs ({@link #takesAcks}).
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static void setTakesAcks(ByteBuffer b, int off) {
        b.put(off + 8, (byte) (b.get(off + 8) | TAKES_ACKS));
    }

    /** Byte 8's bits of jrdma's carried ACKs: the ACK follows the payload; the sender takes carried ACKs. */
    private static final int CARRIES_ACK = 0x20, TAKES_ACKS = 0x10;

    /**
     * {@return the packet sequence number, 24 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     */
    public static int psn(ByteBuffer b, int off) {
        return b.getInt(off + 8) & 0xFFFFFF;
    }

    /**
     * Writes a whole BTH (TVer 0, resv8a 0).
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param opcode the opcode, an {@link Opcode} code
     * @param se the SE bit: ask for a solicited event
     * @param migReq the MigReq bit
     * @param padCount the pad count, 0..3 (see {@link #padFor})
     * @param pkey the partition key, 16 bits
     * @param destQp the destination QP number (24 bits kept)
     * @param ackReq the AckReq bit: ask for an acknowledgement
     * @param psn the packet sequence number (24 bits kept)
     */
    public static void write(
            ByteBuffer b,
            int off,
            int opcode,
            boolean se,
            boolean migReq,
            int padCount,
            int pkey,
            int destQp,
            boolean ackReq,
            int psn) {
        b.put(off, (byte) opcode);
        b.put(off + 1, (byte) ((se ? 0x80 : 0) | (migReq ? 0x40 : 0) | ((padCount & 3) << 4)));
        b.putShort(off + 2, (short) pkey);
        b.putInt(off + 4, destQp & 0xFFFFFF);
        b.putInt(off + 8, (ackReq ? 0x8000_0000 : 0) | (psn & 0xFFFFFF));
    }

    /**
     * Sets the opcode, leaving the other fields.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param opcode an {@link Opcode} code
     */
    public static void setOpcode(ByteBuffer b, int off, int opcode) {
        b.put(off, (byte) opcode);
    }
    /**
     * Sets or clears the SE bit, leaving the other fields.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param se the SE bit
     */
    public static void setSolicitedEvent(ByteBuffer b, int off, boolean se) {
        b.put(off + 1, (byte) ((b.get(off + 1) & 0x7F) | (se ? 0x80 : 0)));
    }
    /**
     * Sets the pad count, leaving the other fields.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param pad 0..3 (2 bits kept)
     */
    public static void setPadCount(ByteBuffer b, int off, int pad) {
        b.put(off + 1, (byte) ((b.get(off + 1) & 0xCF) | ((pad & 3) << 4)));
    }
    /**
     * Sets the destination QP number, leaving byte 4.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param qpn the QP number (24 bits kept)
     */
    public static void setDestQp(ByteBuffer b, int off, int qpn) {
        b.putInt(off + 4, (b.getInt(off + 4) & 0xFF00_0000) | (qpn & 0xFFFFFF));
    }
    /**
     * Sets or clears the AckReq bit, leaving the PSN.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param ackReq the AckReq bit
     */
    public static void setAckReq(ByteBuffer b, int off, boolean ackReq) {
        b.put(off + 8, (byte) ((b.get(off + 8) & 0x7F) | (ackReq ? 0x80 : 0)));
    }
    /**
     * Sets the PSN, leaving the AckReq bit.
     *
     * @param b the packet buffer (big-endian)
     * @param off the BTH's absolute offset in {@code b}
     * @param psn the packet sequence number (24 bits kept)
     */
    public static void setPsn(ByteBuffer b, int off, int psn) {
        b.putInt(off + 8, (b.getInt(off + 8) & 0xFF00_0000) | (psn & 0xFFFFFF));
    }

    /**
     * {@return the pad bytes, 0..3, that bring a payload of {@code len} bytes to a multiple of 4}
     *
     * @param len the payload length in bytes
     */
    public static int padFor(int len) {
        return -len & 3;
    }
}
