package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/**
 * A reusable flyweight over one RoCEv2 packet (the UDP payload: BTH, extension headers, payload, pad,
 * ICRC) in a big-endian {@link ByteBuffer}. {@link #wrap} points it at a packet and checks its framing;
 * the accessors then read the headers in place. No allocation.
 */
public final class RocePacket {
    /** Framing verdicts of {@link #wrap}. */
    public static final int OK = 0, TOO_SHORT = 1, BAD_OPCODE = 2, BAD_TVER = 3, BAD_LENGTH = 4;

    private ByteBuffer buf;
    private int off;
    private int len;
    private int opcode;
    private int flags;
    private int hdrLen;
    private int payloadLen;

    /**
     * Points this flyweight at a packet of {@code len} bytes (including the ICRC) at {@code off}.
     *
     * @return {@link #OK} or the reason the framing is wrong
     */
    public int wrap(ByteBuffer b, int off, int len) {
        this.buf = b;
        this.off = off;
        this.len = len;
        if (len < Bth.BYTES + Icrc.BYTES) return TOO_SHORT;
        opcode = Bth.opcode(b, off);
        flags = Opcode.flags(opcode);
        if (flags == 0) return BAD_OPCODE;
        if (Bth.tver(b, off) != 0) return BAD_TVER;
        hdrLen = Opcode.headerLength(opcode);
        int pad = Bth.padCount(b, off);
        payloadLen = len - hdrLen - pad - Icrc.BYTES;
        if (payloadLen < 0) return BAD_LENGTH;
        if ((flags & Opcode.PAYLOAD) == 0 && (payloadLen != 0 || pad != 0)) return BAD_LENGTH;
        return OK;
    }

    public ByteBuffer buffer() { return buf; }
    public int offset() { return off; }
    public int length() { return len; }
    public int opcode() { return opcode; }
    public int flags() { return flags; }
    public boolean has(int mask) { return (flags & mask) == mask; }
    public int headerLength() { return hdrLen; }
    public int payloadOffset() { return off + hdrLen; }
    public int payloadLength() { return payloadLen; }

    public int psn() { return Bth.psn(buf, off); }
    public int destQp() { return Bth.destQp(buf, off); }
    public boolean ackReq() { return Bth.ackReq(buf, off); }
    public boolean solicitedEvent() { return Bth.solicitedEvent(buf, off); }
    public int pkey() { return Bth.pkey(buf, off); }

    /** Offset of the RETH, AETH or AtomicETH (whichever the opcode has). */
    public int extOffset() { return off + Bth.BYTES; }
    public long rethVa() { return Reth.va(buf, off + Bth.BYTES); }
    public int rethRkey() { return Reth.rkey(buf, off + Bth.BYTES); }
    public long rethLength() { return Reth.dmaLength(buf, off + Bth.BYTES); }
    public int aethSyndrome() { return Aeth.syndrome(buf, off + Bth.BYTES); }
    public int aethMsn() { return Aeth.msn(buf, off + Bth.BYTES); }
    public long atomicVa() { return AtomicEth.va(buf, off + Bth.BYTES); }
    public int atomicRkey() { return AtomicEth.rkey(buf, off + Bth.BYTES); }
    public long atomicSwapAdd() { return AtomicEth.swapOrAdd(buf, off + Bth.BYTES); }
    public long atomicCompare() { return AtomicEth.compare(buf, off + Bth.BYTES); }
    public long atomicAckOriginal() { return AtomicAckEth.originalData(buf, off + Bth.BYTES + Aeth.BYTES); }
    /** DETH (UD): the Q_Key the sender presented, and the sender's QP number. */
    public int dethQkey() { return Deth.qkey(buf, off + Bth.BYTES); }
    public int dethSrcQp() { return Deth.srcQp(buf, off + Bth.BYTES); }
    /** ImmDt of an opcode that has one. */
    public int immediate() { return ImmDt.imm(buf, off + Opcode.immOffset(opcode)); }
    /** IETH R_Key of an opcode that has one. */
    public int invalidateRkey() { return Ieth.rkey(buf, off + Opcode.immOffset(opcode)); }

    /**
     * Writes the BTH of a packet with {@code payloadLen} payload bytes and returns the total packet length
     * (headers + payload + pad + ICRC). The caller writes the extension headers and payload, then the ICRC.
     */
    public static int writeBth(ByteBuffer b, int off, int opcode, boolean se, int pkey, int destQp,
                               boolean ackReq, int psn, int payloadLen) {
        int pad = Bth.padFor(payloadLen);
        Bth.write(b, off, opcode, se, false, pad, pkey, destQp, ackReq, psn);
        int hdr = Opcode.headerLength(opcode);
        if (hdr < 0) throw new IllegalArgumentException("unknown opcode 0x" + Integer.toHexString(opcode));
        for (int i = 0; i < pad; i++) b.put(off + hdr + payloadLen + i, (byte) 0);
        return hdr + payloadLen + pad + Icrc.BYTES;
    }
}
