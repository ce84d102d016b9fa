package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.AtomicAckEth;
import dev.jrdma.soft.wire.AtomicEth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.ImmDt;
import dev.jrdma.soft.wire.Ieth;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.Reth;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PostException;
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
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import dev.jrdma.verbs.spi.Resource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Set;

/**
 * An RC queue pair of the software device: requester, completer and responder of the IBA RC transport in one
 * object, all state guarded by the QP's monitor. The posting thread transmits directly; the device's receive
 * thread runs the responder and the completer (ACKs, READ responses, atomic ACKs); the timer thread runs
 * retransmission and RNR waits. Work requests are copied into preallocated slots of two rings; packets are
 * built in one preallocated direct buffer per QP.
 */
final class SoftQp extends Resource implements QueuePair {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int ST_POSTED = 0, ST_STARTED = 1, ST_DONE = 2;
    private static final int CUR_NONE = 0, CUR_SEND = 1, CUR_WRITE = 2;
    private static final long MIN_TIMEOUT_NANOS = 2_000_000;
    private static final int PKEY = Bth.DEFAULT_PKEY;

    /** A send work request, copied at post time. */
    static final class SendWqe {
        long wrId;
        WrOpcode op;
        boolean signaled, fence, solicited, readOrAtomic, local;
        int numSge;
        final long[] addr, len;
        final SoftMr[] mr;
        long total;
        WcStatus localErr;
        long remoteAddr, compareAdd, swap;
        int rkey, imm, invRkey;
        SoftMw bindMw;
        SoftMr bindMr;
        int bindRkey, bindAccess;
        long bindAddr, bindLen;
        boolean inline;
        MemorySegment inlineData;
        // progress
        int state, firstPsn, lastPsn, npkts, nextPkt, readRecv;

        SendWqe(int maxSge) {
            addr = new long[maxSge];
            len = new long[maxSge];
            mr = new SoftMr[maxSge];
        }
    }

    /** A receive work request, copied at post time. */
    static final class RecvWqe {
        long wrId;
        int numSge;
        final long[] addr, len;
        final SoftMr[] mr;
        long total;
        WcStatus localErr;

        RecvWqe(int maxSge) {
            addr = new long[maxSge];
            len = new long[maxSge];
            mr = new SoftMr[maxSge];
        }
    }

    /** A responder resource: an executed READ or atomic, kept to answer duplicates. */
    static final class Res {
        boolean valid, atomic;
        int firstPsn, npkts;
        SoftMr mr;
        long off, length, orig;
    }

    private final SoftPd pd;
    private final Transport tr;
    private final SoftCq scq, rcq;
    private final QpCap cap;
    private final boolean sigAll;
    private final int qpn;
    private volatile QpState state = QpState.RESET;

    // attributes
    private int accessBits;
    private Set<Access> accessSet = Set.of();
    private Mtu pathMtu = Mtu.MTU_1024;
    private int mtu = 1024;
    private AhAttr ah;
    private int destQpn, rqPsnAttr, sqPsnAttr, timeoutAttr, retryCntAttr, rnrRetryAttr, minRnrTimer;
    private int maxRdAtomic = 1, maxDestRdAtomic = 1;
    private long timeoutNanos;
    private InetSocketAddress remote;
    private int remoteIp;
    private int window = 256, ackEvery = 64;

    // transmit buffer (used under the monitor only)
    private final ByteBuffer tx = ByteBuffer.allocateDirect(8192);
    private final MemorySegment txSeg = MemorySegment.ofBuffer(tx);
    private final Icrc icrc = new Icrc();

    // send queue: indices grow without bound, slot = index & mask
    private final SendWqe[] sq;
    private final int sqMask;
    private int sqHead, sqSend, sqTail;
    private int sqPsn, sndUna, rdAtomicOut, retryLeft, rnrLeft, rnrPsn;
    private boolean rnrWait;
    /**
     * A READ/atomic re-request (after a response gap or an implicit NAK) from {@link #readRetryPsn} is under way:
     * further gaps are ignored until the response at that PSN arrives (on a FIFO path every stale packet of the old
     * burst comes before it), the WQE completes, or the timer retries. Without this, stale packets of the old burst
     * would each trigger another replay: a storm.
     */
    private boolean readRetryActive;
    private int readRetryPsn;
    volatile long retryDeadline, rnrDeadline;

    // receive queue
    private final RecvWqe[] rq;
    private final int rqMask;
    private int rqHead, rqTail;

    // responder
    private int ePsn, msn, curOp;
    private long recvOffset;
    private SoftMr wrMr;
    private long wrOff, wrRemain, wrTotal;
    private boolean nakSeqSent, ackQueued;
    private int ackPsn;
    private Res[] res = {new Res()};
    private int resNext;
    private SoftMr resMr;
    private long resOff;

    SoftQp(SoftPd pd, QpInitAttr attr) {
        super(pd, "queue pair");
        this.pd = pd;
        this.tr = pd.transport();
        try {
            validate(attr);
        } catch (RuntimeException e) {
            close(); // a half-made QP must not stay among the PD's children
            throw e;
        }
        scq = (SoftCq) attr.sendCq();
        rcq = (SoftCq) attr.recvCq();
        QpCap c = attr.cap();
        int ns = pow2(Math.max(1, c.maxSendWr())), nr = pow2(Math.max(1, c.maxRecvWr()));
        int sges = Math.max(1, c.maxSendSge()), rsges = Math.max(1, c.maxRecvSge());
        cap = new QpCap(ns, nr, sges, rsges, c.maxInlineData());
        sigAll = attr.sqSigAll();
        sq = new SendWqe[ns];
        for (int i = 0; i < ns; i++) sq[i] = new SendWqe(sges);
        sqMask = ns - 1;
        rq = new RecvWqe[nr];
        for (int i = 0; i < nr; i++) rq[i] = new RecvWqe(rsges);
        rqMask = nr - 1;
        qpn = tr.addQp(this);
        SoftTimer.register(this);
    }

    private void validate(QpInitAttr attr) {
        if (!(attr.sendCq() instanceof SoftCq s) || !(attr.recvCq() instanceof SoftCq r))
            throw new VerbsException("ibv_create_qp", VerbsException.EINVAL, "the completion queues are not soft device CQs");
        if (s.context() != pd.context() || r.context() != pd.context())
            throw new VerbsException("ibv_create_qp", VerbsException.EINVAL, "the completion queues belong to another context than the PD");
        s.checkOpen("ibv_create_qp");
        r.checkOpen("ibv_create_qp");
        QpCap c = attr.cap();
        if (c.maxSendWr() > SoftContext.MAX_QP_WR || c.maxRecvWr() > SoftContext.MAX_QP_WR)
            throw new VerbsException("ibv_create_qp", VerbsException.EINVAL, "max_send_wr/max_recv_wr above the soft device's " + SoftContext.MAX_QP_WR);
        if (c.maxSendSge() > SoftContext.MAX_SGE || c.maxRecvSge() > SoftContext.MAX_SGE)
            throw new VerbsException("ibv_create_qp", VerbsException.EINVAL, "max_send_sge/max_recv_sge above the soft device's " + SoftContext.MAX_SGE);
        if (c.maxInlineData() > SoftContext.MAX_INLINE)
            throw new VerbsException("ibv_create_qp", VerbsException.EINVAL, "max_inline_data above the soft device's " + SoftContext.MAX_INLINE);
    }

    private static int pow2(int n) {
        int p = 1;
        while (p < n) p <<= 1;
        return p;
    }

    @Override public SoftPd pd() { return pd; }
    @Override public QpType type() { return QpType.RC; }
    @Override public int qpNum() { return qpn; }
    @Override public QpState state() { return state; }
    @Override public CompletionQueue sendCq() { return scq; }
    @Override public CompletionQueue recvCq() { return rcq; }
    @Override public QpCap cap() { return cap; }

    // =============================================================================================
    // modify / query
    // =============================================================================================

    @Override
    public void modify(QpAttr a) {
        checkOpen("ibv_modify_qp");
        synchronized (this) {
            QpState next = QpStateMachine.check(QpType.RC, state, a);
            if (a.has(QpAttrMask.PORT)) SoftContext.checkPort("ibv_modify_qp", a.port());
            if (a.has(QpAttrMask.PKEY_INDEX) && a.pkeyIndex() != 0)
                throw new VerbsException("ibv_modify_qp", VerbsException.EINVAL, "the soft device has one P_Key (index 0); got pkey_index " + a.pkeyIndex());
            range(a, QpAttrMask.TIMEOUT, a.timeout(), 31, "timeout");
            range(a, QpAttrMask.RETRY_CNT, a.retryCnt(), 7, "retry_cnt");
            range(a, QpAttrMask.RNR_RETRY, a.rnrRetry(), 7, "rnr_retry");
            range(a, QpAttrMask.MIN_RNR_TIMER, a.minRnrTimer(), 31, "min_rnr_timer");
            range(a, QpAttrMask.MAX_QP_RD_ATOMIC, a.maxRdAtomic(), SoftContext.MAX_RD_ATOMIC, "max_rd_atomic");
            range(a, QpAttrMask.MAX_DEST_RD_ATOMIC, a.maxDestRdAtomic(), SoftContext.MAX_RD_ATOMIC, "max_dest_rd_atomic");
            InetSocketAddress newRemote = null;
            int newRemoteIp = 0;
            if (a.has(QpAttrMask.AV)) {
                AhAttr av = a.ah();
                if (av == null || !av.isGlobal || av.dgid == null || !av.dgid.isIpv4Mapped())
                    throw new VerbsException("ibv_modify_qp", VerbsException.EINVAL,
                            "the soft device routes by GID: set ah.global(peerGid, 0) with the peer's IPv4-mapped GID (::ffff:a.b.c.d)");
                if (av.sgidIndex != 0)
                    throw new VerbsException("ibv_modify_qp", VerbsException.EINVAL, "the soft device has one GID (index 0); got sgid_index " + av.sgidIndex);
                InetAddress ia = av.dgid.toInetAddress();
                newRemoteIp = ia.hashCode();
                newRemote = new InetSocketAddress((Inet4Address) ia, tr.port);
            }
            if (a.has(QpAttrMask.ACCESS_FLAGS)) {
                accessSet = Set.copyOf(a.access());
                accessBits = Access.toBits(a.access());
            }
            if (a.has(QpAttrMask.AV)) {
                ah = a.ah().copy();
                remote = newRemote;
                remoteIp = newRemoteIp;
            }
            if (a.has(QpAttrMask.PATH_MTU)) {
                pathMtu = a.pathMtu().min(Mtu.MTU_4096);
                mtu = pathMtu.bytes;
                window = Math.max(16, (256 << 10) / mtu);
                ackEvery = Math.max(1, window / 4);
            }
            if (a.has(QpAttrMask.DEST_QPN)) destQpn = a.destQpNum();
            if (a.has(QpAttrMask.RQ_PSN)) rqPsnAttr = a.rqPsn();
            if (a.has(QpAttrMask.SQ_PSN)) sqPsnAttr = a.sqPsn();
            if (a.has(QpAttrMask.TIMEOUT)) {
                timeoutAttr = a.timeout();
                timeoutNanos = timeoutAttr == 0 ? 0 : Math.max(MIN_TIMEOUT_NANOS, 4096L << timeoutAttr);
            }
            if (a.has(QpAttrMask.RETRY_CNT)) retryCntAttr = a.retryCnt();
            if (a.has(QpAttrMask.RNR_RETRY)) rnrRetryAttr = a.rnrRetry();
            if (a.has(QpAttrMask.MIN_RNR_TIMER)) minRnrTimer = a.minRnrTimer();
            if (a.has(QpAttrMask.MAX_QP_RD_ATOMIC)) maxRdAtomic = a.maxRdAtomic();
            if (a.has(QpAttrMask.MAX_DEST_RD_ATOMIC)) maxDestRdAtomic = a.maxDestRdAtomic();

            QpState cur = state;
            switch (next) {
                case RESET -> reset();
                case ERR -> toErr();
                case RTR -> {
                    if (cur == QpState.INIT) {
                        ePsn = rqPsnAttr;
                        msn = 0;
                        curOp = CUR_NONE;
                        nakSeqSent = false;
                        res = new Res[Math.max(1, maxDestRdAtomic)];
                        for (int i = 0; i < res.length; i++) res[i] = new Res();
                        resNext = 0;
                    }
                    state = next;
                }
                case RTS -> {
                    if (cur == QpState.RTR) {
                        sqPsn = sndUna = sqPsnAttr;
                        retryLeft = retryCntAttr;
                        rnrLeft = rnrRetryAttr;
                    }
                    state = next;
                    pump();
                }
                default -> state = next;
            }
        }
    }

    private static void range(QpAttr a, QpAttrMask m, int v, int max, String name) {
        if (a.has(m) && (v < 0 || v > max))
            throw new VerbsException("ibv_modify_qp", VerbsException.EINVAL, name + " " + v + " outside 0.." + max);
    }

    @Override
    public QpAttr query() {
        checkOpen("ibv_query_qp");
        synchronized (this) {
            QpAttr a = new QpAttr().state(state).curState(state).access(accessSet).pkeyIndex(0).port(1)
                    .pathMtu(pathMtu).timeout(timeoutAttr).retryCnt(retryCntAttr).rnrRetry(rnrRetryAttr)
                    .rqPsn(rqPsnAttr).sqPsn(sqPsnAttr).maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic)
                    .minRnrTimer(minRnrTimer).destQpNum(destQpn).cap(cap);
            if (ah != null) a.ah(ah.copy());
            return a;
        }
    }

    private void reset() {
        sqHead = sqSend = sqTail = 0;
        rqHead = rqTail = 0;
        rdAtomicOut = 0;
        rnrWait = false;
        retryDeadline = rnrDeadline = 0;
        curOp = CUR_NONE;
        ackQueued = false;
        readRetryActive = false;
        for (Res r : res) r.valid = false;
        state = QpState.RESET;
    }

    /** Moves to ERR and flushes every outstanding send and receive work request. */
    private void toErr() {
        state = QpState.ERR;
        readRetryActive = false;
        retryDeadline = rnrDeadline = 0;
        rnrWait = false;
        curOp = CUR_NONE;
        flushSq();
        flushRq();
    }

    private void flushSq() {
        for (int i = sqHead; i != sqTail; i++) {
            SendWqe w = sq[i & sqMask];
            scq.push(w.wrId, WcStatus.WR_FLUSH_ERR, w.op.completionOpcode(), 0, 0, 0, qpn, 0, false);
        }
        sqHead = sqSend = sqTail;
        rdAtomicOut = 0;
    }

    private void flushRq() {
        for (int i = rqHead; i != rqTail; i++) {
            rcq.push(rq[i & rqMask].wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpn, 0, false);
        }
        rqHead = rqTail;
    }

    // =============================================================================================
    // posting
    // =============================================================================================

    @Override
    public void postSend(SendWorkRequest first) {
        checkOpen("ibv_post_send");
        synchronized (this) {
            try {
                int idx = 0;
                for (SendWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
                    QpState s = state;
                    if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR)
                        throw new PostException("ibv_post_send", VerbsException.EINVAL, idx,
                                "the QP is in " + s + "; sends need RTS (walk it RESET->INIT->RTR->RTS)");
                    if (sqTail - sqHead == sq.length)
                        throw new PostException("ibv_post_send", VerbsException.ENOMEM, idx,
                                "the send queue is full (max_send_wr " + sq.length + "): poll the send CQ before posting more");
                    if (wr.numSge() > cap.maxSendSge())
                        throw new PostException("ibv_post_send", VerbsException.EINVAL, idx,
                                "num_sge " + wr.numSge() + " is above the QP's max_send_sge " + cap.maxSendSge());
                    SendWqe w = sq[sqTail & sqMask];
                    fill(w, wr, idx);
                    sqTail++;
                }
            } finally {
                if (state == QpState.ERR) flushSq(); else pump();
            }
        }
    }

    private void fill(SendWqe w, SendWorkRequest wr, int idx) {
        WrOpcode op = wr.opcode;
        if (op == null) throw new PostException("ibv_post_send", VerbsException.EINVAL, idx, "opcode is null");
        w.wrId = wr.wrId;
        w.op = op;
        w.signaled = sigAll || wr.flags.contains(SendFlag.SIGNALED);
        w.fence = wr.flags.contains(SendFlag.FENCE);
        w.solicited = wr.flags.contains(SendFlag.SOLICITED);
        w.inline = wr.flags.contains(SendFlag.INLINE);
        w.readOrAtomic = op == WrOpcode.RDMA_READ || op.isAtomic();
        w.local = op == WrOpcode.BIND_MW || op == WrOpcode.LOCAL_INV;
        w.localErr = null;
        w.remoteAddr = wr.remoteAddr;
        w.rkey = wr.rkey;
        w.imm = wr.immData;
        w.invRkey = wr.invalidateRkey;
        w.compareAdd = wr.compareAdd;
        w.swap = wr.swap;
        w.state = ST_POSTED;
        w.bindMw = null;
        w.bindMr = null;
        if (op == WrOpcode.BIND_MW) {
            if (!(wr.bindMw instanceof SoftMw mw) || mw.type != MwType.TYPE_2)
                throw new PostException("ibv_post_send", VerbsException.EINVAL, idx,
                        "BIND_MW work requests bind type 2 windows of this device; bind a type 1 window with QueuePair.bindMemoryWindow");
            if (!(wr.bindMr instanceof SoftMr mr))
                throw new PostException("ibv_post_send", VerbsException.EINVAL, idx, "BIND_MW needs bindMr, a memory region of this device");
            w.bindMw = mw;
            w.bindMr = mr;
            // 0 = let the provider pick the next key (ibv_inc_rkey); MemoryWindow.rkey() is the key of the last bind posted
            w.bindRkey = wr.bindRkey == 0 ? mw.nextType1Rkey() : wr.bindRkey;
            mw.rkey = w.bindRkey;
            w.bindAddr = wr.bindAddr;
            w.bindLen = wr.bindLength;
            w.bindAccess = Access.toBits(wr.bindAccess);
            w.numSge = 0;
            w.total = 0;
            return;
        }
        if (op == WrOpcode.LOCAL_INV) {
            w.numSge = 0;
            w.total = 0;
            return;
        }
        int n = wr.numSge();
        w.numSge = n;
        long total = 0;
        boolean needWrite = w.readOrAtomic;
        for (int i = 0; i < n; i++) {
            Sge g = wr.sge(i);
            long l = Integer.toUnsignedLong(g.length);
            w.addr[i] = g.addr;
            w.len[i] = l;
            total += l;
            SoftMr mr = lookupLocal(g.lkey, g.addr, l, needWrite);
            w.mr[i] = mr;
            if (mr == null && l > 0 && !w.inline) w.localErr = WcStatus.LOC_PROT_ERR;
        }
        w.total = total;
        if (total > SoftContext.MAX_MSG && w.localErr == null) w.localErr = WcStatus.LOC_LEN_ERR;
        if (op.isAtomic() && w.localErr == null && total < 8) w.localErr = WcStatus.LOC_LEN_ERR;
        if (w.inline && !w.readOrAtomic) {
            if (total > cap.maxInlineData())
                throw new PostException("ibv_post_send", VerbsException.EINVAL, idx,
                        "INLINE data of " + total + " bytes is above the QP's max_inline_data " + cap.maxInlineData());
            if (w.inlineData == null && cap.maxInlineData() > 0) w.inlineData = MemorySegment.ofArray(new byte[cap.maxInlineData()]);
            long off = 0;
            for (int i = 0; i < n && w.localErr == null; i++) {
                SoftMr mr = w.mr[i];
                if (w.len[i] == 0) continue;
                if (mr == null) mr = findInPd(w.addr[i], w.len[i]);
                if (mr == null) {
                    throw new PostException("ibv_post_send", VerbsException.EINVAL, idx,
                            "INLINE data must lie in memory registered in this protection domain (the soft device cannot read raw addresses)");
                }
                try {
                    MemorySegment.copy(mr.seg, w.addr[i] - mr.addr, w.inlineData, off, w.len[i]);
                } catch (RuntimeException e) {
                    w.localErr = WcStatus.LOC_PROT_ERR;
                }
                off += w.len[i];
            }
        }
    }

    private SoftMr findInPd(long addr, long len) {
        for (int i = 1; i < Transport.TABLE_SIZE; i++) {
            if (tr.keys.get(i) instanceof SoftMr mr && mr.pd == pd && !mr.isClosed() && mr.contains(addr, len)) return mr;
        }
        return null;
    }

    /** The MR a local SGE names, or null when the lkey, PD, bounds or rights are wrong. */
    private SoftMr lookupLocal(int lkey, long addr, long len, boolean needLocalWrite) {
        if (!(tr.keyOwner(lkey) instanceof SoftMr mr)) return null;
        if (mr.key != lkey || mr.pd != pd || mr.isClosed() || !mr.contains(addr, len)) return null;
        if (needLocalWrite && (mr.accessBits & Access.LOCAL_WRITE.bit) == 0) return null;
        return mr;
    }

    @Override
    public void postRecv(RecvWorkRequest first) {
        checkOpen("ibv_post_recv");
        synchronized (this) {
            try {
                int idx = 0;
                for (RecvWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
                    if (state == QpState.RESET)
                        throw new PostException("ibv_post_recv", VerbsException.EINVAL, idx, "the QP is in RESET; move it to INIT first");
                    if (rqTail - rqHead == rq.length)
                        throw new PostException("ibv_post_recv", VerbsException.ENOMEM, idx,
                                "the receive queue is full (max_recv_wr " + rq.length + "): wait for receive completions before posting more");
                    if (wr.numSge() > cap.maxRecvSge())
                        throw new PostException("ibv_post_recv", VerbsException.EINVAL, idx,
                                "num_sge " + wr.numSge() + " is above the QP's max_recv_sge " + cap.maxRecvSge());
                    RecvWqe r = rq[rqTail & rqMask];
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
                        SoftMr mr = lookupLocal(g.lkey, g.addr, l, true);
                        r.mr[i] = mr;
                        if (mr == null && l > 0) r.localErr = WcStatus.LOC_PROT_ERR;
                    }
                    r.total = total;
                    rqTail++;
                }
            } finally {
                if (state == QpState.ERR) flushRq();
            }
        }
    }

    @Override
    public int bindMemoryWindow(MemoryWindow mw, long wrId, boolean signaled, MemoryRegion mr, long addr, long length, Set<Access> access) {
        checkOpen("ibv_bind_mw");
        if (!(mw instanceof SoftMw w1) || w1.type != MwType.TYPE_1)
            throw new VerbsException("ibv_bind_mw", VerbsException.EINVAL, "bindMemoryWindow binds type 1 windows; bind type 2 windows with a BIND_MW work request");
        if (!(mr instanceof SoftMr m))
            throw new VerbsException("ibv_bind_mw", VerbsException.EINVAL, "the memory region is not a region of this device");
        w1.checkOpen("ibv_bind_mw");
        if (w1.pd != pd) throw new VerbsException("ibv_bind_mw", VerbsException.EINVAL, "the window belongs to another protection domain than the QP");
        synchronized (this) {
            if (state != QpState.RTS && state != QpState.ERR)
                throw new VerbsException("ibv_bind_mw", VerbsException.EINVAL, "the QP is in " + state + "; binds are posted on the send queue and need RTS");
            if (sqTail - sqHead == sq.length)
                throw new VerbsException("ibv_bind_mw", VerbsException.ENOMEM, "the send queue is full: poll the send CQ first");
            int newRkey = w1.nextType1Rkey();
            w1.rkey = newRkey;
            SendWqe w = sq[sqTail & sqMask];
            w.wrId = wrId;
            w.op = WrOpcode.BIND_MW;
            w.signaled = signaled || sigAll;
            w.fence = w.solicited = w.inline = w.readOrAtomic = false;
            w.local = true;
            w.localErr = null;
            w.numSge = 0;
            w.total = 0;
            w.bindMw = w1;
            w.bindMr = m;
            w.bindRkey = newRkey;
            w.bindAddr = addr;
            w.bindLen = length;
            w.bindAccess = Access.toBits(access);
            w.state = ST_POSTED;
            sqTail++;
            if (state == QpState.ERR) flushSq(); else pump();
            return newRkey;
        }
    }

    // =============================================================================================
    // requester
    // =============================================================================================

    /** Transmits what the send queue allows now. Called under the monitor. */
    private void pump() {
        if (state != QpState.RTS || rnrWait) return;
        outer:
        while (sqSend != sqTail) {
            SendWqe w = sq[sqSend & sqMask];
            if (w.state == ST_POSTED) {
                if (w.fence && rdAtomicOut > 0) break;
                if (w.localErr != null) {
                    fail(w, w.localErr);
                    return;
                }
                if (w.local) {
                    WcStatus st = w.op == WrOpcode.BIND_MW ? executeBind(w) : invalidate(w.invRkey, false);
                    if (st != WcStatus.SUCCESS) {
                        fail(w, st);
                        return;
                    }
                    w.state = ST_DONE;
                    sqSend++;
                    continue;
                }
                if (w.readOrAtomic) {
                    if (rdAtomicOut >= Math.max(1, maxRdAtomic)) break;
                    rdAtomicOut++;
                }
                w.firstPsn = sqPsn;
                w.npkts = w.op.isAtomic() ? 1 : (int) Math.max(1, (w.total + mtu - 1) / mtu);
                w.lastPsn = Psn.add(w.firstPsn, w.npkts - 1);
                sqPsn = Psn.add(sqPsn, w.npkts);
                w.nextPkt = 0;
                w.readRecv = 0;
                w.state = ST_STARTED;
            }
            if (w.state == ST_STARTED && w.nextPkt < w.npkts) {
                if (w.readOrAtomic) {
                    if (!sendRequest(w, w.nextPkt)) return;
                    w.nextPkt = w.npkts;
                } else {
                    while (w.nextPkt < w.npkts) {
                        if (Psn.diff(Psn.add(w.firstPsn, w.nextPkt), sndUna) >= window) break outer;
                        if (!sendRequest(w, w.nextPkt)) return;
                        w.nextPkt++;
                    }
                }
            }
            sqSend++;
        }
        completeHead();
    }

    /** Builds and sends packet {@code k} of a request. False when the WQE failed locally (it is completed). */
    private boolean sendRequest(SendWqe w, int k) {
        ByteBuffer b = tx;
        int psn = Psn.add(w.firstPsn, k);
        int len;
        if (w.op == WrOpcode.RDMA_READ) {
            long off = (long) k * mtu;
            len = RocePacket.writeBth(b, 0, RDMA_READ_REQUEST.code(), false, PKEY, destQpn, true, psn, 0);
            Reth.write(b, Bth.BYTES, w.remoteAddr + off, w.rkey, w.total - off);
        } else if (w.op.isAtomic()) {
            boolean cas = w.op == WrOpcode.ATOMIC_CMP_AND_SWP;
            len = RocePacket.writeBth(b, 0, cas ? COMPARE_SWAP.code() : FETCH_ADD.code(), false, PKEY, destQpn, true, psn, 0);
            AtomicEth.write(b, Bth.BYTES, w.remoteAddr, w.rkey, cas ? w.swap : w.compareAdd, cas ? w.compareAdd : 0);
        } else {
            long off = (long) k * mtu;
            int plen = (int) Math.min(mtu, w.total - off);
            boolean first = k == 0, last = k == w.npkts - 1;
            int opc = switch (w.op) {
                case SEND -> first && last ? SEND_ONLY.code() : first ? SEND_FIRST.code() : last ? SEND_LAST.code() : SEND_MIDDLE.code();
                case SEND_WITH_IMM -> first && last ? SEND_ONLY_WITH_IMMEDIATE.code() : first ? SEND_FIRST.code()
                        : last ? SEND_LAST_WITH_IMMEDIATE.code() : SEND_MIDDLE.code();
                case SEND_WITH_INV -> first && last ? SEND_ONLY_WITH_INVALIDATE.code() : first ? SEND_FIRST.code()
                        : last ? SEND_LAST_WITH_INVALIDATE.code() : SEND_MIDDLE.code();
                case RDMA_WRITE -> first && last ? RDMA_WRITE_ONLY.code() : first ? RDMA_WRITE_FIRST.code()
                        : last ? RDMA_WRITE_LAST.code() : RDMA_WRITE_MIDDLE.code();
                case RDMA_WRITE_WITH_IMM -> first && last ? RDMA_WRITE_ONLY_WITH_IMMEDIATE.code() : first ? RDMA_WRITE_FIRST.code()
                        : last ? RDMA_WRITE_LAST_WITH_IMMEDIATE.code() : RDMA_WRITE_MIDDLE.code();
                default -> -1;
            };
            boolean ackReq = last || (k + 1) % ackEvery == 0;
            len = RocePacket.writeBth(b, 0, opc, w.solicited && last, PKEY, destQpn, ackReq, psn, plen);
            int fl = flags(opc);
            if ((fl & RETH) != 0) Reth.write(b, Bth.BYTES, w.remoteAddr, w.rkey, w.total);
            if ((fl & IMMDT) != 0) ImmDt.write(b, immOffset(opc), w.imm);
            if ((fl & IETH) != 0) Ieth.write(b, immOffset(opc), w.invRkey);
            if (plen > 0 && !gather(w, off, plen, headerLength(opc))) {
                fail(w, WcStatus.LOC_PROT_ERR);
                return false;
            }
        }
        icrc.generate(b, 0, len, tr.ip, remoteIp, tr.port, tr.port);
        tr.send(b, len, remote);
        if (retryDeadline == 0 && timeoutNanos > 0) {
            retryDeadline = System.nanoTime() + timeoutNanos;
            SoftTimer.wake();
        }
        return true;
    }

    /** Copies {@code len} bytes of the message at {@code msgOff} into the transmit buffer at {@code dst}. */
    private boolean gather(SendWqe w, long msgOff, int len, int dst) {
        try {
            if (w.inline) {
                MemorySegment.copy(w.inlineData, msgOff, txSeg, dst, len);
                return true;
            }
            long skip = msgOff;
            for (int i = 0; i < w.numSge && len > 0; i++) {
                long l = w.len[i];
                if (skip >= l) {
                    skip -= l;
                    continue;
                }
                SoftMr mr = w.mr[i];
                if (mr.isClosed()) return false;
                long chunk = Math.min(l - skip, len);
                MemorySegment.copy(mr.seg, w.addr[i] - mr.addr + skip, txSeg, dst, chunk);
                dst += (int) chunk;
                len -= (int) chunk;
                skip = 0;
            }
            return len == 0;
        } catch (RuntimeException e) { // arena closed, bounds
            return false;
        }
    }

    /** Scatters {@code len} bytes from {@code src} into SGEs at message offset {@code msgOff}. */
    private static boolean scatter(MemorySegment src, long srcOff, long len, int n, long[] addr, long[] lens, SoftMr[] mrs, long msgOff) {
        try {
            long skip = msgOff;
            for (int i = 0; i < n && len > 0; i++) {
                long l = lens[i];
                if (skip >= l) {
                    skip -= l;
                    continue;
                }
                SoftMr mr = mrs[i];
                if (mr.isClosed()) return false;
                long chunk = Math.min(l - skip, len);
                MemorySegment.copy(src, srcOff, mr.seg, addr[i] - mr.addr + skip, chunk);
                srcOff += chunk;
                len -= chunk;
                skip = 0;
            }
            return len == 0;
        } catch (RuntimeException e) {
            return false;
        }
    }

    private WcStatus executeBind(SendWqe w) {
        SoftMw mw = w.bindMw;
        SoftMr mr = w.bindMr;
        if (mw.isClosed() || mw.pd != pd) return WcStatus.MW_BIND_ERR;
        boolean type1 = mw.type == MwType.TYPE_1;
        if (!type1) {
            if (mw.binding != null) return WcStatus.MW_BIND_ERR;       // a type 2 window must be invalidated first
            if ((w.bindRkey >>> 8) != mw.keyIndex) return WcStatus.MW_BIND_ERR;
        }
        if (type1 && w.bindLen == 0) {
            mw.binding = null;
            return WcStatus.SUCCESS;
        }
        if (mr.isClosed() || mr.pd != pd || (mr.accessBits & Access.MW_BIND.bit) == 0 || !mr.contains(w.bindAddr, w.bindLen))
            return WcStatus.MW_BIND_ERR;
        int acc = w.bindAccess & (Access.REMOTE_READ.bit | Access.REMOTE_WRITE.bit | Access.REMOTE_ATOMIC.bit);
        if ((acc & (Access.REMOTE_WRITE.bit | Access.REMOTE_ATOMIC.bit)) != 0 && (mr.accessBits & Access.LOCAL_WRITE.bit) == 0)
            return WcStatus.MW_BIND_ERR;
        mw.binding = new SoftMw.Binding(w.bindRkey, mr, w.bindAddr, w.bindLen, acc, type1 ? null : this);
        mw.rkey = w.bindRkey;
        return WcStatus.SUCCESS;
    }

    /** Invalidates a type 2 window's rkey (LOCAL_INV, or a peer's SEND_WITH_INV when {@code remote}). */
    private WcStatus invalidate(int rkey, boolean remote) {
        if (tr.keyOwner(rkey) instanceof SoftMw mw && mw.type == MwType.TYPE_2 && mw.pd == pd && !mw.isClosed()) {
            SoftMw.Binding b = mw.binding;
            if (b != null && b.rkey() == rkey && (!remote || b.qp() == this)) {
                mw.binding = null;
                return WcStatus.SUCCESS;
            }
        }
        return WcStatus.MW_BIND_ERR;
    }

    /** Completes, in order, the WQEs at the head of the send queue that are done. */
    private void completeHead() {
        while (sqHead != sqSend) {
            SendWqe w = sq[sqHead & sqMask];
            if (w.state != ST_DONE) break;
            if (w.signaled) {
                int bl = w.local ? 0 : w.op.isAtomic() ? 8 : (int) w.total;
                scq.push(w.wrId, WcStatus.SUCCESS, w.op.completionOpcode(), bl, 0, 0, qpn, 0, false);
            }
            sqHead++;
        }
    }

    /** Completes {@code w} with an error and moves the QP to ERR (flushing everything else). */
    private void fail(SendWqe w, WcStatus status) {
        completeHead();
        for (int i = sqHead; i != sqTail; i++) {
            SendWqe x = sq[i & sqMask];
            if (x == w) {
                scq.push(x.wrId, status, x.op.completionOpcode(), 0, 0, 0, qpn, 0, false);
                sqHead = i + 1;
                break;
            }
        }
        toErr();
    }

    /** The first WQE, from the head, that is not done and not a local operation; null when none. */
    private SendWqe firstPending() {
        int end = sqSend != sqTail ? sqSend + 1 : sqSend;
        for (int i = sqHead; i != end; i++) {
            SendWqe w = sq[i & sqMask];
            if (w.state == ST_STARTED) return w;
            if (w.state == ST_POSTED) return null;
        }
        return null;
    }

    /** Marks done every SEND/WRITE whose last PSN is at or before {@code psn}; returns false on an implicit NAK. */
    private boolean ackUpTo(int psn) {
        int end = sqSend != sqTail ? sqSend + 1 : sqSend;
        for (int i = sqHead; i != end; i++) {
            SendWqe w = sq[i & sqMask];
            if (w.state == ST_DONE) continue;
            if (w.state == ST_POSTED) break;
            if (Psn.diff(w.lastPsn, psn) > 0) break;
            if (w.readOrAtomic) {
                // the peer acknowledged a later request, but this READ/atomic's response is missing: resend it
                if (!readRetryActive) {
                    readRetryActive = true;
                    readRetryPsn = Psn.add(w.firstPsn, w.readRecv);
                    goBack(readRetryPsn);
                    pump();
                }
                return false;
            }
            w.state = ST_DONE; // the peer has every packet of it (even if a go-back queued some again)
        }
        return true;
    }

    private void progress(int psn) {
        int next = Psn.next(psn);
        if (Psn.after(next, sndUna)) {
            sndUna = next;
            retryLeft = retryCntAttr;
            rnrLeft = rnrRetryAttr;
            retryDeadline = sndUna != sqPsn && timeoutNanos > 0 ? System.nanoTime() + timeoutNanos : 0;
        }
    }

    /** Go-back-N: resend from {@code psn} (the WQE holding it and everything after it). */
    private void goBack(int psn) {
        int end = sqSend != sqTail ? sqSend + 1 : sqSend;
        int start = -1;
        for (int i = sqHead; i != end; i++) {
            SendWqe w = sq[i & sqMask];
            if (w.state == ST_POSTED) break;
            if (w.state == ST_DONE || w.local) continue;
            if (Psn.diff(w.lastPsn, psn) >= 0) {
                start = i;
                break;
            }
        }
        if (start < 0) return;
        tr.retransmits.getAndIncrement();
        for (int i = start; i != end; i++) {
            SendWqe w = sq[i & sqMask];
            if (w.state == ST_POSTED) break;
            if (w.state == ST_DONE || w.local) continue;
            if (w.op == WrOpcode.RDMA_READ) w.nextPkt = w.readRecv;
            else if (w.op.isAtomic()) w.nextPkt = 0;
            else w.nextPkt = i == start ? Math.max(0, Psn.diff(psn, w.firstPsn)) : 0;
        }
        sqSend = start;
        if (timeoutNanos > 0) retryDeadline = System.nanoTime() + timeoutNanos;
    }

    /** Retransmission timeout or end of an RNR wait (timer thread). */
    void onTimer(long now) {
        synchronized (this) {
            if (isClosed() || (state != QpState.RTS && state != QpState.SQD)) {
                retryDeadline = rnrDeadline = 0;
                return;
            }
            long rd = rnrDeadline;
            if (rd != 0 && now - rd >= 0) {
                rnrDeadline = 0;
                rnrWait = false;
                goBack(rnrPsn);
                pump();
                return;
            }
            long d = retryDeadline;
            if (d != 0 && now - d >= 0) {
                if (sndUna == sqPsn) {
                    retryDeadline = 0;
                    return;
                }
                SendWqe w = firstPending();
                if (w == null) {
                    retryDeadline = 0;
                    return;
                }
                if (retryLeft == 0) {
                    fail(w, WcStatus.RETRY_EXC_ERR);
                    return;
                }
                retryLeft--;
                readRetryActive = false;
                goBack(sndUna);
                pump();
            }
        }
    }

    /** ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE and READ responses (receive thread, under the monitor). */
    private void completer(RocePacket p, MemorySegment seg) {
        int psn = p.psn();
        if (Psn.diff(psn, sqPsn) >= 0) return;         // beyond anything sent
        int op = p.opcode();
        if (op == ACKNOWLEDGE.code()) {
            int syn = p.aethSyndrome();
            switch (Aeth.type(syn)) {
                case Aeth.TYPE_ACK -> {
                    if (Psn.before(psn, Psn.add(sndUna, -1))) return;   // stale
                    if (ackUpTo(psn)) progress(psn);
                }
                case Aeth.TYPE_RNR_NAK -> {
                    int prev = Psn.add(psn, -1);
                    if (ackUpTo(prev)) progress(prev);
                    SendWqe w = firstPending();
                    if (w == null || state != QpState.RTS) return;
                    if (rnrRetryAttr != 7) {
                        if (rnrLeft == 0) {
                            fail(w, WcStatus.RNR_RETRY_EXC_ERR);
                            return;
                        }
                        rnrLeft--;
                    }
                    rnrWait = true;
                    rnrPsn = psn;
                    retryDeadline = 0;
                    rnrDeadline = System.nanoTime() + Aeth.rnrTimerMicros(Aeth.value(syn)) * 1000L;
                    SoftTimer.wake();
                    return;
                }
                case Aeth.TYPE_NAK -> {
                    int prev = Psn.add(psn, -1);
                    if (ackUpTo(prev)) progress(prev);
                    if (state != QpState.RTS) return;
                    int code = Aeth.value(syn);
                    if (code == Aeth.NAK_PSN_SEQUENCE_ERROR) {
                        if (rnrWait) return; // the RNR wait resends from the NAKed PSN anyway
                        if (retryLeft == 0) {
                            SendWqe w = firstPending();
                            if (w != null) fail(w, WcStatus.RETRY_EXC_ERR);
                            return;
                        }
                        retryLeft--;
                        goBack(psn);
                    } else {
                        SendWqe w = firstPending();
                        if (w == null) return;
                        fail(w, switch (code) {
                            case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
                            case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                            case Aeth.NAK_INVALID_RD_REQUEST -> WcStatus.REM_INV_RD_REQ_ERR;
                            default -> WcStatus.REM_OP_ERR;
                        });
                        return;
                    }
                }
                default -> { return; }
            }
        } else if (op == ATOMIC_ACKNOWLEDGE.code()) {
            SendWqe w = firstPending();
            if (w == null || !w.op.isAtomic() || w.firstPsn != psn) {
                // responses to earlier requests are implied; find the atomic further on
                if (!ackUpTo(Psn.add(psn, -1))) return;
                w = firstPending();
                if (w == null || !w.op.isAtomic() || w.firstPsn != psn) return;
            }
            long orig = p.atomicAckOriginal();
            SoftMr mr = w.mr[0];
            try {
                if (mr == null || mr.isClosed()) throw new IllegalStateException();
                mr.seg.set(ValueLayout.JAVA_LONG_UNALIGNED, w.addr[0] - mr.addr, orig);
            } catch (RuntimeException e) {
                fail(w, WcStatus.LOC_PROT_ERR);
                return;
            }
            w.state = ST_DONE;
            rdAtomicOut--;
            readRetryActive = false;
            progress(psn);
        } else { // READ response
            if (!ackUpTo(Psn.add(psn, -1))) return;
            SendWqe w = firstPending();
            if (w == null || w.op != WrOpcode.RDMA_READ) return;
            int expected = Psn.add(w.firstPsn, w.readRecv);
            int d = Psn.diff(psn, expected);
            if (d < 0) return;                                   // duplicate
            if (d > 0) {                                         // a response was lost: ask again from it, once
                if (!readRetryActive) {
                    readRetryActive = true;
                    readRetryPsn = expected;
                    goBack(expected);
                    pump();
                }
                return;
            }
            if (readRetryActive && psn == readRetryPsn) readRetryActive = false; // the replay has begun: later gaps are real
            int k = w.readRecv;
            boolean first = k == 0, last = k == w.npkts - 1;
            int want = first && last ? RDMA_READ_RESPONSE_ONLY.code() : first ? RDMA_READ_RESPONSE_FIRST.code()
                    : last ? RDMA_READ_RESPONSE_LAST.code() : RDMA_READ_RESPONSE_MIDDLE.code();
            long off = (long) k * mtu;
            long plen = Math.min(mtu, w.total - off);
            if (op != want || p.payloadLength() != plen) {
                fail(w, WcStatus.BAD_RESP_ERR);
                return;
            }
            if (plen > 0 && !scatter(seg, p.payloadOffset(), plen, w.numSge, w.addr, w.len, w.mr, off)) {
                fail(w, WcStatus.LOC_PROT_ERR);
                return;
            }
            w.readRecv++;
            if (w.readRecv == w.npkts) {
                w.state = ST_DONE;
                rdAtomicOut--;
                readRetryActive = false;
            }
            progress(psn);
        }
        completeHead();
        pump();
    }

    // =============================================================================================
    // responder
    // =============================================================================================

    /** A packet for this QP (receive thread). Returns false when it was dropped. */
    boolean receive(RocePacket p, MemorySegment seg, int srcIp, int srcPort) {
        synchronized (this) {
            QpState s = state;
            if (isClosed() || s == QpState.RESET || s == QpState.INIT || s == QpState.ERR) return false;
            if (srcIp != remoteIp || (p.pkey() & 0x7FFF) != 0x7FFF) return false;
            if (p.has(REQ)) {
                responder(p, seg);
            } else {
                if (s == QpState.RTR) return false;
                completer(p, seg);
            }
            return true;
        }
    }

    private void sendAeth(int opcode, int syndrome, int psn, long orig) {
        ByteBuffer b = tx;
        int len = RocePacket.writeBth(b, 0, opcode, false, PKEY, destQpn, false, psn, 0);
        Aeth.write(b, Bth.BYTES, syndrome, msn);
        if (opcode == ATOMIC_ACKNOWLEDGE.code()) AtomicAckEth.write(b, Bth.BYTES + Aeth.BYTES, orig);
        icrc.generate(b, 0, len, tr.ip, remoteIp, tr.port, tr.port);
        tr.send(b, len, remote);
    }

    private void nak(int code, int psn) {
        sendAeth(ACKNOWLEDGE.code(), Aeth.nakSyndrome(code), psn, 0);
    }

    /** A class C error: NAK it, complete the receive WQE in use (if any) and move to ERR, as rxe does. */
    private void responderError(int nakCode, int psn, RecvWqe r, WcStatus recvStatus) {
        nak(nakCode, psn);
        if (r != null) {
            rcq.push(r.wrId, recvStatus, WcOpcode.RECV, 0, 0, 0, qpn, destQpn, false);
            rqHead++;
        }
        toErr();
    }

    /** Receiver not ready: the requester waits and resends from {@code psn}; later packets of its pipeline are dropped quietly. */
    private void rnrNak(int psn) {
        sendAeth(ACKNOWLEDGE.code(), Aeth.rnrNakSyndrome(minRnrTimer), psn, 0);
        nakSeqSent = true;
    }

    private void ackLater() {
        ackPsn = Psn.add(ePsn, -1);
        if (!ackQueued) {
            ackQueued = true;
            if (tr.onRxThread()) tr.ackLater(this); else flushAck();
        }
    }

    /** Sends the coalesced ACK (receive thread, end of a burst). */
    void flushAck() {
        synchronized (this) {
            if (!ackQueued) return;
            ackQueued = false;
            if (isClosed() || state == QpState.ERR || state == QpState.RESET || state == QpState.INIT) return;
            sendAeth(ACKNOWLEDGE.code(), Aeth.ackSyndrome(Aeth.CREDITS_INVALID), ackPsn, 0);
        }
    }

    private void responder(RocePacket p, MemorySegment seg) {
        int psn = p.psn();
        int d = Psn.diff(psn, ePsn);
        if (d > 0) {
            if (!nakSeqSent) {
                nakSeqSent = true;
                nak(Aeth.NAK_PSN_SEQUENCE_ERROR, ePsn);
            }
            return;
        }
        if (d < 0) {
            duplicate(p);
            return;
        }
        nakSeqSent = false;
        int f = p.flags();
        int kind = (f & SEND) != 0 ? CUR_SEND : (f & WRITE) != 0 ? CUR_WRITE : CUR_NONE;
        boolean start = (f & START) != 0;
        if (curOp != CUR_NONE ? (kind != curOp || start) : !start) {
            responderError(Aeth.NAK_INVALID_REQUEST, psn, null, null);
            return;
        }
        int plen = p.payloadLength();
        boolean end = (f & END) != 0;
        if ((f & PAYLOAD) != 0 && (end ? plen > mtu : plen != mtu)) {
            responderError(Aeth.NAK_INVALID_REQUEST, psn, null, null);
            return;
        }
        if (kind == CUR_SEND) {
            if (start) {
                if (rqHead == rqTail) {
                    rnrNak(psn);
                    return;
                }
                recvOffset = 0;
            }
            RecvWqe r = rq[rqHead & rqMask];
            if (r.localErr != null) {
                responderError(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, psn, r, r.localErr);
                return;
            }
            if (recvOffset + plen > r.total) {
                responderError(Aeth.NAK_INVALID_REQUEST, psn, r, WcStatus.LOC_LEN_ERR);
                return;
            }
            if (plen > 0 && !scatter(seg, p.payloadOffset(), plen, r.numSge, r.addr, r.len, r.mr, recvOffset)) {
                responderError(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, psn, r, WcStatus.LOC_PROT_ERR);
                return;
            }
            recvOffset += plen;
            if (end) {
                int wcFlags = 0, imm = 0;
                if ((f & IMMDT) != 0) {
                    wcFlags = WorkCompletion.WITH_IMM;
                    imm = p.immediate();
                } else if ((f & IETH) != 0) {
                    imm = p.invalidateRkey();
                    if (invalidate(imm, true) != WcStatus.SUCCESS) {
                        responderError(Aeth.NAK_INVALID_REQUEST, psn, r, WcStatus.MW_BIND_ERR);
                        return;
                    }
                    wcFlags = WorkCompletion.WITH_INV;
                }
                rqHead++;
                msn = Psn.next(msn);
                curOp = CUR_NONE;
                rcq.push(r.wrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) recvOffset, imm, wcFlags, qpn, destQpn, p.solicitedEvent());
            } else {
                curOp = CUR_SEND;
            }
        } else if (kind == CUR_WRITE) {
            boolean withImm = (f & IMMDT) != 0;
            if (withImm && rqHead == rqTail) {
                rnrNak(psn);
                return;
            }
            if (start) {
                long dlen = p.rethLength();
                if (!resolve(p.rethRkey(), p.rethVa(), dlen, Access.REMOTE_WRITE.bit)) {
                    responderError(Aeth.NAK_REMOTE_ACCESS_ERROR, psn, null, null);
                    return;
                }
                wrMr = resMr;
                wrOff = resOff;
                wrRemain = wrTotal = dlen;
            }
            if (plen > wrRemain || (end && plen != wrRemain)) {
                responderError(Aeth.NAK_INVALID_REQUEST, psn, null, null);
                return;
            }
            if (plen > 0) {
                try {
                    if (wrMr.isClosed()) throw new IllegalStateException();
                    MemorySegment.copy(seg, p.payloadOffset(), wrMr.seg, wrOff, plen);
                } catch (RuntimeException e) {
                    responderError(Aeth.NAK_REMOTE_ACCESS_ERROR, psn, null, null);
                    return;
                }
                wrOff += plen;
                wrRemain -= plen;
            }
            if (end) {
                curOp = CUR_NONE;
                msn = Psn.next(msn);
                if (withImm) {
                    RecvWqe r = rq[rqHead & rqMask];
                    rqHead++;
                    rcq.push(r.wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) wrTotal, p.immediate(),
                            WorkCompletion.WITH_IMM, qpn, destQpn, p.solicitedEvent());
                }
            } else {
                curOp = CUR_WRITE;
            }
        } else if ((f & READ) != 0) {
            long dlen = p.rethLength();
            if (dlen > SoftContext.MAX_MSG) {
                responderError(Aeth.NAK_INVALID_REQUEST, psn, null, null);
                return;
            }
            if (!resolve(p.rethRkey(), p.rethVa(), dlen, Access.REMOTE_READ.bit)) {
                responderError(Aeth.NAK_REMOTE_ACCESS_ERROR, psn, null, null);
                return;
            }
            Res r = res[resNext++ % res.length];
            r.valid = true;
            r.atomic = false;
            r.firstPsn = psn;
            r.npkts = (int) Math.max(1, (dlen + mtu - 1) / mtu);
            r.mr = resMr;
            r.off = resOff;
            r.length = dlen;
            ePsn = Psn.add(psn, r.npkts);
            msn = Psn.next(msn);
            readResponses(r, 0);
            return;
        } else if ((f & ATOMIC) != 0) {
            long va = p.atomicVa();
            if ((va & 7) != 0) {
                responderError(Aeth.NAK_INVALID_REQUEST, psn, null, null);
                return;
            }
            if (!resolve(p.atomicRkey(), va, 8, Access.REMOTE_ATOMIC.bit)) {
                responderError(Aeth.NAK_REMOTE_ACCESS_ERROR, psn, null, null);
                return;
            }
            long orig;
            try {
                if (resMr.isClosed()) throw new IllegalStateException();
                if (p.opcode() == COMPARE_SWAP.code()) {
                    orig = (long) LONG.compareAndExchange(resMr.seg, resOff, p.atomicCompare(), p.atomicSwapAdd());
                } else {
                    orig = (long) LONG.getAndAdd(resMr.seg, resOff, p.atomicSwapAdd());
                }
            } catch (RuntimeException e) {
                responderError(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, psn, null, null);
                return;
            }
            Res r = res[resNext++ % res.length];
            r.valid = true;
            r.atomic = true;
            r.firstPsn = psn;
            r.npkts = 1;
            r.orig = orig;
            ePsn = Psn.next(psn);
            msn = Psn.next(msn);
            sendAeth(ATOMIC_ACKNOWLEDGE.code(), Aeth.ackSyndrome(Aeth.CREDITS_INVALID), psn, orig);
            return;
        }
        ePsn = Psn.next(psn);
        if (p.ackReq()) ackLater();
    }

    /** Sends the READ responses of resource {@code r} from packet {@code from} on. */
    private void readResponses(Res r, int from) {
        ByteBuffer b = tx;
        for (int k = from; k < r.npkts; k++) {
            boolean first = k == 0, last = k == r.npkts - 1;
            int opc = first && last ? RDMA_READ_RESPONSE_ONLY.code() : first ? RDMA_READ_RESPONSE_FIRST.code()
                    : last ? RDMA_READ_RESPONSE_LAST.code() : RDMA_READ_RESPONSE_MIDDLE.code();
            long off = (long) k * mtu;
            int plen = (int) Math.min(mtu, r.length - off);
            int len = RocePacket.writeBth(b, 0, opc, false, PKEY, destQpn, false, Psn.add(r.firstPsn, k), plen);
            if ((flags(opc) & AETH) != 0) Aeth.write(b, Bth.BYTES, Aeth.ackSyndrome(Aeth.CREDITS_INVALID), msn);
            if (plen > 0) {
                try {
                    if (r.mr.isClosed()) throw new IllegalStateException();
                    MemorySegment.copy(r.mr.seg, r.off + off, txSeg, headerLength(opc), plen);
                } catch (RuntimeException e) {
                    responderError(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, Psn.add(r.firstPsn, k), null, null);
                    return;
                }
            }
            icrc.generate(b, 0, len, tr.ip, remoteIp, tr.port, tr.port);
            tr.send(b, len, remote);
        }
    }

    private void duplicate(RocePacket p) {
        int psn = p.psn();
        int f = p.flags();
        if ((f & (READ | ATOMIC)) != 0) {
            for (Res r : res) {
                if (!r.valid) continue;
                if ((f & READ) != 0 && !r.atomic && Psn.inWindow(psn, r.firstPsn, r.npkts)) {
                    readResponses(r, Psn.diff(psn, r.firstPsn));
                    return;
                }
                if ((f & ATOMIC) != 0 && r.atomic && r.firstPsn == psn) {
                    sendAeth(ATOMIC_ACKNOWLEDGE.code(), Aeth.ackSyndrome(Aeth.CREDITS_INVALID), psn, r.orig);
                    return;
                }
            }
            return; // too old to answer: the requester will time out
        }
        ackLater(); // re-ACK duplicates with the latest PSN
    }

    /** Checks an rkey for {@code [va, va + len)} with {@code need}; sets {@link #resMr}/{@link #resOff}. */
    private boolean resolve(int rkey, long va, long len, int need) {
        if ((accessBits & need) == 0) return false;
        if (len == 0) {
            resMr = null;
            resOff = 0;
            return true;
        }
        Object o = tr.keyOwner(rkey);
        if (o instanceof SoftMr mr) {
            if (mr.key != rkey || mr.isClosed() || mr.pd != pd || (mr.accessBits & need) == 0 || !mr.contains(va, len)) return false;
            resMr = mr;
            resOff = va - mr.addr;
            return true;
        }
        if (o instanceof SoftMw mw) {
            SoftMw.Binding b = mw.binding;
            if (b == null || b.rkey() != rkey || mw.isClosed() || mw.pd != pd || (b.accessBits() & need) == 0 || b.mr().isClosed()) return false;
            long rel = va - b.addr();
            if (rel < 0 || rel > b.len() || len > b.len() - rel) return false;
            if (mw.type == MwType.TYPE_2 && b.qp() != this) return false;
            resMr = b.mr();
            resOff = va - b.mr().addr;
            return true;
        }
        return false;
    }

    // =============================================================================================

    @Override
    protected void destroy() {
        if (qpn != 0) tr.removeQp(qpn, this);
        SoftTimer.unregister(this);
        synchronized (this) {
            retryDeadline = rnrDeadline = 0;
            sqHead = sqSend = sqTail = 0;
            rqHead = rqTail = 0;
            state = QpState.RESET;
        }
    }

    @Override
    public String toString() {
        return "SoftQp[qpn=0x" + Integer.toHexString(qpn) + ", state=" + state + "]";
    }
}
