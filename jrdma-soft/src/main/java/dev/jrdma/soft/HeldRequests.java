package dev.jrdma.soft;

import dev.jrdma.soft.wire.Psn;
import java.nio.ByteBuffer;

/**
 * The request packets a responder in the selective-repeat mode has received while one before them is missing: at most
 * one per PSN, at most {@link #capacity} PSNs beyond the expected one ({@link #REACH} requester windows), each either
 *
 * <ul>
 *   <li>held: a copy of the whole packet as it arrived (after the authenticated mode's check), executed with every
 *       check once the gap before it is filled, exactly as if it had arrived then; or
 *   <li>placed ({@link #markPlaced}): a WRITE MIDDLE or LAST of the WRITE message in progress, whose bytes the responder
 *       has put where the message's RETH (checked in sequence) says they go, as IRN places out-of-order packets; only
 *       its header is kept, to recognise a second copy, and once the gap is filled the responder only counts it in.
 * </ul>
 *
 * Its memory is made on the first gap a QP sees and dropped with the QP. Runs under the QP's monitor.
 */
final class HeldRequests {
    /**
     * How many requester windows beyond the expected PSN a responder keeps: a requester whose peer holds sends that far
     * beyond its oldest unacknowledged packet as long as at most one window is not known to have arrived ({@link
     * Requester}), so a hole's repair (a round trip) does not stall it.
     */
    static final int REACH = 4;

    /** A placed packet's part in its message: its payload length, whether it ends the message and asked for an ACK. */
    record Placed(int payloadLength, boolean end, boolean ackReq) {}

    private final int capacity;
    private byte[][] bytes;
    private int[] lengths;
    private int[] psns;
    /** For a placed packet, its {@link Placed} part; null for a held one. */
    private Placed[] placed;

    private int count;

    /** Keeps packets less than {@code reach} PSNs beyond the expected one (slots: the next power of two). */
    HeldRequests(int reach) {
        this.capacity = reach <= 1 ? 1 : Integer.highestOneBit(reach - 1) << 1;
    }

    /** How far beyond the expected PSN a packet may be kept. */
    int capacity() {
        return capacity;
    }

    /** Packets kept now. */
    int count() {
        return count;
    }

    /** What {@link #hold} did. */
    enum Outcome {
        KEPT,
        /** Too far ahead (or behind): nothing kept. */
        OUT_OF_RANGE,
        /** The same packet is kept already. */
        DUPLICATE,
        /**
         * Another packet with the same PSN was kept: one of the two is not the peer's (no requester sends two different
         * packets for one PSN), and nothing tells which, so neither is kept: the PSN is a gap again, which the requester
         * fills when it is NAKed.
         */
        CONFLICT
    }

    /**
     * Keeps the packet of {@code len} bytes at {@code off} in {@code b}, whose PSN {@code psn} must lie {@code 1 ..
     * capacity - 1} beyond {@code expected}.
     */
    Outcome hold(ByteBuffer b, int off, int len, int psn, int expected) {
        if (!inRange(psn, expected) || len <= 0) return Outcome.OUT_OF_RANGE;
        int slot = slot(psn);
        byte[] kept = bytes[slot];
        if (kept != null && psns[slot] == psn) {
            if (placed[slot] == null && lengths[slot] == len && sameRequest(b, off, kept, len))
                return Outcome.DUPLICATE;
            forget(psn);
            return Outcome.CONFLICT;
        }
        store(b, off, len, psn, null);
        return Outcome.KEPT;
    }

    /** Whether {@code psn} lies {@code 1 .. capacity - 1} beyond {@code expected} (the arrays are made on first use). */
    boolean inRange(int psn, int expected) {
        int d = Psn.diff(psn, expected);
        if (d <= 0 || d >= capacity) return false;
        if (bytes == null) {
            bytes = new byte[capacity][];
            lengths = new int[capacity];
            psns = new int[capacity];
            placed = new Placed[capacity];
        }
        return true;
    }

    /**
     * Records that the packet at {@code off} in {@code b}, whose header is {@code headerLen} bytes, PSN {@code psn} (in
     * range: {@link #inRange}), has been placed in memory; keeps its header.
     */
    void markPlaced(ByteBuffer b, int off, int headerLen, int psn, Placed what) {
        store(b, off, headerLen, psn, what);
    }

    private void store(ByteBuffer b, int off, int len, int psn, Placed what) {
        int slot = slot(psn);
        if (bytes[slot] != null) count--; // a stale copy from an earlier lap of the ring (dropBefore missed it)
        byte[] copy = bytes[slot] = new byte[len];
        b.get(off, copy, 0, len);
        // the request alone: an ACK it carried (jrdma's CarriedAck, left out of len) was handled when it arrived
        if (len > CARRIED_ACK_BYTE) copy[CARRIED_ACK_BYTE] &= (byte) ~CARRIED_ACK_BIT;
        lengths[slot] = len;
        psns[slot] = psn;
        placed[slot] = what;
        count++;
    }

    /** {@return whether a placed packet is recorded at {@code psn}} */
    boolean isPlaced(int psn) {
        if (count == 0) return false;
        int slot = slot(psn);
        return bytes[slot] != null && psns[slot] == psn && placed[slot] != null;
    }

    /** {@return whether something (held or placed) is recorded at {@code psn}} */
    boolean has(int psn) {
        if (count == 0) return false;
        int slot = slot(psn);
        return bytes[slot] != null && psns[slot] == psn;
    }

    /**
     * Whether the header at {@code off} in {@code b} ({@code headerLen} bytes) is that of the packet placed at {@code
     * psn}, but for the AckReq and carried-ACK bits.
     */
    boolean samePlacedHeader(ByteBuffer b, int off, int headerLen, int psn) {
        int slot = slot(psn);
        return lengths[slot] == headerLen && sameBytes(b, off, bytes[slot], headerLen);
    }

    /** Forgets what is recorded at {@code psn}: it is a gap again. */
    void forget(int psn) {
        int slot = slot(psn);
        if (count == 0 || bytes[slot] == null || psns[slot] != psn) return;
        bytes[slot] = null;
        placed[slot] = null;
        count--;
    }

    /** Takes the placed packet recorded at {@code psn} out: its part in the message, or null when none is placed there. */
    Placed takePlaced(int psn) {
        if (!isPlaced(psn)) return null;
        int slot = slot(psn);
        Placed p = placed[slot];
        forget(psn);
        return p;
    }

    /**
     * Takes the packet kept at {@code psn} out: a buffer holding exactly it, or null when none is kept there.
     */
    ByteBuffer take(int psn) {
        if (count == 0) return null;
        int slot = slot(psn);
        byte[] b = bytes[slot];
        if (b == null || psns[slot] != psn || placed[slot] != null) return null;
        bytes[slot] = null;
        count--;
        return ByteBuffer.wrap(b, 0, lengths[slot]);
    }

    /** Forgets everything kept (the QP left RTR/RTS, or its expected PSN moved by other means). */
    void clear() {
        if (count == 0) return;
        java.util.Arrays.fill(bytes, null);
        java.util.Arrays.fill(placed, null);
        count = 0;
    }

    /** Forgets what lies at or before {@code expected - 1} (already executed: kept copies of it are stale). */
    void dropBefore(int expected) {
        if (count == 0) return;
        for (int i = 0; i < capacity; i++) {
            if (bytes[i] != null && Psn.diff(psns[i], expected) < 0) {
                bytes[i] = null;
                placed[i] = null;
                count--;
            }
        }
    }

    /**
     * Whether the packet at {@code off} in {@code b} is the request {@code kept} is, sent again: the same bytes but for
     * the AckReq and carried-ACK bits (a resend may ask where the first copy did not) and the last 4 (the ICRC, or in
     * the authenticated mode the tag's, both covering AckReq).
     */
    private static boolean sameRequest(ByteBuffer b, int off, byte[] kept, int len) {
        return sameBytes(b, off, kept, len - 4);
    }

    /**
     * Whether the first {@code n} bytes at {@code off} in {@code b} are {@code kept}'s, but for the AckReq bit and the
     * bit that says an ACK is carried (a resend may carry one where the first copy did not).
     */
    private static boolean sameBytes(ByteBuffer b, int off, byte[] kept, int n) {
        for (int i = 0; i < n; i++) {
            int x = b.get(off + i) ^ kept[i];
            if (x != 0 && (i != CARRIED_ACK_BYTE || (x & ~(0x80 | CARRIED_ACK_BIT) & 0xFF) != 0)) return false;
        }
        return true;
    }

    /** Where the BTH says that a request carries an ACK ({@link dev.jrdma.soft.wire.Bth#carriesAck}): byte 8, 0x20. */
    private static final int CARRIED_ACK_BYTE = 8, CARRIED_ACK_BIT = 0x20;

    private int slot(int psn) {
        return psn & (capacity - 1); // a power of two: slots follow PSNs across the 24-bit wrap
    }
}
