package dev.jrdma.soft;

import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.spi.Resource;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion queue: a ring of preallocated {@link WorkCompletion}s filled by the QPs (under this CQ's lock)
 * and copied out by {@link #poll}. A poll first drives the device on the calling thread (it handles the packets
 * that wait on the socket, see {@link Transport#progressFromPoll}), so a busy-polling application gets its
 * completions without a hand-off from another thread. When the ring is full a completion is lost: the CQ counts it as an overrun
 * and the next poll that finds the ring empty throws, so an overrun is never silent.
 */
final class SoftCq extends Resource implements CompletionQueue {
    private final SoftContext ctx;
    private final SoftChannel channel;
    private WorkCompletion[] ring;
    private int mask;
    private int head, count;
    private long lost;
    private boolean armed, armedSolicitedOnly;
    private long eventsDelivered, eventsAcked;
    /** The QPs that complete into this CQ (send or receive side): closed before it, as the native provider does. */
    final Set<SoftQp> users = ConcurrentHashMap.newKeySet();

    SoftCq(SoftContext ctx, int cqe, SoftChannel channel) {
        super(ctx, "completion queue");
        this.ctx = ctx;
        this.channel = channel;
        int cap = 1;
        while (cap < cqe) cap <<= 1;
        ring = WorkCompletion.array(cap);
        mask = cap - 1;
    }

    @Override
    public SoftContext context() {
        return ctx;
    }

    @Override
    public synchronized int capacity() {
        return ring.length;
    }

    @Override
    public void resize(int cqe) {
        checkOpen("ibv_resize_cq");
        if (cqe < 1 || cqe > SoftContext.MAX_CQE)
            throw new VerbsException(
                    "ibv_resize_cq", VerbsException.EINVAL, "cqe " + cqe + " outside 1.." + SoftContext.MAX_CQE);
        synchronized (this) {
            if (cqe < count)
                throw new VerbsException(
                        "ibv_resize_cq",
                        VerbsException.EINVAL,
                        "cqe " + cqe + " is below the " + count + " completions the CQ holds: poll them first");
            int cap = 1;
            while (cap < cqe) cap <<= 1;
            WorkCompletion[] bigger = WorkCompletion.array(cap);
            for (int i = 0; i < count; i++)
                bigger[i].copyFrom(ring[(head + i) & mask]); // oldest first, as poll returns them
            ring = bigger;
            mask = cap - 1;
            head = 0;
        }
    }

    @Override
    public SoftChannel channel() {
        return channel;
    }

    @Override
    public int poll(WorkCompletion[] wcs) {
        return poll(wcs, wcs.length);
    }

    @Override
    public int poll(WorkCompletion[] wcs, int max) {
        checkOpen("ibv_poll_cq");
        ctx.transport.releaseCorks(); // the posts held for a batch leave (SendCork)
        // completions waiting are returned without a look at the socket first (its packets wait for the next poll
        // that finds the CQ empty): a poll that has something to return costs no system call
        if (count == 0 || max == 0) ctx.transport.progressFromPoll();
        int n;
        synchronized (this) {
            n = Math.min(Math.min(max, wcs.length), count);
            for (int i = 0; i < n; i++) {
                wcs[i].copyFrom(ring[head]);
                head = (head + 1) & mask;
            }
            count -= n;
            if (n == 0 && lost > 0) {
                long l = lost;
                lost = 0;
                throw new VerbsException(
                        "ibv_poll_cq",
                        VerbsException.ENOSPC,
                        "completion queue overrun: " + l
                                + " completion(s) were lost because the CQ (capacity " + ring.length
                                + ") was full; create the CQ with at least "
                                + "max_send_wr + max_recv_wr of the QPs that use it, and poll more often");
            }
        }
        return n;
    }

    @Override
    public void requestNotify(boolean solicitedOnly) {
        checkOpen("ibv_req_notify_cq");
        if (channel == null)
            throw new VerbsException(
                    "ibv_req_notify_cq",
                    VerbsException.EINVAL,
                    "this CQ was created without a completion channel: pass one to createCq to get events");
        synchronized (this) {
            if (armed && !armedSolicitedOnly) return; // "next" already covers "solicited"
            armed = true;
            armedSolicitedOnly = solicitedOnly;
        }
    }

    @Override
    public void ackEvents(int n) {
        checkOpen("ibv_ack_cq_events");
        synchronized (this) {
            eventsAcked += n;
        }
    }

    /** Adds a completion (called by QPs). Allocation-free. */
    void push(
            long wrId,
            WcStatus status,
            WcOpcode opcode,
            int byteLen,
            int imm,
            int wcFlags,
            int qpNum,
            int srcQp,
            boolean solicited) {
        if (isClosed()) return;
        boolean event = false, overrun = false;
        synchronized (this) {
            if (count == ring.length) {
                // rxe raises CQ_ERR for each completion it cannot post; one event per overrun (until a poll reports it)
                // says the same
                overrun = lost++ == 0;
            } else {
                WorkCompletion wc = ring[(head + count) & mask];
                count++;
                wc.wrId = wrId;
                wc.status = status;
                wc.opcode = opcode;
                wc.vendorErr = 0;
                wc.byteLen = byteLen;
                wc.immData = imm;
                wc.wcFlags = wcFlags;
                wc.qpNum = qpNum;
                wc.srcQp = srcQp;
                wc.pkeyIndex = 0;
                wc.slid = 0;
                wc.sl = 0;
                wc.dlidPathBits = 0;
            }
            if (armed && (!armedSolicitedOnly || solicited || status != WcStatus.SUCCESS)) {
                armed = false;
                event = true;
                eventsDelivered++;
            }
        }
        if (event) channel.deliver(this);
        if (overrun) ctx.raise(AsyncEventType.CQ_ERR, this);
    }

    synchronized int size() {
        return count;
    }

    /** Completions lost to an overrun and not yet reported. */
    synchronized long lost() {
        return lost;
    }

    /**
     * Closes the QPs that still complete into this CQ first, so none lives on without its CQ (libibverbs'
     * ibv_destroy_cq refuses with EBUSY; the native provider closes them too): the completions still queued go with
     * the CQ, and every later use of those QPs throws {@link dev.jrdma.verbs.ClosedException}.
     */
    @Override
    protected void destroy() {
        RuntimeException first = null;
        for (SoftQp qp : new ArrayList<>(users)) {
            try {
                qp.close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        users.clear();
        if (channel != null) channel.forget(this);
        if (first != null) throw first;
    }
}
