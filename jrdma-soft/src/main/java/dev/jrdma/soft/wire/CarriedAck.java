package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/**
 * jrdma's carried ACK (8 bytes): the coalesced ACK a responder owes its peer, put into a request its own requester
 * sends on the same QP, so that a ping-pong's answer and the ACK of the request it answers cross in one datagram. A
 * jrdma extension, not RoCEv2: sent only between jrdma QPs that negotiated it in band ({@link Bth#takesAcks}), and
 * marked in the request's BTH ({@link Bth#carriesAck}). It trails the request, after its payload and pad and before
 * the ICRC (and the authenticated mode's tag, which covers it), so every header of the request stays where RoCEv2
 * puts it and the payload stays where its headers say:
 *
 * <pre>
 *  BTH | extension headers | payload | pad | carried ACK | [tag] | ICRC
 *
 *  byte 0      flags: 0x40 the responder's selective-repeat mark (as {@link Bth#holdsMark} on an ACK sent alone),
 *              the rest 0
 *  bytes 1-3   the acknowledged PSN (24 bits: the BTH PSN of the same ACK sent alone)
 *  bytes 4-7   its AETH (syndrome: an ACK, never a NAK; MSN)
 * </pre>
 *
 * Read and written in place at an absolute offset of a big-endian {@link ByteBuffer}; no state, no allocation.
 */
public final class CarriedAck {
    /** The carried ACK's size in bytes. */
    public static final int BYTES = 8;

    private static final int MARK = 0x40;

    private CarriedAck() {}

    /**
     * Writes a carried ACK.
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     * @param mark the responder's selective-repeat mark
     * @param psn the acknowledged PSN (24 bits kept)
     * @param syndrome the AETH syndrome: an ACK's ({@link Aeth#ackSyndrome})
     * @param msn the AETH's message sequence number (24 bits kept)
     */
    public static void write(ByteBuffer b, int off, boolean mark, int psn, int syndrome, int msn) {
        b.putInt(off, (mark ? MARK << 24 : 0) | (psn & 0xFFFFFF));
        Aeth.write(b, off + 4, syndrome, msn);
    }

    /**
     * {@return whether the carried ACK is one jrdma sends: no flag but the mark, and an ACK's syndrome (a NAK never
     * rides in a request)}
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     */
    public static boolean wellFormed(ByteBuffer b, int off) {
        return (b.get(off) & ~MARK) == 0 && Aeth.type(syndrome(b, off)) == Aeth.TYPE_ACK;
    }

    /**
     * {@return whether the responder's selective-repeat mark is set}
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     */
    public static boolean marked(ByteBuffer b, int off) {
        return (b.get(off) & MARK) != 0;
    }

    /**
     * {@return the acknowledged PSN, 24 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     */
    public static int psn(ByteBuffer b, int off) {
        return b.getInt(off) & 0xFFFFFF;
    }

    /**
     * {@return the AETH syndrome byte}
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     */
    public static int syndrome(ByteBuffer b, int off) {
        return Aeth.syndrome(b, off + 4);
    }

    /**
     * {@return the AETH's message sequence number, 24 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the carried ACK's absolute offset in {@code b}
     */
    public static int msn(ByteBuffer b, int off) {
        return Aeth.msn(b, off + 4);
    }
}
