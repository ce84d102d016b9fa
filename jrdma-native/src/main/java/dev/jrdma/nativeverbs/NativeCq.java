package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion queue ({@code struct ibv_cq*}). {@link #poll} calls the provider's poll_cq through the ops table
 * into an {@code ibv_wc} array this CQ owns, and copies the entries into the caller's objects: no allocation.
 */
final class NativeCq extends NativeResource implements CompletionQueue {
    static final int BATCH = 32;
    static final long WC_SIZE = Layouts.WC.byteSize();
    private static final long WR_ID = offset(Layouts.WC, "wr_id"), STATUS = offset(Layouts.WC, "status"),
            OPCODE = offset(Layouts.WC, "opcode"), VENDOR_ERR = offset(Layouts.WC, "vendor_err"),
            BYTE_LEN = offset(Layouts.WC, "byte_len"), IMM = offset(Layouts.WC, "imm_data"),
            QP_NUM = offset(Layouts.WC, "qp_num"), SRC_QP = offset(Layouts.WC, "src_qp"),
            WC_FLAGS = offset(Layouts.WC, "wc_flags"), PKEY = offset(Layouts.WC, "pkey_index"),
            SLID = offset(Layouts.WC, "slid"), SL = offset(Layouts.WC, "sl"), DLID_BITS = offset(Layouts.WC, "dlid_path_bits");

    final NativeContext context;
    final NativeChannel channel;
    final MemorySegment cq;
    private final MemorySegment fnPoll, fnNotify;
    private final int capacity;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment wcs;
    private final Object pollLock = new Object();
    /** QPs whose send or receive queue completes here: closed before this CQ. */
    final Set<NativeQp> users = ConcurrentHashMap.newKeySet();
    private long eventsReceived, eventsAcked;

    NativeCq(NativeContext context, NativeChannel channel, MemorySegment cq) {
        super(context, "CQ 0x" + Long.toHexString(cq.address()) + " of " + context.device.name());
        this.context = context;
        this.channel = channel;
        this.cq = cq;
        this.fnPoll = context.opsPollCq;
        this.fnNotify = context.opsReqNotifyCq;
        this.capacity = cq.get(JAVA_INT, offset(Layouts.CQ, "cqe"));
        this.wcs = arena.allocate(WC_SIZE * BATCH, 8);
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
        int done = 0;
        synchronized (pollLock) {
            checkOpen("ibv_poll_cq");
            while (done < want) {
                int batch = Math.min(want - done, BATCH);
                int n;
                try {
                    n = (int) Ibv.Fn.OPS_POLL_CQ.invokeExact(fnPoll, cq, batch, wcs);
                } catch (Throwable t) {
                    throw Ibv.rethrow(t);
                }
                if (n < 0) throw new VerbsException("ibv_poll_cq", -n > 0 ? -n : VerbsException.EIO, "polling " + what() + " failed: check dmesg for device errors");
                for (int j = 0; j < n; j++) read(j * WC_SIZE, out[done + j]);
                done += n;
                if (n < batch) break;
            }
        }
        return done;
    }

    private void read(long b, WorkCompletion w) {
        MemorySegment s = wcs;
        w.wrId = s.get(JAVA_LONG, b + WR_ID);
        WcStatus st = WcStatus.of(s.get(JAVA_INT, b + STATUS));
        w.status = st == null ? WcStatus.GENERAL_ERR : st;
        w.opcode = WcOpcode.of(s.get(JAVA_INT, b + OPCODE));
        w.vendorErr = s.get(JAVA_INT, b + VENDOR_ERR);
        w.byteLen = s.get(JAVA_INT, b + BYTE_LEN);
        int flags = s.get(JAVA_INT, b + WC_FLAGS);
        w.wcFlags = flags;
        int imm = s.get(JAVA_INT, b + IMM);
        // imm_data is __be32 (network order) in ibv_wc; the invalidated rkey is host order
        w.immData = (flags & WorkCompletion.WITH_IMM) != 0 ? Integer.reverseBytes(imm) : imm;
        w.qpNum = s.get(JAVA_INT, b + QP_NUM);
        w.srcQp = s.get(JAVA_INT, b + SRC_QP);
        w.pkeyIndex = Short.toUnsignedInt(s.get(JAVA_SHORT, b + PKEY));
        w.slid = Short.toUnsignedInt(s.get(JAVA_SHORT, b + SLID));
        w.sl = Byte.toUnsignedInt(s.get(JAVA_BYTE, b + SL));
        w.dlidPathBits = Byte.toUnsignedInt(s.get(JAVA_BYTE, b + DLID_BITS));
    }

    @Override
    public void requestNotify(boolean solicitedOnly) {
        int rc;
        synchronized (pollLock) { // destroy takes it too: the CQ cannot be freed under the call
            checkOpen("ibv_req_notify_cq");
            try {
                rc = (int) Ibv.Fn.OPS_REQ_NOTIFY_CQ.invokeExact(fnNotify, cq, solicitedOnly ? 1 : 0);
            } catch (Throwable t) {
                throw Ibv.rethrow(t);
            }
        }
        if (rc != 0) throw new VerbsException("ibv_req_notify_cq", Math.abs(rc), "arming " + what() + " failed");
    }

    synchronized void eventReceived() {
        eventsReceived++;
    }

    @Override
    public void ackEvents(int n) {
        checkOpen("ibv_ack_cq_events");
        if (n < 0) throw new VerbsException("ibv_ack_cq_events", VerbsException.EINVAL, "cannot acknowledge a negative number of events");
        synchronized (pollLock) { // destroy takes it too: the CQ cannot be freed under the call
            checkOpen("ibv_ack_cq_events");
            int k;
            synchronized (this) {
                // never ack more than was received: libibverbs would then wait forever in ibv_destroy_cq
                k = (int) Math.min(n, eventsReceived - eventsAcked);
                eventsAcked += k;
            }
            if (k > 0) ack(k);
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
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    @Override
    protected void free() {
        RuntimeException first = null;
        // order: pollLock, then the channel's eventLock (awaitEvent takes only the latter)
        synchronized (pollLock) {
            synchronized (channel == null ? pollLock : channel.eventLock) {
                int k;
                synchronized (this) {
                    k = (int) (eventsReceived - eventsAcked);
                    eventsAcked = eventsReceived;
                }
                if (k > 0) ack(k);
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment st = Ibv.callState(a);
                    int rc = (int) Ibv.Fn.DESTROY_CQ.invokeExact(st, cq);
                    if (rc != 0) throw Errors.verb("ibv_destroy_cq", Errors.errno(rc, st), "QPs created outside jrdma may still use this CQ");
                } catch (Throwable t) {
                    RuntimeException r = Ibv.rethrow(t);
                    if (first == null) first = r; else first.addSuppressed(r);
                } finally {
                    context.cqs.remove(cq.address());
                    if (channel != null) channel.cqs.remove(this);
                    arena.close();
                }
            }
        }
        if (first != null) throw first;
    }

    @Override
    public String toString() {
        return what();
    }
}
