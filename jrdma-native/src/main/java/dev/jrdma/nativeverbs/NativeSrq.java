package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static dev.jrdma.nativeverbs.WorkRequestWriter.G_ADDR;
import static dev.jrdma.nativeverbs.WorkRequestWriter.G_LEN;
import static dev.jrdma.nativeverbs.WorkRequestWriter.G_LKEY;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_NEXT;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_NUM_SGE;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_SG_LIST;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_WR_ID;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A shared receive queue ({@code struct ibv_srq*}). {@link #postRecv} writes the receive requests into native
 * {@code ibv_recv_wr}/{@code ibv_sge} arrays the SRQ owns and calls the provider's post_srq_recv from the ops table:
 * no allocation per post.
 */
final class NativeSrq extends NativeResource implements SharedReceiveQueue {
    private static final int MAX_BATCH = 64;
    private static final long RWR = Layouts.RECV_WR.byteSize(), SGE = Layouts.SGE.byteSize();
    private static final int SRQ_LIMIT = 1 << 1; // IBV_SRQ_LIMIT

    final NativePd pd;
    final MemorySegment srq;
    private final int maxWr, maxSge, batch;
    private final MemorySegment fnPostSrqRecv;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment wrs, sges, badWr;
    private final long wrsAddr, sgesAddr;
    private final Object recvLock = new Object();
    /** QPs created on this SRQ: closed before it (ibv_destroy_srq fails while a QP uses it). */
    final Set<NativeQp> users = ConcurrentHashMap.newKeySet();
    /** Asynchronous events (SRQ_LIMIT_REACHED, SRQ_ERR) not yet acknowledged: acknowledged before ibv_destroy_srq. */
    final PendingAsyncEvents asyncEvents = new PendingAsyncEvents();

    private NativeSrq(NativePd pd, MemorySegment srq, int maxWr, int maxSge) {
        super(pd, "SRQ 0x" + Long.toHexString(srq.address()) + " of " + pd.context.device.name());
        this.pd = pd;
        this.srq = srq;
        this.maxWr = maxWr;
        this.maxSge = Math.max(1, maxSge);
        this.fnPostSrqRecv = pd.context.opsPostSrqRecv;
        batch = Math.max(1, Math.min(maxWr, MAX_BATCH));
        wrs = arena.allocate(RWR * batch, 8);
        sges = arena.allocate(SGE * batch * this.maxSge, 8);
        badWr = arena.allocate(ADDRESS);
        wrsAddr = wrs.address();
        sgesAddr = sges.address();
        pd.context.srqs.put(srq.address(), this);
    }

    /** ibv_create_srq; the caller holds the PD's {@link #enter}. */
    static NativeSrq create(NativePd pd, SrqAttr attr) {
        var dev = pd.context.attr();
        if (dev.maxSrq() == 0)
            throw Errors.unsupported(
                    "ibv_create_srq", "shared receive queues (max_srq 0 on " + pd.context.device.name() + ")");
        if (attr.maxWr() > dev.maxSrqWr() || attr.maxSge() > dev.maxSrqSge()) {
            throw new VerbsException(
                    "ibv_create_srq",
                    VerbsException.EINVAL,
                    "max_wr " + attr.maxWr() + " / max_sge " + attr.maxSge() + " exceed the device's max_srq_wr "
                            + dev.maxSrqWr() + " / max_srq_sge " + dev.maxSrqSge());
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment init = a.allocate(Layouts.SRQ_INIT_ATTR);
            var L = Layouts.SRQ_INIT_ATTR;
            init.set(JAVA_INT, offset(L, "attr.max_wr"), attr.maxWr());
            init.set(JAVA_INT, offset(L, "attr.max_sge"), attr.maxSge());
            init.set(JAVA_INT, offset(L, "attr.srq_limit"), attr.limit());
            MemorySegment s = (MemorySegment) Ibv.Extra.CREATE_SRQ.invokeExact(st, pd.pd, init);
            if (s.equals(MemorySegment.NULL))
                throw Errors.verb(
                        "ibv_create_srq",
                        Ibv.errno(st),
                        "check max_wr/max_sge against the device's max_srq_wr " + dev.maxSrqWr() + "/max_srq_sge "
                                + dev.maxSrqSge() + " and the memlock limit (ulimit -l)");
            int gotWr = Math.max(attr.maxWr(), init.get(JAVA_INT, offset(L, "attr.max_wr")));
            int gotSge = Math.max(attr.maxSge(), init.get(JAVA_INT, offset(L, "attr.max_sge")));
            try {
                return new NativeSrq(pd, s.reinterpret(Layouts.SRQ.byteSize()), gotWr, gotSge);
            } catch (RuntimeException e) { // the PD closed meanwhile: do not leak the native SRQ
                int ignored = (int) Ibv.Extra.DESTROY_SRQ.invokeExact(st, s);
                throw e;
            }
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public SrqAttr query() {
        return underUse("ibv_query_srq", (a, st) -> {
            MemorySegment attr = a.allocate(Layouts.SRQ_ATTR);
            int rc = (int) Ibv.Extra.QUERY_SRQ.invokeExact(st, srq, attr);
            if (rc != 0) throw Errors.verb("ibv_query_srq", Errors.errno(rc, st), "check " + what() + " still exists");
            var L = Layouts.SRQ_ATTR;
            return new SrqAttr(
                    Math.max(1, attr.get(JAVA_INT, offset(L, "max_wr"))),
                    Math.max(1, attr.get(JAVA_INT, offset(L, "max_sge"))),
                    attr.get(JAVA_INT, offset(L, "srq_limit")));
        });
    }

    @Override
    public void modifyLimit(int limit) {
        if (limit < 0 || limit > maxWr)
            throw new VerbsException(
                    "ibv_modify_srq",
                    VerbsException.EINVAL,
                    "the limit must lie in 0.." + maxWr + " (the SRQ's max_wr), not " + limit);
        this.<Void>underUse("ibv_modify_srq", (a, st) -> {
            MemorySegment attr = a.allocate(Layouts.SRQ_ATTR);
            attr.set(JAVA_INT, offset(Layouts.SRQ_ATTR, "srq_limit"), limit);
            int rc = (int) Ibv.Extra.MODIFY_SRQ.invokeExact(st, srq, attr, SRQ_LIMIT);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_modify_srq",
                        Errors.errno(rc, st),
                        "arming the limit " + limit + " of " + what()
                                + " was refused (some devices refuse a limit above the receives posted)");
            return null;
        });
    }

    @Override
    public void postRecv(RecvWorkRequest first) {
        if (first == null)
            throw new PostException("ibv_post_srq_recv", VerbsException.EINVAL, 0, "the work request is null");
        synchronized (recvLock) {
            checkOpen("ibv_post_srq_recv");
            RecvWorkRequest wr = first;
            int index = 0;
            while (wr != null) {
                int batchStart = index, n = 0;
                while (wr != null && n < batch) {
                    String problem = validate(wr);
                    if (problem != null) {
                        if (n > 0) postBatch(n, batchStart);
                        throw new PostException("ibv_post_srq_recv", VerbsException.EINVAL, index, problem);
                    }
                    write(n, wr);
                    n++;
                    index++;
                    wr = wr.next;
                }
                postBatch(n, batchStart);
            }
        }
    }

    private String validate(RecvWorkRequest wr) {
        int ns = wr.numSge();
        if (ns > maxSge) return "num_sge " + ns + " exceeds the SRQ's max_sge " + maxSge;
        for (int k = 0; k < ns; k++) {
            NativeMr byKey = pd.mrByLkey(wr.sge(k).lkey);
            if (byKey != null && !byKey.segmentAlive())
                return "SGE " + k + ": its memory region's segment is no longer alive (its arena was closed)";
        }
        return null;
    }

    private void write(int i, RecvWorkRequest wr) {
        long b = i * RWR;
        int ns = wr.numSge();
        long sgBase = (long) i * maxSge * SGE;
        wrs.set(JAVA_LONG, b + R_WR_ID, wr.wrId);
        wrs.set(JAVA_LONG, b + R_NEXT, wrsAddr + b + RWR);
        wrs.set(JAVA_LONG, b + R_SG_LIST, ns == 0 ? 0L : sgesAddr + sgBase);
        wrs.set(JAVA_INT, b + R_NUM_SGE, ns);
        for (int k = 0; k < ns; k++) {
            Sge e = wr.sge(k);
            long o = sgBase + k * SGE;
            sges.set(JAVA_LONG, o + G_ADDR, e.addr);
            sges.set(JAVA_INT, o + G_LEN, e.length);
            sges.set(JAVA_INT, o + G_LKEY, e.lkey);
        }
    }

    private void postBatch(int n, int batchStart) {
        wrs.set(JAVA_LONG, (n - 1) * RWR + R_NEXT, 0L);
        int rc;
        try {
            rc = (int) Ibv.Fn.OPS_POST_SRQ_RECV.invokeExact(fnPostSrqRecv, srq.address(), wrsAddr, badWr.address());
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (rc != 0) {
            long bad = badWr.get(JAVA_LONG, 0);
            int bi = bad >= wrsAddr && bad < wrsAddr + n * RWR ? (int) ((bad - wrsAddr) / RWR) : 0;
            int e = Math.abs(rc);
            throw new PostException(
                    "ibv_post_srq_recv",
                    e,
                    batchStart + bi,
                    e == VerbsException.ENOMEM
                            ? "the shared receive queue is full (max_wr " + maxWr
                                    + "): wait for receives to complete before posting more"
                            : "the provider refused the receive request");
        }
    }

    @Override
    void releaseDependents() {
        RuntimeException first = null;
        for (NativeQp qp : new ArrayList<>(users)) {
            try {
                qp.closeAndAwait();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    @Override
    protected void free() {
        asyncEvents.close(pd.context);
        synchronized (recvLock) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment st = Ibv.callState(a);
                int rc = (int) Ibv.Extra.DESTROY_SRQ.invokeExact(st, srq);
                if (rc != 0)
                    throw Errors.verb(
                            "ibv_destroy_srq",
                            Errors.errno(rc, st),
                            "QPs created outside jrdma may still use this SRQ");
            } catch (Throwable t) {
                throw Ibv.rethrow(t);
            } finally {
                pd.context.srqs.remove(srq.address());
                arena.close();
            }
        }
    }

    @Override
    public String toString() {
        return what();
    }
}
