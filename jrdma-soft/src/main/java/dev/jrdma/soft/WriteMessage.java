package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.*;

import java.lang.foreign.MemorySegment;

/**
 * The WRITE message a responder has in progress: where its bytes go (the region and offset its first packet's RETH was
 * checked for, rkey, bounds and rights) and how many are still to come. Its packets carry consecutive PSNs, so a
 * MIDDLE or LAST packet that arrives beyond a gap says by its PSN alone where its bytes go: the selective-repeat mode
 * places it at once ({@link #place}, IRN's in-place placement) and counts it in when the gap is filled ({@link
 * #advance}). Runs under the QP's monitor.
 */
final class WriteMessage {
    private SoftMr mr;
    private long off, remain, total;

    /** The first packet's RETH was checked: {@code length} bytes go to {@code mr} from {@code offset}. */
    void start(SoftMr region, long offset, long length) {
        mr = region;
        off = offset;
        remain = total = length;
    }

    /** {@return the message's length (its RETH's DMA length)} */
    long total() {
        return total;
    }

    /** {@return the bytes still to come} */
    long remaining() {
        return remain;
    }

    /** The next packet in sequence: copies its {@code len} payload bytes; false when the region failed (closed). */
    boolean writeNext(MemorySegment from, long fromOffset, int len) {
        if (!copy(from, fromOffset, off, len)) return false;
        advance(len);
        return true;
    }

    /** The next {@code len} bytes are in place already (placed when they arrived beyond a gap). */
    void advance(int len) {
        off += len;
        remain -= len;
    }

    /**
     * Whether a packet {@code d} packets beyond the next one is a WRITE MIDDLE or LAST (no immediate: it completes
     * nothing) of this message, with exactly the payload length {@code plen} its place calls for at path MTU {@code
     * mtu}: a MIDDLE carries a full MTU with more to follow, a LAST the rest.
     */
    boolean placeable(int opcode, int plen, int d, int mtu) {
        if (mr == null) return false;
        long left = remain - (long) d * mtu; // bytes of the message from that packet on
        if (opcode == RDMA_WRITE_MIDDLE.code()) return plen == mtu && left > mtu;
        return opcode == RDMA_WRITE_LAST.code() && left > 0 && left == plen && plen <= mtu;
    }

    /** Copies a placeable packet's payload {@code d} MTUs past the next byte; false when the region failed. */
    boolean place(MemorySegment from, long fromOffset, int plen, int d, int mtu) {
        return copy(from, fromOffset, off + (long) d * mtu, plen);
    }

    /** Whether a packet's payload equals the bytes placed {@code d} MTUs past the next byte. */
    boolean samePlaced(MemorySegment from, long fromOffset, int plen, int d, int mtu) {
        try {
            long at = off + (long) d * mtu;
            return MemorySegment.mismatch(from, fromOffset, fromOffset + plen, mr.seg, at, at + plen) == -1;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private boolean copy(MemorySegment from, long fromOffset, long at, int len) {
        try {
            if (mr.isClosed()) return false;
            MemorySegment.copy(from, fromOffset, mr.seg, at, len);
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
