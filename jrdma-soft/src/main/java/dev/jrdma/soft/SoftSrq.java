package dev.jrdma.soft;

import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.spi.Resource;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A shared receive queue of the software device: a ring of receive requests, copied at post time, that the
 * responders of the QPs created on it take from in order ({@link #take}). Like rxe's {@code get_srq_wqe}, a
 * responder copies the request out when a message starts, so a QP never holds a slot of the ring.
 */
final class SoftSrq extends Resource implements SharedReceiveQueue {
    final SoftPd pd;
    private final SoftContext ctx;
    private final RecvQueue ring;
    private final int maxSge;
    private int limit;
    /** QPs created on this SRQ: closed before it. */
    final Set<Resource> users = ConcurrentHashMap.newKeySet();

    SoftSrq(SoftPd pd, SrqAttr attr) {
        super(pd, "shared receive queue");
        this.pd = pd;
        this.ctx = pd.context();
        int n = 1;
        while (n < attr.maxWr()) n <<= 1;
        ring = new RecvQueue(n, attr.maxSge());
        maxSge = attr.maxSge();
        limit = attr.limit();
    }

    static void check(SrqAttr attr) {
        if (attr.maxWr() > SoftContext.MAX_QP_WR || attr.maxSge() > SoftContext.MAX_SGE)
            throw new VerbsException(
                    "ibv_create_srq",
                    VerbsException.EINVAL,
                    "max_wr " + attr.maxWr() + " / max_sge " + attr.maxSge() + " above the soft device's "
                            + SoftContext.MAX_QP_WR + " / " + SoftContext.MAX_SGE);
        if (attr.limit() > attr.maxWr())
            throw new VerbsException(
                    "ibv_create_srq",
                    VerbsException.EINVAL,
                    "the limit " + attr.limit() + " is above max_wr " + attr.maxWr());
    }

    @Override
    public SoftPd pd() {
        return pd;
    }

    @Override
    public synchronized SrqAttr query() {
        checkOpen("ibv_query_srq");
        return new SrqAttr(ring.capacity(), maxSge, limit);
    }

    @Override
    public void modifyLimit(int newLimit) {
        checkOpen("ibv_modify_srq");
        if (newLimit < 0 || newLimit > ring.capacity())
            throw new VerbsException(
                    "ibv_modify_srq",
                    VerbsException.EINVAL,
                    "the limit must lie in 0.." + ring.capacity() + " (the SRQ's max_wr), not " + newLimit);
        synchronized (this) {
            limit = newLimit;
        }
    }

    @Override
    public void postRecv(RecvWorkRequest first) {
        checkOpen("ibv_post_srq_recv");
        synchronized (this) {
            int idx = 0;
            for (RecvWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
                if (ring.isFull())
                    throw new PostException(
                            "ibv_post_srq_recv",
                            VerbsException.ENOMEM,
                            idx,
                            "the shared receive queue is full (max_wr " + ring.capacity()
                                    + "): wait for receives to complete before posting more");
                if (wr.numSge() > maxSge)
                    throw new PostException(
                            "ibv_post_srq_recv",
                            VerbsException.EINVAL,
                            idx,
                            "num_sge " + wr.numSge() + " is above the SRQ's max_sge " + maxSge);
                RecvWqe r = ring.at(ring.tail);
                r.wrId = wr.wrId;
                r.localErr = null;
                int n = wr.numSge();
                r.numSge = n;
                long total = 0;
                for (int i = 0; i < n; i++) {
                    Sge g = wr.sge(i);
                    long l = Integer.toUnsignedLong(g.length);
                    r.addr[i] = g.addr;
                    r.len[i] = l;
                    total += l;
                    SoftMr mr = pd.localMr(g.lkey, g.addr, l, true);
                    r.mr[i] = mr;
                    if (mr == null && l > 0) r.localErr = WcStatus.LOC_PROT_ERR;
                }
                r.total = total;
                ring.tail++;
            }
        }
    }

    /**
     * For a responder starting a message: copies the oldest receive into {@code into} and removes it; false when the
     * SRQ is empty (the responder answers RNR). When fewer than the armed limit remain, raises SRQ_LIMIT_REACHED
     * once and disarms the limit, as the spec says. Allocation-free (but for the event).
     */
    boolean take(RecvWqe into) {
        boolean limitReached;
        synchronized (this) {
            if (ring.isEmpty()) return false;
            RecvWqe r = ring.first();
            into.copyFrom(r);
            java.util.Arrays.fill(r.mr, 0, r.numSge, null); // no stale region kept alive by the ring
            ring.head++;
            limitReached = limit > 0 && ring.tail - ring.head < limit;
            if (limitReached) limit = 0;
        }
        if (limitReached) ctx.raise(AsyncEventType.SRQ_LIMIT_REACHED, this);
        return true;
    }

    /** The receives it holds. */
    synchronized int size() {
        return ring.tail - ring.head;
    }

    int maxSge() {
        return maxSge;
    }

    @Override
    protected void destroy() {
        for (Resource qp : new ArrayList<>(users)) qp.close();
        users.clear();
    }
}
