package dev.jrdma.soft;

import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;

/** A send work request, copied at post time into a slot of the {@link SendQueue}; the requester and completer track its progress here. */
final class SendWqe extends Wqe {
    /** Where a WQE stands: posted (not yet given PSNs), started (PSNs assigned, packets going out), done (ready to complete). */
    enum Progress {
        POSTED,
        STARTED,
        DONE
    }

    WrOpcode op;
    boolean signaled, fence, solicited, readOrAtomic, local;
    long remoteAddr, compareAdd, swap;
    int rkey, imm, invRkey;
    SoftMw bindMw;
    SoftMr bindMr;
    int bindRkey, bindAccess;
    long bindAddr, bindLen;
    boolean inline;
    MemorySegment inlineData;

    Progress progress;
    /** PSNs of its first and last packet, the number of packets, the next packet to (re)send, READ response packets received. */
    int firstPsn, lastPsn, npkts, nextPkt, readRecv;
    /** A READ: the packet its last request asked from (the PSN a NAK of that request names is {@code firstPsn + readAskedAt}). */
    int readAskedAt;

    SendWqe(int maxSge) {
        super(maxSge);
    }

    @Override
    boolean gather(long msgOff, MemorySegment dst, long dstOff, long count) {
        if (!inline) return super.gather(msgOff, dst, dstOff, count);
        try {
            MemorySegment.copy(inlineData, msgOff, dst, dstOff, count);
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
