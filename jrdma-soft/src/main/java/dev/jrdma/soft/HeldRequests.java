package dev.jrdma.soft;

import dev.jrdma.soft.wire.Psn;
import java.nio.ByteBuffer;

/**
 * The request packets a responder in the selective-repeat mode keeps while one before them is missing: at most one
 * per PSN, at most {@link #capacity} PSNs beyond the expected one (the requester's window), each a copy of the whole
 * packet as it arrived (after the authenticated mode's check), so that it can be executed, with every check, once the
 * gap before it is filled ({@link Responder}). Nothing is placed in memory from here: a held packet goes through the
 * responder's checks in PSN order exactly as if it had arrived then. Its memory is made on the first gap a QP sees and
 * dropped with the QP. Runs under the QP's monitor.
 */
final class HeldRequests {
    private final int capacity;
    private byte[][] bytes;
    private int[] lengths;
    private int[] psns;
    private int count;

    /** Keeps packets less than {@code window} PSNs beyond the expected one (slots: the next power of two). */
    HeldRequests(int window) {
        this.capacity = window <= 1 ? 1 : Integer.highestOneBit(window - 1) << 1;
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
        int d = Psn.diff(psn, expected);
        if (d <= 0 || d >= capacity || len <= 0) return Outcome.OUT_OF_RANGE;
        if (bytes == null) {
            bytes = new byte[capacity][];
            lengths = new int[capacity];
            psns = new int[capacity];
        }
        int slot = slot(psn);
        byte[] kept = bytes[slot];
        if (kept != null && psns[slot] == psn) {
            if (lengths[slot] == len && sameRequest(b, off, kept, len)) return Outcome.DUPLICATE;
            bytes[slot] = null;
            count--;
            return Outcome.CONFLICT;
        }
        if (kept != null) count--; // a stale copy from an earlier lap of the ring (dropBefore missed it): replaced
        byte[] copy = bytes[slot] = new byte[len];
        b.get(off, copy, 0, len);
        lengths[slot] = len;
        psns[slot] = psn;
        count++;
        return Outcome.KEPT;
    }

    /**
     * Takes the packet kept at {@code psn} out: a buffer holding exactly it, or null when none is kept there.
     */
    ByteBuffer take(int psn) {
        if (count == 0) return null;
        int slot = slot(psn);
        byte[] b = bytes[slot];
        if (b == null || psns[slot] != psn) return null;
        bytes[slot] = null;
        count--;
        return ByteBuffer.wrap(b, 0, lengths[slot]);
    }

    /** Forgets everything kept (the QP left RTR/RTS, or its expected PSN moved by other means). */
    void clear() {
        if (count == 0) return;
        java.util.Arrays.fill(bytes, null);
        count = 0;
    }

    /** Forgets what lies at or before {@code expected - 1} (already executed: kept copies of it are stale). */
    void dropBefore(int expected) {
        if (count == 0) return;
        for (int i = 0; i < capacity; i++) {
            if (bytes[i] != null && Psn.diff(psns[i], expected) < 0) {
                bytes[i] = null;
                count--;
            }
        }
    }

    /**
     * Whether the packet at {@code off} in {@code b} is the request {@code kept} is, sent again: the same bytes but for
     * the AckReq bit (a resend may ask where the first copy did not) and the last 4 (the ICRC, or in the authenticated
     * mode the tag's, both covering AckReq).
     */
    private static boolean sameRequest(ByteBuffer b, int off, byte[] kept, int len) {
        for (int i = 0; i < len - 4; i++) {
            int x = b.get(off + i) ^ kept[i];
            if (x != 0 && (i != 8 || (x & 0x7F) != 0)) return false;
        }
        return true;
    }

    private int slot(int psn) {
        return psn & (capacity - 1); // a power of two: slots follow PSNs across the 24-bit wrap
    }
}
