package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Completions;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion queue ({@code struct ibv_cq*}). {@link #poll} calls the provider's poll_cq through the ops table
 * into an {@code ibv_wc} array this CQ owns, and copies the entries into the caller's objects: no allocation.
 */
final class NativeCq extends NativeResource implements CompletionQueue {
    static final int BATCH = 32;
    static final long WC_SIZE = Layouts.WC.byteSize();
    private static final long WR_ID = offset(Layouts.WC, "wr_id"),
            STATUS = offset(Layouts.WC, "status"),
            OPCODE = offset(Layouts.WC, "opcode"),
            VENDOR_ERR = offset(Layouts.WC, "vendor_err"),
            BYTE_LEN = offset(Layouts.WC, "byte_len"),
            IMM = offset(Layouts.WC, "imm_data"),
            QP_NUM = offset(Layouts.WC, "qp_num"),
            SRC_QP = offset(Layouts.WC, "src_qp"),
            WC_FLAGS = offset(Layouts.WC, "wc_flags"),
            PKEY = offset(Layouts.WC, "pkey_index"),
            SLID = offset(Layouts.WC, "slid"),
            SL = offset(Layouts.WC, "sl"),
            DLID_BITS = offset(Layouts.WC, "dlid_path_bits");

    final NativeContext context;
    final NativeChannel channel;
    final MemorySegment cq;
    private final MemorySegment fnPoll, fnNotify;
    private volatile int capacity;
    private final Arena arena = Arena.ofShared();
    /** The ibv_wc array's address (read through {@link Ibv#NATIVE}) and the CQ's, for the hot downcall. */
    private final long wcs, cqAddr;
    /** One poller at a time (they share the ibv_wc array); requestNotify and ackEvents take it too, destroy shuts it. */
    private final QueueGate pollGate = new QueueGate();
    /** QPs whose send or receive queue completes here: closed before this CQ. */
    final Set<NativeQp> users = ConcurrentHashMap.newKeySet();

    private long eventsReceived, eventsAcked;
    /** Asynchronous events (CQ_ERR) about this CQ not yet acknowledged: acknowledged before ibv_destroy_cq. */
    final PendingAsyncEvents asyncEvents = new PendingAsyncEvents();

    NativeCq(NativeContext context, NativeChannel channel, MemorySegment cq) {
        super(context, "CQ 0x" + Long.toHexString(cq.address()) + " of " + context.device.name());
        this.context = context;
        this.channel = channel;
        this.cq = cq;
        this.fnPoll = context.opsPollCq;
        this.fnNotify = context.opsReqNotifyCq;
        this.capacity = cq.get(JAVA_INT, offset(Layouts.CQ, "cqe"));
        this.wcs = arena.allocate(WC_SIZE * BATCH, 8).address(); // the poll gate keeps it from use after arena.close()
        this.cqAddr = cq.address();
        context.cqs.put(cq.address(), this);
        if (channel != null) channel.cqs.add(this);
    }

    @Override
    public Context context() {
        return context;
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public void resize(int cqe) {
        if (cqe < 1)
            throw new VerbsException("ibv_resize_cq", VerbsException.EINVAL, "cqe must be at least 1, not " + cqe);
        if (!pollGate.enter())
            throw new ClosedException("ibv_resize_cq", what()); // no poll runs while the provider swaps the ring
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Extra.RESIZE_CQ.invokeExact(st, cq, cqe);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_resize_cq",
                        Errors.errno(rc, st),
                        "resizing " + what() + " to " + cqe
                                + " was refused: it must hold at least the completions in it now, and at most max_cqe "
                                + context.attr().maxCqe());
            capacity = cq.get(JAVA_INT, offset(Layouts.CQ, "cqe"));
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            pollGate.exit();
        }
    }

    @Override
    public CompletionChannel channel() {
        return channel;
    }

    @Override
    public int poll(WorkCompletion[] out) {
        return poll(out, out.length);
    }

    @Override
    public int poll(WorkCompletion[] out, int max) {
        int want = Math.min(max, out.length);
        if (!pollGate.enter()) throw new ClosedException("ibv_poll_cq", what());
        try {
            checkOpen("ibv_poll_cq");
            if (want > BATCH) return pollBatches(out, want);
            // the common case, one poll_cq: kept apart from the batch loop, which costs ~4 ns per call when the JIT
            // inlines it into the caller's loop (CPU-time loop of NullProviderJmhTest)
            int n = want > 0 ? pollNative(want) : 0;
            for (int j = 0; j < n; j++) read(j * WC_SIZE, out[j]);
            return n;
        } finally {
            pollGate.exit();
        }
    }

    @Override
    public int poll(Completions out, int max) {
        int want = Math.min(max, out.capacity());
        if (!pollGate.enter()) throw new ClosedException("ibv_poll_cq", what());
        try {
            checkOpen("ibv_poll_cq");
            return want > 0 ? pollNative(want, out.memory().address()) : 0; // straight into the caller's ibv_wc array
        } finally {
            pollGate.exit();
            java.lang.ref.Reference.reachabilityFence(out); // its memory lives as long as it does
        }
    }

    /** More than one batch: poll_cq until {@code want} or the CQ is empty (the caller holds the poll gate). */
    private int pollBatches(WorkCompletion[] out, int want) {
        int done = 0;
        while (done < want) {
            int batch = Math.min(want - done, BATCH);
            int n = pollNative(batch);
            for (int j = 0; j < n; j++) read(j * WC_SIZE, out[done + j]);
            done += n;
            if (n < batch) break;
        }
        return done;
    }

    private int pollNative(int batch) {
        return pollNative(batch, wcs);
    }

    /** poll_cq of at most {@code batch} completions into the {@code ibv_wc} array at {@code into}. */
    private int pollNative(int batch, long into) {
        int n;
        try {
            n = (int) Ibv.Fn.OPS_POLL_CQ.invokeExact(fnPoll, cqAddr, batch, into);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (n < 0)
            throw new VerbsException(
                    "ibv_poll_cq",
                    -n > 0 ? -n : VerbsException.EIO,
                    "polling " + what() + " failed: check dmesg for device errors");
        return n;
    }

    /*
     * ibv_wc as six 64-bit loads (fewer bounds checks than thirteen narrow ones); little-endian, as the x86-64/LP64
     * layouts are: the low half of each pair is the member at the lower offset. The static check below holds the
     * offsets to that pairing, and LayoutConformanceTest holds Layouts to verbs.h.
     */
    static {
        if (WC_SIZE != Completions.ENTRY_BYTES
                || WR_ID != 0
                || STATUS != 8
                || OPCODE != 12
                || VENDOR_ERR != 16
                || BYTE_LEN != 20
                || IMM != 24
                || QP_NUM != 28
                || SRC_QP != 32
                || WC_FLAGS != 36
                || PKEY != 40
                || SLID != 42
                || SL != 44
                || DLID_BITS != 45
                || java.nio.ByteOrder.nativeOrder() != java.nio.ByteOrder.LITTLE_ENDIAN) {
            throw new ExceptionInInitializerError("struct ibv_wc is not laid out as NativeCq.read expects");
        }
    }

    private void read(long b, WorkCompletion w) {
        MemorySegment s = Ibv.NATIVE;
        b += wcs;
        long wrId = s.get(JAVA_LONG, b),
                statusOpcode = s.get(JAVA_LONG, b + 8),
                errLen = s.get(JAVA_LONG, b + 16),
                immQp = s.get(JAVA_LONG, b + 24),
                srcFlags = s.get(JAVA_LONG, b + 32),
                tail = s.get(JAVA_LONG, b + 40);
        w.wrId = wrId;
        int code = (int) statusOpcode;
        WcStatus st = code == 0 ? WcStatus.SUCCESS : WcStatus.of(code); // IBV_WC_SUCCESS is 0
        if (st == null) st = WcStatus.GENERAL_ERR;
        WcOpcode op = WcOpcode.of((int) (statusOpcode >>> 32));
        // reference stores carry GC barriers: skip them when a reused object already holds the value (the common case)
        if (w.status != st) w.status = st;
        if (w.opcode != op) w.opcode = op;
        w.vendorErr = (int) errLen;
        w.byteLen = (int) (errLen >>> 32);
        int flags = (int) (srcFlags >>> 32);
        w.wcFlags = flags;
        int imm = (int) immQp;
        // imm_data is __be32 (network order) in ibv_wc; the invalidated rkey is host order
        w.immData = (flags & WorkCompletion.WITH_IMM) != 0 ? Integer.reverseBytes(imm) : imm;
        w.qpNum = (int) (immQp >>> 32);
        w.srcQp = (int) srcFlags;
        w.pkeyIndex = (int) (tail & 0xffff);
        w.slid = (int) ((tail >>> 16) & 0xffff);
        w.sl = (int) ((tail >>> 32) & 0xff);
        w.dlidPathBits = (int) ((tail >>> 40) & 0xff);
    }

    @Override
    public void requestNotify(boolean solicitedOnly) {
        int rc;
        if (!pollGate.enter())
            throw new ClosedException(
                    "ibv_req_notify_cq", what()); // destroy shuts it: the CQ cannot be freed under the call
        try {
            checkOpen("ibv_req_notify_cq");
            rc = (int) Ibv.Fn.OPS_REQ_NOTIFY_CQ.invokeExact(fnNotify, cq, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            pollGate.exit();
        }
        if (rc != 0) throw new VerbsException("ibv_req_notify_cq", Math.abs(rc), "arming " + what() + " failed");
    }

    synchronized void eventReceived() {
        eventsReceived++;
    }

    @Override
    public void ackEvents(int n) {
        checkOpen("ibv_ack_cq_events");
        if (n < 0)
            throw new VerbsException(
                    "ibv_ack_cq_events", VerbsException.EINVAL, "cannot acknowledge a negative number of events");
        if (!pollGate.enter())
            throw new ClosedException(
                    "ibv_ack_cq_events", what()); // destroy shuts it: the CQ cannot be freed under the call
        try {
            checkOpen("ibv_ack_cq_events");
            int k;
            synchronized (this) {
                // never ack more than was received: libibverbs would then wait forever in ibv_destroy_cq
                k = (int) Math.min(n, eventsReceived - eventsAcked);
                eventsAcked += k;
            }
            if (k > 0) ack(k);
        } finally {
            pollGate.exit();
        }
    }

    private void ack(int k) {
        try {
            Ibv.Fn.ACK_CQ_EVENTS.invokeExact(cq, k);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
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
        RuntimeException first = null;
        asyncEvents.close(context);
        // order: the poll gate, then the channel's eventLock (awaitEvent takes only the latter)
        pollGate.shut();
        synchronized (channel == null ? this : channel.eventLock) {
            int k;
            synchronized (this) {
                k = (int) (eventsReceived - eventsAcked);
                eventsAcked = eventsReceived;
            }
            if (k > 0) ack(k);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment st = Ibv.callState(a);
                int rc = (int) Ibv.Fn.DESTROY_CQ.invokeExact(st, cq);
                if (rc != 0)
                    throw Errors.verb(
                            "ibv_destroy_cq", Errors.errno(rc, st), "QPs created outside jrdma may still use this CQ");
            } catch (Throwable t) {
                RuntimeException r = Ibv.rethrow(t);
                if (first == null) first = r;
                else first.addSuppressed(r);
            } finally {
                context.cqs.remove(cq.address());
                if (channel != null) channel.cqs.remove(this);
                arena.close();
            }
        }
        if (first != null) throw first;
    }

    @Override
    public String toString() {
        return what();
    }
}
