package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static dev.jrdma.nativeverbs.WorkRequestWriter.RWR;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_NEXT;
import static dev.jrdma.nativeverbs.WorkRequestWriter.R_SG_LIST;
import static dev.jrdma.nativeverbs.WorkRequestWriter.SGE;
import static dev.jrdma.nativeverbs.WorkRequestWriter.SWR;
import static dev.jrdma.nativeverbs.WorkRequestWriter.S_NEXT;
import static dev.jrdma.nativeverbs.WorkRequestWriter.S_SG_LIST;
import static dev.jrdma.nativeverbs.WorkRequestWriter.S_WR_ID;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpAttrMask;
import dev.jrdma.verbs.QpCap;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpStateMachine;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * A queue pair ({@code struct ibv_qp*}). The {@code ibv_send_wr}/{@code ibv_recv_wr}/{@code ibv_sge} arrays live in
 * native memory owned by the QP; {@link #postSend}/{@link #postRecv} check the Java work requests, have {@link
 * WorkRequestWriter} write them into those arrays in place and call the provider's post_send/post_recv from the ops
 * table: no allocation per post. {@link QpAttrCodec} carries the attributes of modify and query.
 */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class NativeQp extends NativeResource implements QueuePair {
    private static final int MAX_BATCH = 64;
    private static final int INLINE_BIT = SendFlag.INLINE.bit;

    final NativePd pd;
    final MemorySegment qp;
    private final QpType type;
    private final int qpNum;
    private final NativeCq sendCq, recvCq;
    private final QpCap cap;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment fnPostSend, fnPostRecv;
    private final MemorySegment sendWrs, sendSges, recvWrs, recvSges, badWr;
    /** Their addresses, for the hot paths (stores through {@link Ibv#NATIVE}, the downcalls), and the QP's. */
    private final long sendWrsAddr, sendSgesAddr, recvWrsAddr, recvSgesAddr, badWrAddr, qpAddr;

    private final int sendBatch, recvBatch, sendSgeStride, recvSgeStride;
    /** One poster at a time per queue (they fill the queue's native arrays); destroy shuts both first. */
    private final QueueGate sendGate = new QueueGate(), recvGate = new QueueGate();
    /** The capacities the checks use, unboxed from {@link #cap}. */
    private final int maxSendSge, maxRecvSge, maxInline;
    /** The region the last SGE named, per queue: a post naming it again needs no lookup (a cache: races only cost a lookup). */
    private NativeMr lastSendMr, lastRecvMr;
    /** Windows and regions named by BIND_MW requests of the batch being posted, entered until it is posted (sendGate). */
    private final NativeResource[] held = new NativeResource[2 * MAX_BATCH];

    private int nHeld;
    /** The shared receive queue its receives come from, or null. */
    final NativeSrq srq;
    /** Asynchronous events about this QP not yet acknowledged: acknowledged before ibv_destroy_qp. */
    final PendingAsyncEvents asyncEvents = new PendingAsyncEvents();
    /** UD: the largest datagram, the active MTU of the port the QP was bound to in INIT (checked before posting). */
    private volatile int udMtu = Integer.MAX_VALUE;

    NativeQp(NativePd pd, MemorySegment qp, QpType type, NativeCq sendCq, NativeCq recvCq, QpCap cap) {
        this(pd, qp, type, sendCq, recvCq, cap, null);
    }

    NativeQp(NativePd pd, MemorySegment qp, QpType type, NativeCq sendCq, NativeCq recvCq, QpCap cap, NativeSrq srq) {
        super(
                pd,
                "QP 0x" + Integer.toHexString(qp.get(JAVA_INT, offset(Layouts.QP, "qp_num"))) + " of "
                        + pd.context.device.name());
        this.pd = pd;
        this.qp = qp;
        this.type = type;
        this.qpNum = qp.get(JAVA_INT, offset(Layouts.QP, "qp_num"));
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.cap = cap;
        this.maxSendSge = cap.maxSendSge();
        this.maxRecvSge = cap.maxRecvSge();
        this.maxInline = cap.maxInlineData();
        this.fnPostSend = pd.context.opsPostSend;
        this.fnPostRecv = pd.context.opsPostRecv;
        sendBatch = Math.max(1, Math.min(cap.maxSendWr(), MAX_BATCH));
        recvBatch = Math.max(1, Math.min(cap.maxRecvWr(), MAX_BATCH));
        sendSgeStride = Math.max(1, cap.maxSendSge());
        recvSgeStride = Math.max(1, cap.maxRecvSge());
        // the hot path uses unscoped views (see Ibv.unscoped): the gates keep them from being used after arena.close()
        sendWrs = Ibv.unscoped(arena.allocate(SWR * sendBatch, 8));
        sendSges = Ibv.unscoped(arena.allocate(SGE * sendBatch * sendSgeStride, 8));
        recvWrs = Ibv.unscoped(arena.allocate(RWR * recvBatch, 8));
        recvSges = Ibv.unscoped(arena.allocate(SGE * recvBatch * recvSgeStride, 8));
        badWr = Ibv.unscoped(arena.allocate(ADDRESS));
        sendWrsAddr = sendWrs.address();
        sendSgesAddr = sendSges.address();
        recvWrsAddr = recvWrs.address();
        recvSgesAddr = recvSges.address();
        badWrAddr = badWr.address();
        qpAddr = qp.address();
        // each slot's sg_list points at its own SGEs for good (a provider reads it only when num_sge > 0)
        for (int i = 0; i < sendBatch; i++)
            sendWrs.set(JAVA_LONG, i * SWR + S_SG_LIST, sendSgesAddr + (long) i * sendSgeStride * SGE);
        for (int i = 0; i < recvBatch; i++)
            recvWrs.set(JAVA_LONG, i * RWR + R_SG_LIST, recvSgesAddr + (long) i * recvSgeStride * SGE);
        sendCq.users.add(this);
        recvCq.users.add(this);
        this.srq = srq;
        if (srq != null) srq.users.add(this);
        pd.context.qps.put(qp.address(), this);
    }

    static NativeQp create(NativePd pd, QpInitAttr attr) {
        if (!(attr.sendCq() instanceof NativeCq scq)
                || !(attr.recvCq() instanceof NativeCq rcq)
                || scq.context != pd.context
                || rcq.context != pd.context) {
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EINVAL,
                    "the completion queues must belong to the PD's context (" + pd.context.device.name() + ")");
        }
        QpCap c = attr.cap();
        var dev = pd.context.attr();
        NativeSrq srq = null;
        if (attr.srq() != null) {
            if (!(attr.srq() instanceof NativeSrq s) || s.pd != pd) {
                throw new VerbsException(
                        "ibv_create_qp",
                        VerbsException.EINVAL,
                        "the shared receive queue must belong to the QP's protection domain");
            }
            srq = s;
        }
        // the CQs cannot be freed under ibv_create_qp (the caller holds the PD's read lock)
        scq.enter("ibv_create_qp");
        try {
            if (rcq != scq) rcq.enter("ibv_create_qp");
            try {
                if (srq != null) srq.enter("ibv_create_qp");
                try {
                    NativeQp q = create(pd, attr, scq, rcq, c, dev, srq);
                    if (scq.isClosed()
                            || rcq.isClosed()) { // a CQ began closing and may have missed this QP among its users
                        q.close();
                        throw new ClosedException("ibv_create_qp", (scq.isClosed() ? scq : rcq).what());
                    }
                    if (srq != null && srq.isClosed()) { // likewise for the SRQ
                        q.close();
                        throw new ClosedException("ibv_create_qp", srq.what());
                    }
                    return q;
                } finally {
                    if (srq != null) srq.exit();
                }
            } finally {
                if (rcq != scq) rcq.exit();
            }
        } finally {
            scq.exit();
        }
    }

    private static NativeQp create(
            NativePd pd,
            QpInitAttr attr,
            NativeCq scq,
            NativeCq rcq,
            QpCap c,
            dev.jrdma.verbs.DeviceAttr dev,
            NativeSrq srq) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment ia = a.allocate(Layouts.QP_INIT_ATTR);
            GroupLayout L = Layouts.QP_INIT_ATTR;
            ia.set(ADDRESS, offset(L, "send_cq"), scq.cq);
            ia.set(ADDRESS, offset(L, "recv_cq"), rcq.cq);
            if (srq != null) ia.set(ADDRESS, offset(L, "srq"), srq.srq);
            ia.set(JAVA_INT, offset(L, "cap.max_send_wr"), c.maxSendWr());
            ia.set(JAVA_INT, offset(L, "cap.max_recv_wr"), c.maxRecvWr());
            ia.set(JAVA_INT, offset(L, "cap.max_send_sge"), c.maxSendSge());
            ia.set(JAVA_INT, offset(L, "cap.max_recv_sge"), c.maxRecvSge());
            ia.set(JAVA_INT, offset(L, "cap.max_inline_data"), c.maxInlineData());
            ia.set(JAVA_INT, offset(L, "qp_type"), attr.type().code);
            ia.set(JAVA_INT, offset(L, "sq_sig_all"), attr.sqSigAll() ? 1 : 0);
            MemorySegment qp = (MemorySegment) Ibv.Fn.CREATE_QP.invokeExact(st, pd.pd, ia);
            if (qp.equals(MemorySegment.NULL)) {
                int e = Ibv.errno(st);
                throw Errors.verb(
                        "ibv_create_qp",
                        e,
                        "check the capacities " + c + " against the device's max_qp_wr " + dev.maxQpWr()
                                + ", max_sge " + dev.maxSge() + " and its inline limit, the QP type " + attr.type()
                                + (e == VerbsException.ENOMEM ? ", and the memlock limit (ulimit -l)" : ""));
            }
            QpCap got = new QpCap(
                    ia.get(JAVA_INT, offset(L, "cap.max_send_wr")),
                    ia.get(JAVA_INT, offset(L, "cap.max_recv_wr")),
                    ia.get(JAVA_INT, offset(L, "cap.max_send_sge")),
                    ia.get(JAVA_INT, offset(L, "cap.max_recv_sge")),
                    ia.get(JAVA_INT, offset(L, "cap.max_inline_data")));
            // never report less than was asked for (some providers leave the request untouched)
            got = new QpCap(
                    Math.max(got.maxSendWr(), c.maxSendWr()),
                    Math.max(got.maxRecvWr(), c.maxRecvWr()),
                    Math.max(got.maxSendSge(), c.maxSendSge()),
                    Math.max(got.maxRecvSge(), c.maxRecvSge()),
                    Math.max(got.maxInlineData(), c.maxInlineData()));
            try {
                return new NativeQp(pd, qp.reinterpret(Layouts.QP.byteSize()), attr.type(), scq, rcq, got, srq);
            } catch (RuntimeException e) { // the PD closed meanwhile: do not leak the native QP
                int ignored = (int) Ibv.Fn.DESTROY_QP.invokeExact(st, qp);
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
    public QpType type() {
        return type;
    }

    @Override
    public int qpNum() {
        return qpNum;
    }

    @Override
    public CompletionQueue sendCq() {
        return sendCq;
    }

    @Override
    public CompletionQueue recvCq() {
        return recvCq;
    }

    @Override
    public QpCap cap() {
        return cap;
    }

    // ---------------------------------------------------------------- state
    @Override
    public QpState state() {
        checkOpen("ibv_query_qp");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Layouts.QP_ATTR);
            query(a, s, QpAttrMask.STATE.bit);
            return QpState.of(s.get(JAVA_INT, offset(Layouts.QP_ATTR, "qp_state")));
        }
    }

    private void query(Arena a, MemorySegment attr, int mask) {
        enter("ibv_query_qp");
        try {
            MemorySegment st = Ibv.callState(a);
            MemorySegment init = a.allocate(Layouts.QP_INIT_ATTR);
            int rc = (int) Ibv.Fn.QUERY_QP.invokeExact(st, qp, attr, mask, init);
            if (rc != 0) throw Errors.verb("ibv_query_qp", Errors.errno(rc, st), "check " + what() + " still exists");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            exit();
        }
    }

    @Override
    public void modify(QpAttr attr) {
        checkOpen("ibv_modify_qp");
        QpState cur = state();
        QpState next = QpStateMachine.check(type, cur, attr);
        if (attr.has(QpAttrMask.PACKET_AUTH_KEY)) {
            throw new VerbsException(
                    "ibv_modify_qp",
                    VerbsException.EOPNOTSUPP,
                    "a kernel or hardware RDMA device (" + what()
                            + ") cannot authenticate packets: packetAuthKey is jrdma's own mode between software devices"
                            + " (Context.supportsPacketAuth() is false here); leave it out for plain RoCEv2");
        }
        int mask = attr.maskBits();
        int rc;
        int errno;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Layouts.QP_ATTR);
            QpAttrCodec.write(attr, s);
            MemorySegment st = Ibv.callState(a);
            enter("ibv_modify_qp");
            try {
                rc = (int) Ibv.Fn.MODIFY_QP.invokeExact(st, qp, s, mask);
            } finally {
                exit();
            }
            errno = rc == 0 ? 0 : Errors.errno(rc, st);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (rc == 0 && type == QpType.UD && attr.has(QpAttrMask.PORT))
            udMtu = pd.context.queryPort(attr.port()).activeMtu().bytes;
        if (rc != 0) {
            String hint = "moving " + what() + " " + cur + "->" + next + " with " + attr + " was refused: ";
            String general = "check the QP state (it is " + cur + ") and the attributes this transition requires; "
                    + "path MTU must not exceed the port's active MTU, the port and pkey index must exist, on RoCE the address "
                    + "vector must be global (is_global with the peer's GID) and sgid_index a valid GID of the port, "
                    + "max_rd_atomic/max_dest_rd_atomic within the device limits";
            hint += switch (errno) {
                case 61 ->
                    "ENODATA: the source GID index " + (attr.ah() == null ? "?" : attr.ah().sgidIndex)
                            + " has no GID on this port (list them with Context.gidTable or ibv_devinfo -v); "
                            + general;
                case VerbsException.ENOMEM -> "the device is out of resources";
                default -> general;
            };
            throw Errors.verb("ibv_modify_qp", errno, hint);
        }
    }

    @Override
    public QpAttr query() {
        checkOpen("ibv_query_qp");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Layouts.QP_ATTR);
            query(a, s, QpAttrCodec.QUERY_ALL);
            return QpAttrCodec.read(s);
        }
    }

    // ---------------------------------------------------------------- data path
    @Override
    public void postSend(SendWorkRequest first) {
        if (first == null)
            throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, "the work request is null");
        if (!sendGate.enter()) throw new ClosedException("ibv_post_send", what());
        try {
            checkOpen("ibv_post_send");
            if (first.next == null) postOne(first);
            else postSendChain(first);
        } finally {
            if (nHeld > 0) releaseHeld();
            sendGate.exit();
        }
    }

    /** The common case, one work request: small enough for the JIT to inline whole into the caller's loop. */
    private void postOne(SendWorkRequest wr) {
        int flags = wr.flagBits();
        String problem = validateSend(wr, flags);
        if (problem != null) throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, problem);
        WorkRequestWriter.writeSend(sendWrsAddr, sendSgesAddr, wr, flags, type == QpType.UD);
        postSendAt(sendWrsAddr, 1, 0);
    }

    private void postSendChain(SendWorkRequest first) {
        SendWorkRequest wr = first;
        int index = 0;
        while (wr != null) {
            int batchStart = index, n = 0;
            while (wr != null && n < sendBatch) {
                int flags = wr.flagBits();
                String problem = validateSend(wr, flags);
                if (problem != null) {
                    if (n > 0) postSendAt(sendWrsAddr, n, batchStart); // post what precedes it, as C would have
                    throw new PostException("ibv_post_send", VerbsException.EINVAL, index, problem);
                }
                WorkRequestWriter.writeSend(
                        sendWrsAddr + n * SWR,
                        sendSgesAddr + (long) n * sendSgeStride * SGE,
                        wr,
                        flags,
                        type == QpType.UD);
                if (n > 0)
                    sendWrs.set(
                            JAVA_LONG,
                            (n - 1) * SWR + S_NEXT,
                            sendWrsAddr + n * SWR); // the previous one is not the last
                n++;
                index++;
                wr = wr.next;
            }
            postSendAt(sendWrsAddr, n, batchStart);
        }
    }

    @Override
    public PreparedSend prepareSend(SendWorkRequest first) {
        if (first == null)
            throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, "the work request is null");
        int n = 0, sges = 0;
        for (SendWorkRequest w = first; w != null; w = w.next) {
            n++;
            sges += w.numSge();
        }
        if (n > sendBatch)
            throw new PostException(
                    "ibv_post_send",
                    VerbsException.EINVAL,
                    sendBatch,
                    "a prepared chain is at most " + sendBatch + " requests (min(max_send_wr, " + MAX_BATCH
                            + ")): prepare shorter chains");
        if (!sendGate.enter()) throw new ClosedException("ibv_post_send", what());
        try {
            checkOpen("ibv_post_send");
            NativePreparedSend p = new NativePreparedSend(this, n, SWR * n + SGE * sges, first.wrId);
            long b = p.wrs, sgBase = p.wrs + SWR * n;
            int index = 0;
            for (SendWorkRequest w = first; w != null; w = w.next, index++) {
                int flags = w.flagBits();
                String problem = w.opcode == WrOpcode.BIND_MW
                        ? "a BIND_MW request cannot be prepared (each bind takes a new rkey): post it with postSend"
                        : validateSendFully(w, flags);
                if (problem != null) throw new PostException("ibv_post_send", VerbsException.EINVAL, index, problem);
                WorkRequestWriter.writeSend(b, sgBase, w, flags, type == QpType.UD);
                Ibv.NATIVE.set(JAVA_LONG, b + S_SG_LIST, w.numSge() == 0 ? 0L : sgBase);
                if (w.next != null) Ibv.NATIVE.set(JAVA_LONG, b + S_NEXT, b + SWR);
                boolean inline = (flags & INLINE_BIT) != 0;
                for (int k = 0; k < w.numSge(); k++) p.addRegion(regionOf(w.sge(k), inline), inline);
                if (type == QpType.UD) p.addAh((NativeAh) w.ah); // validateSendFully checked it
                b += SWR;
                sgBase += (long) w.numSge() * SGE;
            }
            return p;
        } finally {
            if (nHeld > 0) releaseHeld();
            sendGate.exit();
        }
    }

    /** {@link NativePreparedSend#post}: its checks, its first wr_id, one post_send of its chain. */
    void postPrepared(NativePreparedSend p, long wrId) {
        if (!sendGate.enter()) throw new ClosedException("ibv_post_send", what());
        try {
            checkOpen("ibv_post_send");
            if (!p.regionsUsable())
                throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, p.unusableRegion());
            for (NativeAh ah : p.ahs)
                if (!hold(ah))
                    throw new PostException("ibv_post_send", VerbsException.EINVAL, 0, ah.what() + " is closed");
            Ibv.NATIVE.set(JAVA_LONG, p.wrs + S_WR_ID, wrId);
            postSendAt(p.wrs, p.count, 0);
        } finally {
            if (nHeld > 0) releaseHeld();
            sendGate.exit();
            java.lang.ref.Reference.reachabilityFence(p); // its native copy lives as long as it does
        }
    }

    private void releaseHeld() {
        while (nHeld > 0) {
            NativeResource r = held[--nHeld];
            held[nHeld] = null;
            r.exit();
        }
    }

    /** Keeps a window or region of a BIND_MW request from being freed until its batch is posted; false once closed. */
    private boolean hold(NativeResource r) {
        if (!r.tryEnter()) return false;
        held[nHeld++] = r;
        return true;
    }

    /**
     * Posts the {@code n} requests at {@code wrs} (consecutive {@code ibv_send_wr}s, linked, the last one's next null:
     * the QP's own array or a prepared chain); {@code batchStart} is the first one's index in the caller's chain.
     */
    private void postSendAt(long wrs, int n, int batchStart) {
        int rc;
        try {
            rc = (int) Ibv.Fn.OPS_POST_SEND.invokeExact(fnPostSend, qpAddr, wrs, badWrAddr);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            if (nHeld > 0) releaseHeld();
        }
        if (rc != 0) {
            long bad = badWr.get(JAVA_LONG, 0);
            int bi = bad >= wrs && bad < wrs + n * SWR ? (int) ((bad - wrs) / SWR) : 0;
            int e = Math.abs(rc);
            throw new PostException("ibv_post_send", e, batchStart + bi, postHint(e, true));
        }
    }

    private String postHint(int e, boolean send) {
        return switch (e) {
            case VerbsException.ENOMEM ->
                "the " + (send ? "send" : "receive") + " queue is full (max_" + (send ? "send" : "recv") + "_wr "
                        + (send ? cap.maxSendWr() : cap.maxRecvWr())
                        + "): poll completions before posting more, or create the QP with a deeper queue";
            case VerbsException.EINVAL ->
                "the provider refused the work request: check the QP state (" + (send ? "RTS" : "INIT or later")
                        + " is needed), the opcode for a " + type + " QP, num_sge and the inline size";
            default -> "the provider refused the work request";
        };
    }

    /** Null when the request may be posted; else what is wrong. Allocates only when something is wrong. */
    private String validateSend(SendWorkRequest wr, int flags) {
        WrOpcode op = wr.opcode;
        int ns = wr.numSge();
        // the common case, small enough to inline: RC, no inline data, no window, every SGE in the region used last
        if (type == QpType.RC
                && op != null
                && op != WrOpcode.BIND_MW
                && (flags & INLINE_BIT) == 0
                && ns <= maxSendSge
                && inLastRegion(wr, ns, lastSendMr)) return null;
        return validateSendFully(wr, flags);
    }

    /** True when every SGE names {@code m} by its lkey and {@code m} is open with a live segment (what checkSge would accept). */
    private static boolean inLastRegion(SendWorkRequest wr, int ns, NativeMr m) {
        if (m == null) return false;
        for (int k = 0; k < ns; k++) if (wr.sge(k).lkey != m.lkey) return false;
        return !m.isClosed() && m.segmentAlive();
    }

    private String validateSendFully(SendWorkRequest wr, int flags) {
        int ns = wr.numSge();
        if (ns > maxSendSge) return "num_sge " + ns + " exceeds the QP's max_send_sge " + maxSendSge;
        WrOpcode op = wr.opcode;
        if (op == null) return "opcode is null";
        if (type != QpType.RC) {
            if (type == QpType.UD && op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM)
                return "a UD QP only sends SEND and SEND_WITH_IMM";
            if (type == QpType.UD) {
                if (!(wr.ah instanceof NativeAh ah) || ah.pd != pd)
                    return "a UD send needs an address handle of this QP's PD (SendWorkRequest.ud)";
                if (!hold(ah)) return "the address handle is closed";
                long total = wr.totalLength();
                if (total > udMtu)
                    return "a UD message of " + total + " bytes is larger than the port's MTU " + udMtu
                            + ": a datagram is one packet";
            }
            if (type == QpType.UC && (op == WrOpcode.RDMA_READ || op.isAtomic() || op == WrOpcode.BIND_MW))
                return op + " is not allowed on a UC QP (RC only)";
        }
        boolean inline = (flags & INLINE_BIT) != 0;
        if (inline) {
            long total = wr.totalLength();
            if (total > maxInline)
                return "inline data of " + total + " bytes exceeds the QP's max_inline_data " + maxInline
                        + " (create the QP with maxInlineData(" + total + ") or send without INLINE)";
        }
        for (int k = 0; k < ns; k++) {
            Sge g = wr.sge(k);
            String p = checkSge(g, inline, true);
            if (p != null) return "SGE " + k + ": " + p;
        }
        if (op == WrOpcode.BIND_MW) {
            if (!(wr.bindMw instanceof NativeMw mw) || mw.pd != pd)
                return "BIND_MW needs a memory window of this QP's PD";
            if (!hold(mw)) return "the memory window is closed";
            if (mw.type() != MwType.TYPE_2)
                return "a type 1 window is bound with bindMemoryWindow, not with a BIND_MW work request";
            if (wr.bindMr != null) {
                if (!(wr.bindMr instanceof NativeMr mr) || mr.pd != pd)
                    return "BIND_MW needs a memory region of this QP's PD";
                if (!hold(mr)) return "the memory region is closed";
                if (!mr.access().contains(Access.MW_BIND))
                    return "the memory region was registered without Access.MW_BIND";
                if (!mr.covers(wr.bindAddr, wr.bindLength)) return "the bound range lies outside the memory region";
            }
        }
        return null;
    }

    /** The region an SGE uses: the one its lkey names, or for inline data the one that holds it (checkSge found it). */
    private NativeMr regionOf(Sge g, boolean inline) {
        NativeMr byKey = pd.mrByLkey(g.lkey);
        long len = Integer.toUnsignedLong(g.length);
        if (!inline || len == 0 || (byKey != null && byKey.covers(g.addr, len))) return byKey;
        for (NativeMr m : pd.mrs()) if (m.covers(g.addr, len)) return m;
        return null;
    }

    /**
     * The checks that keep the JVM safe: an SGE naming a region of this PD whose segment's arena was closed is refused,
     * and inline data (which the CPU copies at post time) must lie in a live registered region of this PD.
     */
    private String checkSge(Sge g, boolean inline, boolean send) {
        long len = Integer.toUnsignedLong(g.length);
        NativeMr byKey = pd.mrByLkey(g.lkey);
        if (byKey != null && !byKey.segmentAlive())
            return "its memory region's segment is no longer alive (its arena was closed)";
        if (byKey != null) {
            if (send) lastSendMr = byKey;
            else lastRecvMr = byKey;
        }
        if (!inline || len == 0) return null;
        if (byKey != null && byKey.covers(g.addr, len)) return null;
        for (NativeMr m : pd.mrs()) {
            if (m.covers(g.addr, len))
                return m.segmentAlive()
                        ? null
                        : "its memory region's segment is no longer alive (its arena was closed)";
        }
        return "inline data at 0x" + Long.toHexString(g.addr) + " (" + len
                + " bytes) is not inside a live memory region of this PD: "
                + "jrdma only copies inline data from registered memory it can check";
    }

    @Override
    public void postRecv(RecvWorkRequest first) {
        if (first == null)
            throw new PostException("ibv_post_recv", VerbsException.EINVAL, 0, "the work request is null");
        if (srq != null)
            throw new PostException(
                    "ibv_post_recv",
                    VerbsException.EINVAL,
                    0,
                    what() + " takes its receives from a shared receive queue: post them there");
        if (!recvGate.enter()) throw new ClosedException("ibv_post_recv", what());
        try {
            checkOpen("ibv_post_recv");
            RecvWorkRequest wr = first;
            int index = 0;
            while (wr != null) {
                int batchStart = index, n = 0;
                while (wr != null && n < recvBatch) {
                    String problem = validateRecv(wr);
                    if (problem != null) {
                        if (n > 0) postRecvBatch(n, batchStart);
                        throw new PostException("ibv_post_recv", VerbsException.EINVAL, index, problem);
                    }
                    writeRecv(n, wr);
                    if (n > 0)
                        recvWrs.set(
                                JAVA_LONG,
                                (n - 1) * RWR + R_NEXT,
                                recvWrsAddr + n * RWR); // the previous one is not the last
                    n++;
                    index++;
                    wr = wr.next;
                }
                postRecvBatch(n, batchStart);
            }
        } finally {
            recvGate.exit();
        }
    }

    private String validateRecv(RecvWorkRequest wr) {
        int ns = wr.numSge();
        if (ns > maxRecvSge) return "num_sge " + ns + " exceeds the QP's max_recv_sge " + maxRecvSge;
        for (int k = 0; k < ns; k++) {
            Sge g = wr.sge(k);
            NativeMr m = lastRecvMr;
            if (m != null && m.lkey == g.lkey && !m.isClosed() && m.segmentAlive()) continue; // the common case
            String p = checkSge(g, false, false);
            if (p != null) return "SGE " + k + ": " + p;
        }
        return null;
    }

    /** Writes request {@code wr} into slot {@code i} as the last of its batch (next = null; a chain links it after). */
    private void writeRecv(int i, RecvWorkRequest wr) {
        WorkRequestWriter.writeRecv(recvWrsAddr + i * RWR, recvSgesAddr + (long) i * recvSgeStride * SGE, wr);
    }

    /** Posts the first {@code n} requests of the array, linked and the last one's next null (writeRecv). */
    private void postRecvBatch(int n, int batchStart) {
        int rc;
        try {
            rc = (int) Ibv.Fn.OPS_POST_RECV.invokeExact(fnPostRecv, qpAddr, recvWrsAddr, badWrAddr);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (rc != 0) {
            long bad = badWr.get(JAVA_LONG, 0);
            int bi = bad >= recvWrsAddr && bad < recvWrsAddr + n * RWR ? (int) ((bad - recvWrsAddr) / RWR) : 0;
            int e = Math.abs(rc);
            throw new PostException("ibv_post_recv", e, batchStart + bi, postHint(e, false));
        }
    }

    // ---------------------------------------------------------------- memory windows type 1
    @Override
    public int bindMemoryWindow(
            MemoryWindow window,
            long wrId,
            boolean signaled,
            MemoryRegion region,
            long addr,
            long length,
            Set<Access> access) {
        checkOpen("ibv_bind_mw");
        if (!(window instanceof NativeMw mw))
            throw new VerbsException(
                    "ibv_bind_mw", VerbsException.EINVAL, "not a memory window of the native provider");
        NativeMr mr = mw.checkType1Bind(region, addr, length);
        MemorySegment fn = pd.context.opsBindMw;
        if (fn.equals(MemorySegment.NULL)) throw Errors.unsupported("ibv_bind_mw", "binding memory windows");
        int rc;
        int errno;
        int rkey = 0;
        // the region first, then the window: a closing region closes its windows before it takes its own lock
        if (mr != null) mr.enter("ibv_bind_mw");
        try {
            mw.enter("ibv_bind_mw");
            try {
                if (!sendGate.enter()) throw new ClosedException("ibv_bind_mw", what());
                try {
                    checkOpen("ibv_bind_mw");
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment st = Ibv.callState(a);
                        MemorySegment b = a.allocate(Layouts.MW_BIND);
                        GroupLayout L = Layouts.MW_BIND;
                        b.set(JAVA_LONG, offset(L, "wr_id"), wrId);
                        b.set(JAVA_INT, offset(L, "send_flags"), signaled ? SendFlag.SIGNALED.bit : 0);
                        b.set(ADDRESS, offset(L, "bind_info.mr"), mr == null ? MemorySegment.NULL : mr.mr);
                        b.set(JAVA_LONG, offset(L, "bind_info.addr"), addr);
                        b.set(JAVA_LONG, offset(L, "bind_info.length"), length);
                        b.set(JAVA_INT, offset(L, "bind_info.mw_access_flags"), Access.toBits(access));
                        rc = (int) Ibv.Fn.OPS_BIND_MW.invokeExact(fn, st, qp, mw.mw, b);
                        errno = rc == 0 ? 0 : Errors.errno(rc, st);
                    } catch (Throwable t) {
                        throw Ibv.rethrow(t);
                    }
                } finally {
                    sendGate.exit();
                }
                if (rc == 0) {
                    mw.boundMr = mr;
                    rkey = mw.nativeRkey();
                }
            } finally {
                mw.exit();
            }
        } finally {
            if (mr != null) mr.exit();
        }
        if (rc != 0) {
            throw Errors.verb(
                    "ibv_bind_mw",
                    errno,
                    errno == VerbsException.EOPNOTSUPP || errno == VerbsException.ENOSYS
                            ? "type 1 memory windows are not supported by this device"
                            : "check the QP is in RTS, the MR has MW_BIND and covers the range, and the access rights are within the MR's");
        }
        return rkey;
    }

    @Override
    protected void free() {
        sendCq.users.remove(this);
        recvCq.users.remove(this);
        if (srq != null) srq.users.remove(this);
        asyncEvents.close(pd.context);
        pd.context.qps.remove(qp.address());
        // wait for the posts in flight; every later one is refused
        sendGate.shut();
        recvGate.shut();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Fn.DESTROY_QP.invokeExact(st, qp);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_destroy_qp", Errors.errno(rc, st), "the QP may be attached to a multicast group");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return what() + " (" + type + ")";
    }
}
