package dev.jrdma.soft;

import dev.jrdma.verbs.WcStatus;
import java.lang.foreign.MemorySegment;

/**
 * What send and receive work requests share: the scatter/gather list, copied at post time into a preallocated
 * ring slot, with the region each entry resolved to, and the copies between that list and packet buffers.
 */
abstract class Wqe {
    long wrId;
    int numSge;
    final long[] addr, len;
    final SoftMr[] mr;
    /** The message length: the sum of the SGE lengths. */
    long total;
    /** A local error found at post time (bad lkey, too long): the WQE completes with it when its turn comes. */
    WcStatus localErr;

    Wqe(int maxSge) {
        addr = new long[maxSge];
        len = new long[maxSge];
        mr = new SoftMr[maxSge];
    }

    /** Makes this WQE a copy of {@code o} (which has no more SGEs than this one has room for). */
    void copyFrom(Wqe o) {
        wrId = o.wrId;
        numSge = o.numSge;
        total = o.total;
        localErr = o.localErr;
        System.arraycopy(o.addr, 0, addr, 0, o.numSge);
        System.arraycopy(o.len, 0, len, 0, o.numSge);
        System.arraycopy(o.mr, 0, mr, 0, o.numSge);
    }

    /** Copies {@code count} bytes of the message at {@code msgOff} to {@code dst} at {@code dstOff}. False on a closed or bad region. */
    boolean gather(long msgOff, MemorySegment dst, long dstOff, long count) {
        try {
            long skip = msgOff;
            for (int i = 0; i < numSge && count > 0; i++) {
                long l = len[i];
                if (skip >= l) {
                    skip -= l;
                    continue;
                }
                SoftMr m = mr[i];
                if (m.isClosed()) return false;
                long chunk = Math.min(l - skip, count);
                MemorySegment.copy(m.seg, addr[i] - m.addr + skip, dst, dstOff, chunk);
                dstOff += chunk;
                count -= chunk;
                skip = 0;
            }
            return count == 0;
        } catch (RuntimeException e) { // arena closed, bounds
            return false;
        }
    }

    /** Copies {@code count} bytes from {@code src} at {@code srcOff} into the message at {@code msgOff}. False on a closed or bad region. */
    boolean scatter(MemorySegment src, long srcOff, long msgOff, long count) {
        try {
            long skip = msgOff;
            for (int i = 0; i < numSge && count > 0; i++) {
                long l = len[i];
                if (skip >= l) {
                    skip -= l;
                    continue;
                }
                SoftMr m = mr[i];
                if (m.isClosed()) return false;
                long chunk = Math.min(l - skip, count);
                MemorySegment.copy(src, srcOff, m.seg, addr[i] - m.addr + skip, chunk);
                srcOff += chunk;
                count -= chunk;
                skip = 0;
            }
            return count == 0;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
