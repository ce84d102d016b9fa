package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/**
 * A reusable flyweight over one RoCEv2 packet (the UDP payload: BTH, extension headers, payload, pad, jrdma's
 * carried ACK when the BTH says one is there ({@link CarriedAck}), ICRC) in a big-endian {@link ByteBuffer}.
 * {@link #wrap} points it at a packet and checks its framing; the accessors then read the headers in place. No
 * allocation.
 */
public final class RocePacket {
    /**
     * Framing verdicts of {@link #wrap}: OK; TOO_SHORT (less than a BTH and an ICRC); BAD_OPCODE (not an opcode
     * this codec knows); BAD_TVER (a transport version other than 0); BAD_LENGTH (the length does not fit the
     * opcode's headers, pad and payload).
     */
    public static final int OK = 0, TOO_SHORT = 1, BAD_OPCODE = 2, BAD_TVER = 3, BAD_LENGTH = 4;

    private ByteBuffer buf;
    private int off;
    private int len;
    private int opcode;
    private int flags;
    private int hdrLen;
    private int payloadLen;
    /** The bytes of jrdma's carried ACK before the ICRC: {@link CarriedAck#BYTES} or 0. */
    private int carried;

    /** An empty flyweight: {@link #wrap} points it at a packet. */
    public RocePacket() {}

    /**
     * Points this flyweight at a packet of {@code len} bytes (including the ICRC) at {@code off} and checks its
     * framing; the ICRC is not checked here.
     *
     * @param b the buffer holding the packet (big-endian)
     * @param off the packet's (the BTH's) absolute offset in {@code b}
     * @param len the packet's length in bytes: the UDP payload
     * @return {@link #OK} or the reason the framing is wrong ({@link #TOO_SHORT}, {@link #BAD_OPCODE}, {@link
     *                #BAD_TVER}, {@link #BAD_LENGTH})
     */
    public int wrap(ByteBuffer b, int off, int len) {
        this.buf = b;
        this.off = off;
        this.len = len;
        carried = 0;
        if (len < Bth.BYTES + Icrc.BYTES) return TOO_SHORT;
        opcode = Bth.opcode(b, off);
        flags = Opcode.flags(opcode);
        if (flags == 0) return BAD_OPCODE;
        if (Bth.tver(b, off) != 0) return BAD_TVER;
        hdrLen = Opcode.headerLength(opcode);
        int pad = Bth.padCount(b, off);
        carried = Bth.carriesAck(b, off) ? CarriedAck.BYTES : 0;
        payloadLen = len - hdrLen - pad - carried - Icrc.BYTES;
        if (payloadLen < 0) return BAD_LENGTH;
        if ((flags & Opcode.PAYLOAD) == 0 && (payloadLen != 0 || pad != 0)) return BAD_LENGTH;
        return OK;
    }

    /** {@return the buffer of the wrapped packet} */
    public ByteBuffer buffer() {
        return buf;
    }
    /** {@return the wrapped packet's offset in {@link #buffer()}} */
    public int offset() {
        return off;
    }
    /** {@return the wrapped packet's length in bytes, ICRC included} */
    public int length() {
        return len;
    }
    /** {@return the BTH opcode} */
    public int opcode() {
        return opcode;
    }
    /** {@return the {@link Opcode} flag bits of the opcode} */
    public int flags() {
        return flags;
    }
    /**
     * {@return whether every bit of {@code mask} is set for the opcode}
     *
     * @param mask {@link Opcode} flag bits ORed together
     */
    public boolean has(int mask) {
        return (flags & mask) == mask;
    }
    /** {@return the BTH and extension headers, in bytes} */
    public int headerLength() {
        return hdrLen;
    }
    /** {@return the payload's absolute offset in {@link #buffer()}} */
    public int payloadOffset() {
        return off + hdrLen;
    }
    /** {@return the payload's length in bytes (pad and ICRC excluded)} */
    public int payloadLength() {
        return payloadLen;
    }

    /** {@return the BTH's PSN, 24 bits} */
    public int psn() {
        return Bth.psn(buf, off);
    }
    /** {@return the BTH's destination QP number, 24 bits} */
    public int destQp() {
        return Bth.destQp(buf, off);
    }
    /** {@return whether the BTH's AckReq bit is set} */
    public boolean ackReq() {
        return Bth.ackReq(buf, off);
    }
    /** {@return whether the BTH carries jrdma's selective-repeat mark ({@link Bth#holdsMark})} */
    public boolean holdsMark() {
        return Bth.holdsMark(buf, off);
    }
    /** {@return whether the request carries jrdma's carried ACK ({@link Bth#carriesAck}; then see {@link #carriedAckOffset})} */
    public boolean carriesAck() {
        return carried != 0;
    }
    /** {@return the absolute offset of the {@link CarriedAck} in {@link #buffer()} (when {@link #carriesAck})} */
    public int carriedAckOffset() {
        return off + len - Icrc.BYTES - CarriedAck.BYTES;
    }
    /** {@return the packet's length without its carried ACK (ICRC included): the request as it would go alone} */
    public int lengthWithoutCarriedAck() {
        return len - carried;
    }
    /** {@return whether the BTH carries jrdma's offer to take carried ACKs ({@link Bth#takesAcks})} */
    public boolean takesAcks() {
        return Bth.takesAcks(buf, off);
    }
    /** {@return whether the BTH's SE bit is set} */
    public boolean solicitedEvent() {
        return Bth.solicitedEvent(buf, off);
    }
    /** {@return the BTH's partition key} */
    public int pkey() {
        return Bth.pkey(buf, off);
    }

    /** {@return the absolute offset of the RETH, AETH, AtomicETH or DETH (whichever the opcode has)} */
    public int extOffset() {
        return off + Bth.BYTES;
    }
    /** {@return the RETH's remote virtual address} */
    public long rethVa() {
        return Reth.va(buf, off + Bth.BYTES);
    }
    /** {@return the RETH's R_Key} */
    public int rethRkey() {
        return Reth.rkey(buf, off + Bth.BYTES);
    }
    /** {@return the RETH's DMA length, unsigned} */
    public long rethLength() {
        return Reth.dmaLength(buf, off + Bth.BYTES);
    }
    /** {@return the AETH's syndrome byte} */
    public int aethSyndrome() {
        return Aeth.syndrome(buf, off + Bth.BYTES);
    }
    /** {@return the AETH's message sequence number} */
    public int aethMsn() {
        return Aeth.msn(buf, off + Bth.BYTES);
    }
    /** {@return the AtomicETH's remote virtual address} */
    public long atomicVa() {
        return AtomicEth.va(buf, off + Bth.BYTES);
    }
    /** {@return the AtomicETH's R_Key} */
    public int atomicRkey() {
        return AtomicEth.rkey(buf, off + Bth.BYTES);
    }
    /** {@return the AtomicETH's swap value or addend} */
    public long atomicSwapAdd() {
        return AtomicEth.swapOrAdd(buf, off + Bth.BYTES);
    }
    /** {@return the AtomicETH's compare value} */
    public long atomicCompare() {
        return AtomicEth.compare(buf, off + Bth.BYTES);
    }
    /** {@return the AtomicAckETH's original value of the remote word} */
    public long atomicAckOriginal() {
        return AtomicAckEth.originalData(buf, off + Bth.BYTES + Aeth.BYTES);
    }
    /** {@return the DETH's Q_Key (UD): the one the sender presented} */
    public int dethQkey() {
        return Deth.qkey(buf, off + Bth.BYTES);
    }
    /** {@return the DETH's source QP number (UD): the sender's QP} */
    public int dethSrcQp() {
        return Deth.srcQp(buf, off + Bth.BYTES);
    }
    /** {@return the ImmDt of an opcode that has one} */
    public int immediate() {
        return ImmDt.imm(buf, off + Opcode.immOffset(opcode));
    }
    /** {@return the IETH's R_Key of an opcode that has one} */
    public int invalidateRkey() {
        return Ieth.rkey(buf, off + Opcode.immOffset(opcode));
    }

    /**
     * Writes the BTH of a packet with {@code payloadLen} payload bytes, and its pad bytes (zero); the caller writes the
     * extension headers and payload, then the ICRC.
     *
     * @param b the buffer to write into (big-endian)
     * @param off where the packet starts in {@code b}
     * @param opcode an {@link Opcode} code
     * @param se the SE bit
     * @param pkey the partition key
     * @param destQp the destination QP number
     * @param ackReq the AckReq bit
     * @param psn the PSN
     * @param payloadLen the payload's length in bytes
     * @return the packet's total length: headers, payload, pad and ICRC
     * @throws IllegalArgumentException when the opcode is not one this codec knows
     */
    public static int writeBth(
            ByteBuffer b,
            int off,
            int opcode,
            boolean se,
            int pkey,
            int destQp,
            boolean ackReq,
            int psn,
            int payloadLen) {
        int pad = Bth.padFor(payloadLen);
        Bth.write(b, off, opcode, se, false, pad, pkey, destQp, ackReq, psn);
        int hdr = Opcode.headerLength(opcode);
        if (hdr < 0) throw new IllegalArgumentException("unknown opcode 0x" + Integer.toHexString(opcode));
        for (int i = 0; i < pad; i++) b.put(off + hdr + payloadLen + i, (byte) 0);
        return hdr + payloadLen + pad + Icrc.BYTES;
    }
}
