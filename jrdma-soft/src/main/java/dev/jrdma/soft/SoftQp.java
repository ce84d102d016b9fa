package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.REQ;

import dev.jrdma.soft.SendWqe.Progress;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.AsyncEventType;
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
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import dev.jrdma.verbs.spi.Resource;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.Set;

/**
 * An RC queue pair of the software device: the verbs face (create, modify, query, post, flush) over the three
 * engines of the IBA RC transport, split as Linux rxe splits them: the {@link Requester} turns send WQEs into
 * request packets, the {@link Responder} executes the peer's requests, the {@link Completer} handles the peer's
 * responses and completes send WQEs. This class holds what they share: the attributes, the two work queues and the
 * transmit buffer. All state is guarded by the QP's monitor: the posting thread transmits directly, the thread
 * that drives the device (an application thread polling a CQ, or the device's receive thread; see {@link Transport})
 * runs the responder and the completer, the device's timer runs retransmission and RNR waits.
 */
final class SoftQp extends Resource implements QueuePair {
    /** {@code -Djrdma.soft.trace=true} logs every engine step (System.Logger, DEBUG): slow, for debugging only. */
    static final boolean TRACE = Boolean.getBoolean("jrdma.soft.trace");

    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");
    static final long MIN_TIMEOUT_NANOS = 2_000_000;
    /**
     * {@code -Djrdma.soft.checkSourcePort=false} turns off the per-QP check of the peer's UDP source port (on by
     * default). The port is learned from the first packet of the peer that moves the connection on (an in-sequence
     * request, a response that acknowledges progress) and fixed until RESET or a new address: a jrdma peer sends every
     * packet from its device's port; rxe from one port per QP (rxe_qp.c: a hash of the QP numbers and flow label,
     * set with the address); NICs likewise per QP for ECMP. Turn it off for a peer that changes a live QP's source port
     * (mlx5dv_modify_qp_udp_sport allows that in RTS).
     */
    static final boolean CHECK_SOURCE_PORT = !"false".equals(System.getProperty("jrdma.soft.checkSourcePort"));

    /**
     * {@code -Djrdma.soft.selectiveRepeat=false}: RC QPs of this process never use jrdma's selective-repeat mode (after
     * IRN, SIGCOMM 2018), not even with a jrdma peer that offers it. On by default: it acts only where both ends agree
     * (see {@link #selectiveRepeat}).
     */
    static final boolean SELECTIVE_REPEAT = !"false".equals(System.getProperty("jrdma.soft.selectiveRepeat"));

    /**
     * Whether this QP may use jrdma's selective-repeat mode, negotiated in band per QP: as a requester it offers the
     * mode with jrdma's mark on every request ({@link dev.jrdma.soft.wire.Bth#holdsMark}: a reserved BTH bit rxe and
     * NICs ignore); as a responder, once a marked request has been executed in sequence, it keeps what arrives beyond a
     * gap (WRITE packets of the message in progress placed where they belong, anything else held and executed in
     * sequence) and NAKs the gap with the mark ({@link Responder}, {@link HeldRequests}); a requester that gets marked
     * responses sends only the packet a marked NAK names, runs its window past the hole ({@link Requester#beyondWindow})
     * and at a timeout sends only the oldest unacknowledged packet and the last one. Against rxe, a NIC or a jrdma peer
     * without the mode nothing is marked back, and both directions keep go-back-N as the specification says. Set before
     * the QP reaches RTR ({@link #SELECTIVE_REPEAT}; tests set it directly).
     */
    boolean selectiveRepeat = SELECTIVE_REPEAT;

    /**
     * {@code -Djrdma.soft.reorderThreshold=N} (3 by default, at least 1): in the selective-repeat mode a packet a marked
     * NAK reports missing is sent again only once the peer keeps N packets beyond it (TCP's three duplicate ACKs): a
     * packet that is late, not lost (a veth hands each packet to the backlog of the CPU that sent it, so two CPUs can
     * reorder one flow) arrives before N later ones do, and costs nothing. 1 resends at the first NAK. The responder
     * NAKs the gap again when it keeps N packets beyond it; give both ends the same N.
     */
    static final int REORDER_THRESHOLD = Math.max(1, Integer.getInteger("jrdma.soft.reorderThreshold", 3));

    /** {@link #REORDER_THRESHOLD} for this QP (tests set it directly). */
    int reorderThreshold = REORDER_THRESHOLD;

    private final SoftPd pd;
    private final Transport tr;
    private final SoftCq scq, rcq;
    private final QpCap cap;
    private final boolean sigAll;
    private final int qpn;
    private volatile QpState state = QpState.RESET;

    // attributes (read by the engines)
    int accessBits;
    private Set<Access> accessSet = Set.of();
    private Mtu pathMtu = Mtu.MTU_1024;
    int mtu = 1024;
    private AhAttr ah;
    int destQpn, retryCnt, rnrRetry, minRnrTimer;
    /** The Q_Key (UD): what arriving datagrams must present. */
    int qkey;

    private int rqPsnAttr, sqPsnAttr, timeoutAttr;
    int maxRdAtomic = 1, maxDestRdAtomic = 1;
    long timeoutNanos;
    InetSocketAddress remote;
    /** The peer's address: the only source a connected QP takes packets from, and the destination its ICRCs cover. */
    IpAddress remoteAddr;
    /** The UDP source port the peer's packets come from, learned from its first valid packet; -1 until then. */
    int peerPort = -1;
    /** Bursts of forgery-like packets ({@link ForgeryWatch}). */
    final ForgeryWatch watch = new ForgeryWatch();
    /**
     * The authenticated mode's key ({@code QpAttr.packetAuthKey}, set in INIT->RTR, forgotten in RESET), or null:
     * then every packet sent carries a tag and every packet received is checked ({@link PacketDispatch}) first.
     */
    volatile PacketAuth auth;

    /** Where the engines build and send packets (under the monitor only). */
    final QpTransmitter out;
    /** jrdma's carried ACKs: negotiated in band, the responder's ACK in the requester's next request. */
    final CarriedAcks carried = new CarriedAcks(this);
    /** Posts held while packets are in flight, to leave in one batch (between jrdma peers over UDP). */
    final SendCork cork = new SendCork(this);
    /** The drive of its receiver that queued this QP's coalesced ACK, and the last that kept it owed (see {@link Transport}). */
    long ackDrive, ackKept;
    /** The receive thread's drive that listed this QP's ACK last ({@link Transport#ackAgain}). */
    long ackRxDrive = -1;

    private final SendQueue sq;
    private final RecvQueue rq;
    /** The shared receive queue its receives come from (then {@link #rq} holds only the one taken for the message in progress), or null. */
    final SoftSrq srq;

    private final QpType type;
    /** The UD transport of a UD QP (then the RC engines stay idle), or null. */
    final Datagram datagram;
    /** SQ_DRAINED is owed once the send queue drains (a move to SQD with en_sqd_async_notify). */
    private boolean sqdNotify;
    /** The en_sqd_async_notify of the last move to SQD, as ibv_query_qp reports it. */
    private boolean enSqdAsyncNotify;
    /** COMM_EST was raised since the move to RTR. */
    private boolean commEstablished;

    final Requester requester;
    final Responder responder;
    final Completer completer;
    /** DCQCN: CNPs for CE-marked packets, the rate the requester keeps to. */
    final QpCongestion congestion;

    SoftQp(SoftPd pd, QpInitAttr attr) {
        super(pd, "queue pair");
        this.pd = pd;
        this.tr = pd.transport();
        scq = (SoftCq) attr.sendCq();
        rcq = (SoftCq) attr.recvCq();
        srq = (SoftSrq) attr.srq();
        type = attr.type();
        QpCap c = attr.cap();
        int ns = pow2(Math.max(1, c.maxSendWr())), nr = pow2(Math.max(1, c.maxRecvWr()));
        int sges = Math.max(1, c.maxSendSge()), rsges = Math.max(1, c.maxRecvSge());
        cap = srq == null
                ? new QpCap(ns, nr, sges, rsges, c.maxInlineData())
                : new QpCap(ns, 0, sges, 0, c.maxInlineData());
        sigAll = attr.sqSigAll();
        sq = new SendQueue(ns, sges);
        // on an SRQ the responder takes one receive at a time into this one-slot queue (rxe copies it into
        // resp.srq_wqe)
        rq = srq == null ? new RecvQueue(nr, rsges) : new RecvQueue(1, srq.maxSge());
        out = new QpTransmitter(this, tr);
        congestion = new QpCongestion(this, Dcqcn.DEFAULTS);
        requester = new Requester(this, sq);
        responder = new Responder(this, rq);
        completer = new Completer(this, sq);
        datagram = type == QpType.UD ? new Datagram(this, rq) : null;
        qpn = tr.addQp(this);
        tr.timer.register(this);
        if (srq != null) srq.users.add(this);
        scq.users.add(this);
        rcq.users.add(this);
        if (scq.isClosed() || rcq.isClosed()) { // a CQ closed meanwhile: its close may not have seen this QP
            close();
            throw new dev.jrdma.verbs.ClosedException("ibv_create_qp", (scq.isClosed() ? scq : rcq).what());
        }
    }

    private static int pow2(int n) {
        return n <= 1 ? 1 : Integer.highestOneBit(n - 1) << 1;
    }

    @Override
    public SoftPd pd() {
        return pd;
    }

    @Override
    public QpType type() {
        return type;
    }

    @Override
    public int qpNum() {
        return qpn;
    }

    @Override
    public QpState state() {
        return state;
    }

    @Override
    public SoftCq sendCq() {
        return scq;
    }

    @Override
    public SoftCq recvCq() {
        return rcq;
    }

    @Override
    public QpCap cap() {
        return cap;
    }

    Transport transport() {
        return tr;
    }

    SoftTimer timer() {
        return tr.timer;
    }

    Clock clock() {
        return tr.timer.clock();
    }

    // =============================================================================================
    // modify / query
    // =============================================================================================

    @Override
    public void modify(QpAttr a) {
        checkOpen("ibv_modify_qp");
        synchronized (this) {
            QpState next = QpStateMachine.check(type, state, a);
            if (a.has(QpAttrMask.PORT)) SoftContext.checkPort("ibv_modify_qp", a.port());
            if (a.has(QpAttrMask.PKEY_INDEX) && a.pkeyIndex() != 0)
                throw new VerbsException(
                        "ibv_modify_qp",
                        VerbsException.EINVAL,
                        "the soft device has one P_Key (index 0); got pkey_index " + a.pkeyIndex());
            range(a, QpAttrMask.TIMEOUT, a.timeout(), 31, "timeout");
            range(a, QpAttrMask.RETRY_CNT, a.retryCnt(), 7, "retry_cnt");
            range(a, QpAttrMask.RNR_RETRY, a.rnrRetry(), 7, "rnr_retry");
            range(a, QpAttrMask.MIN_RNR_TIMER, a.minRnrTimer(), 31, "min_rnr_timer");
            range(a, QpAttrMask.MAX_QP_RD_ATOMIC, a.maxRdAtomic(), SoftContext.MAX_RD_ATOMIC, "max_rd_atomic");
            range(
                    a,
                    QpAttrMask.MAX_DEST_RD_ATOMIC,
                    a.maxDestRdAtomic(),
                    SoftContext.MAX_RD_ATOMIC,
                    "max_dest_rd_atomic");
            InetSocketAddress newRemote = null;
            IpAddress newRemoteAddr = null;
            if (a.has(QpAttrMask.AV)) {
                newRemoteAddr = pd.context().route(a.ah(), "ibv_modify_qp");
                newRemote = new Destination(newRemoteAddr.inet, tr.port, a.ah());
            }
            if (a.has(QpAttrMask.ACCESS_FLAGS)) {
                accessSet = Set.copyOf(a.access());
                accessBits = Access.toBits(a.access());
            }
            if (a.has(QpAttrMask.AV)) {
                ah = a.ah().copy();
                tr.peerChanged(remote, newRemote);
                remote = newRemote;
                remoteAddr = newRemoteAddr;
                peerPort = -1; // a new path: the peer's port is learned again
            }
            if (a.has(QpAttrMask.PATH_MTU)) {
                pathMtu = a.pathMtu().min(Mtu.MTU_4096);
                mtu = pathMtu.bytes;
                requester.pathMtu(mtu);
            }
            if (a.has(QpAttrMask.DEST_QPN)) destQpn = a.destQpNum();
            if (a.has(QpAttrMask.QKEY)) qkey = a.qkey();
            if (a.has(QpAttrMask.RQ_PSN)) rqPsnAttr = a.rqPsn();
            if (a.has(QpAttrMask.SQ_PSN)) sqPsnAttr = a.sqPsn();
            if (a.has(QpAttrMask.TIMEOUT)) {
                timeoutAttr = a.timeout();
                timeoutNanos = timeoutAttr == 0 ? 0 : Math.max(MIN_TIMEOUT_NANOS, 4096L << timeoutAttr);
            }
            if (a.has(QpAttrMask.RETRY_CNT)) retryCnt = a.retryCnt();
            if (a.has(QpAttrMask.RNR_RETRY)) rnrRetry = a.rnrRetry();
            if (a.has(QpAttrMask.MIN_RNR_TIMER)) minRnrTimer = a.minRnrTimer();
            if (a.has(QpAttrMask.MAX_QP_RD_ATOMIC)) maxRdAtomic = a.maxRdAtomic();
            if (a.has(QpAttrMask.MAX_DEST_RD_ATOMIC)) maxDestRdAtomic = a.maxDestRdAtomic();
            if (a.has(QpAttrMask.PACKET_AUTH_KEY)) { // before RTR: no packet is taken unchecked
                auth = new PacketAuth(a.packetAuthKey());
                tr.counters.add(Counter.QPS_PACKET_AUTH);
            }

            QpState cur = state;
            switch (next) {
                case RESET -> reset();
                case ERR -> toErr();
                case RTR -> {
                    if (cur == QpState.INIT
                            && auth == null
                            && PacketAuth.PRESHARED != null
                            && type == QpType.RC) { // -Djrdma.soft.packetAuthKey
                        auth = new PacketAuth(PacketAuth.PRESHARED);
                        tr.counters.add(Counter.QPS_PACKET_AUTH);
                    }
                    if (cur == QpState.INIT) {
                        responder.start(rqPsnAttr, maxDestRdAtomic);
                        carried.start();
                    }
                    commEstablished = false;
                    state = next;
                }
                case SQD -> {
                    state = next;
                    enSqdAsyncNotify = a.has(QpAttrMask.EN_SQD_ASYNC_NOTIFY) && a.enSqdAsyncNotify();
                    if (enSqdAsyncNotify) {
                        sqdNotify = true;
                        checkDrained();
                    }
                }
                case RTS -> {
                    if (cur == QpState.RTR) {
                        requester.start(sqPsnAttr);
                        completer.start(sqPsnAttr);
                        congestion.sampleSent();
                    }
                    state = next;
                    requester.run();
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
            QpAttr a = new QpAttr()
                    .state(state)
                    .curState(state)
                    .access(accessSet)
                    .pkeyIndex(0)
                    .port(1)
                    .pathMtu(pathMtu)
                    .timeout(timeoutAttr)
                    .retryCnt(retryCnt)
                    .rnrRetry(rnrRetry)
                    .rqPsn(rqPsnAttr)
                    .sqPsn(sqPsnAttr)
                    .maxRdAtomic(maxRdAtomic)
                    .maxDestRdAtomic(maxDestRdAtomic)
                    .minRnrTimer(minRnrTimer)
                    .destQpNum(destQpn)
                    .cap(cap)
                    .qkey(qkey)
                    .enSqdAsyncNotify(enSqdAsyncNotify)
                    .sqDraining(state == QpState.SQD && !sqDrained())
                    .pathMigState(QpAttr.MIG_MIGRATED)
                    .altPath(noPath(), 0, 0, 0); // no alternate path: what rxe reports
            a.ah(ah != null ? ah.copy() : noPath());
            return a;
        }
    }

    /** An address vector with nothing set, as ibv_query_qp returns for a path that was never given. */
    private static AhAttr noPath() {
        AhAttr none = new AhAttr();
        none.portNum = 0;
        none.hopLimit = 0;
        return none;
    }

    private void reset() {
        responder.flushAck(); // an ACK held for a request to carry (CarriedAcks) still leaves
        peerPort = -1;
        watch.reset();
        sq.clear();
        rq.clear();
        requester.reset();
        completer.reset();
        responder.reset();
        auth = null;
        state = QpState.RESET;
    }

    /** Moves to ERR and flushes every outstanding send and receive work request. */
    void toErr() {
        // a QP on an SRQ takes no more of its receives: the last WQE is reached (IBA 10.8.1; rxe raises it too)
        if (srq != null && state != QpState.ERR) pd.context().raise(AsyncEventType.QP_LAST_WQE_REACHED, this);
        // a coalesced ACK still owed covers requests executed and completed here: send it before the QP stops
        // answering, or the peer retries a request that was delivered and ends in RETRY_EXC_ERR
        responder.flushAck();
        state = QpState.ERR;
        requester.reset();
        completer.reset();
        responder.toErr();
        flushSq();
        flushRq();
    }

    private void flushSq() {
        for (int i = sq.head; i != sq.tail; i++) {
            SendWqe w = sq.at(i);
            scq.push(w.wrId, WcStatus.WR_FLUSH_ERR, w.op.completionOpcode(), 0, 0, 0, qpn, 0, false);
        }
        sq.head = sq.next = sq.tail;
        requester.rdAtomicOut = 0;
    }

    private void flushRq() {
        for (int i = rq.head; i != rq.tail; i++) {
            rcq.push(rq.at(i).wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpn, 0, false);
        }
        rq.head = rq.tail;
    }

    // =============================================================================================
    // posting
    // =============================================================================================

    @Override
    public void postSend(SendWorkRequest first) {
        checkOpen("ibv_post_send");
        if (datagram != null) {
            synchronized (this) {
                datagram.post(first, sigAll);
            }
            return;
        }
        synchronized (this) {
            out.begin();
            int firstNew = sq.tail;
            try {
                int idx = 0;
                for (SendWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
                    QpState s = state;
                    if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR)
                        throw new PostException(
                                "ibv_post_send",
                                VerbsException.EINVAL,
                                idx,
                                "the QP is in " + s + "; sends need RTS (walk it RESET->INIT->RTR->RTS)");
                    if (sq.isFull())
                        throw new PostException(
                                "ibv_post_send",
                                VerbsException.ENOMEM,
                                idx,
                                "the send queue is full (max_send_wr " + sq.capacity()
                                        + "): poll the send CQ before posting more");
                    if (wr.numSge() > cap.maxSendSge())
                        throw new PostException(
                                "ibv_post_send",
                                VerbsException.EINVAL,
                                idx,
                                "num_sge " + wr.numSge() + " is above the QP's max_send_sge " + cap.maxSendSge());
                    SendWqe w = sq.at(sq.tail);
                    SendWqeWriter.write(w, wr, idx, this, sigAll);
                    sq.tail++;
                }
            } finally {
                try {
                    if (state == QpState.ERR) flushSq();
                    else if (!cork.holds(sq, firstNew)) requester.run();
                } finally {
                    out.end();
                }
                // a coalesced ACK owed that no request carried (CarriedAcks) leaves now, alone: after the requests,
                // not in their batch (a segmented send reaches the peer only whole: 2.4 us on a veth against 1.4)
                responder.flushAck();
            }
        }
    }

    @Override
    public void postRecv(RecvWorkRequest first) {
        checkOpen("ibv_post_recv");
        if (srq != null)
            throw new PostException(
                    "ibv_post_recv",
                    VerbsException.EINVAL,
                    0,
                    "this QP takes its receives from a shared receive queue: post them there");
        synchronized (this) {
            try {
                int idx = 0;
                for (RecvWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
                    if (state == QpState.RESET)
                        throw new PostException(
                                "ibv_post_recv",
                                VerbsException.EINVAL,
                                idx,
                                "the QP is in RESET; move it to INIT first");
                    if (rq.isFull())
                        throw new PostException(
                                "ibv_post_recv",
                                VerbsException.ENOMEM,
                                idx,
                                "the receive queue is full (max_recv_wr " + rq.capacity()
                                        + "): wait for receive completions before posting more");
                    if (wr.numSge() > cap.maxRecvSge())
                        throw new PostException(
                                "ibv_post_recv",
                                VerbsException.EINVAL,
                                idx,
                                "num_sge " + wr.numSge() + " is above the QP's max_recv_sge " + cap.maxRecvSge());
                    RecvWqe r = rq.at(rq.tail);
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
                    rq.tail++;
                }
            } finally {
                if (state == QpState.ERR) flushRq();
            }
        }
    }

    @Override
    public int bindMemoryWindow(
            MemoryWindow mw, long wrId, boolean signaled, MemoryRegion mr, long addr, long length, Set<Access> access) {
        checkOpen("ibv_bind_mw");
        if (!(mw instanceof SoftMw w1) || w1.type != MwType.TYPE_1)
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EINVAL,
                    "bindMemoryWindow binds type 1 windows; bind type 2 windows with a BIND_MW work request");
        if (!(mr instanceof SoftMr m))
            throw new VerbsException(
                    "ibv_bind_mw", VerbsException.EINVAL, "the memory region is not a region of this device");
        w1.checkOpen("ibv_bind_mw");
        if (w1.pd != pd)
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EINVAL,
                    "the window belongs to another protection domain than the QP");
        synchronized (this) {
            if (state != QpState.RTS && state != QpState.ERR)
                throw new VerbsException(
                        "ibv_bind_mw",
                        VerbsException.EINVAL,
                        "the QP is in " + state + "; binds are posted on the send queue and need RTS");
            if (sq.isFull())
                throw new VerbsException(
                        "ibv_bind_mw", VerbsException.ENOMEM, "the send queue is full: poll the send CQ first");
            int newRkey = w1.nextRkey();
            w1.rkey = newRkey;
            SendWqe w = sq.at(sq.tail);
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
            w.progress = Progress.POSTED;
            sq.tail++;
            if (state == QpState.ERR) flushSq();
            else requester.run();
            return newRkey;
        }
    }

    // =============================================================================================
    // packets in and out
    // =============================================================================================

    /** A packet for this QP (the driving thread): requests go to the responder, responses to the completer. False when dropped. */
    boolean receive(RocePacket p, MemorySegment seg, IpAddress src, int srcPort) {
        synchronized (this) {
            out.begin(); // what the packet sets off (replies, a window of requests an ACK opens) leaves in one batch
            try {
                return receiveLocked(p, seg, src, srcPort);
            } finally {
                out.end();
            }
        }
    }

    private boolean receiveLocked(RocePacket p, MemorySegment seg, IpAddress src, int srcPort) {
        {
            QpState s = state;
            if (isClosed() || s == QpState.RESET || s == QpState.INIT || s == QpState.ERR)
                return drop(Counter.RX_QP_NOT_READY);
            if ((p.pkey() & 0x7FFF) != 0x7FFF) return drop(Counter.RX_BAD_PKEY);
            // a datagram reaches only a UD QP, and a UD QP takes nothing else: an RC responder must never see a DETH
            if (datagram != null || p.has(Opcode.DETH)) {
                if (datagram == null || !p.has(Opcode.DETH) || p.carriesAck())
                    return drop(Counter.RX_MALFORMED); // an opcode of the other transport, or an RC extension
                return datagram.receive(p, seg, src, tr.local);
            }
            if (!src.equals(remoteAddr)) return drop(Counter.RX_WRONG_SOURCE); // a connected QP hears only its peer
            if (p.carriesAck() && !p.has(REQ)) return drop(Counter.RX_MALFORMED); // only requests carry ACKs
            boolean learn = peerPort < 0;
            if (!learn && srcPort != peerPort && CHECK_SOURCE_PORT) {
                suspect();
                return drop(Counter.RX_WRONG_SOURCE_PORT); // the peer's address, not its port: a forger on its host
            }
            boolean progressed;
            if (p.has(REQ)) {
                if (s == QpState.RTR
                        && !commEstablished) { // the first packet in RTR establishes communication (IBA 11.6.3.1)
                    commEstablished = true;
                    pd.context().raise(AsyncEventType.COMM_EST, this);
                }
                int before = responder.expectedPsn, acked = completer.oldestUnacked;
                if (p.carriesAck()) { // jrdma's carried ACK first, as that ACK alone would have come first
                    if (!carried.receive(p)) return drop(Counter.RX_MALFORMED);
                    if (sqdNotify) checkDrained();
                    if (state == QpState.ERR) return drop(Counter.RX_QP_NOT_READY);
                }
                responder.receive(p, seg);
                progressed = responder.expectedPsn != before || completer.oldestUnacked != acked;
            } else {
                if (s == QpState.RTR) return drop(Counter.RX_QP_NOT_READY);
                int before = completer.oldestUnacked;
                completer.receive(p, seg);
                progressed = completer.oldestUnacked != before;
                if (sqdNotify) checkDrained();
            }
            // learned only from a packet that moved the connection on: a stray or forged one (out of window) teaches
            // nothing
            if (learn && progressed) peerPort = srcPort;
            return true;
        }
    }

    /** RTS, or SQD (which finishes, retransmits and completes the requests it started, and starts none). */
    boolean sendsRequests() {
        QpState s = state;
        return s == QpState.RTS || s == QpState.SQD;
    }

    /** Whether every request started is acknowledged (nothing in flight; the rest waits, unstarted, in the queue). */
    private boolean sqDrained() {
        return sq.head == sq.next && (sq.next == sq.tail || sq.at(sq.next).progress == SendWqe.Progress.POSTED);
    }

    /** In SQD with a notification owed: raises SQ_DRAINED once every request started is acknowledged. */
    private void checkDrained() {
        if (state == QpState.SQD && sqDrained()) {
            sqdNotify = false;
            pd.context().raise(AsyncEventType.SQ_DRAINED, this);
        }
    }

    /** For the responder when a message needs a receive: on an SRQ, takes the next one into {@link #rq}; false when there is none. */
    boolean takeReceive() {
        if (!rq.isEmpty()) return true;
        if (srq == null || !srq.take(rq.at(rq.tail))) return false;
        rq.tail++;
        return true;
    }

    /** The receive loop's turn to send more READ responses (see {@link Responder#sendReplies}). */
    void continueReplies() {
        synchronized (this) {
            QpState s = state;
            if (isClosed() || s == QpState.RESET || s == QpState.INIT || s == QpState.ERR || !responder.turnRequested())
                return;
            out.begin();
            try {
                responder.sendReplies();
            } finally {
                out.end();
            }
        }
    }

    void count(Counter c) {
        tr.counters.add(c);
    }

    /** A packet no peer of this connection sends (see {@link ForgeryWatch}): a burst of them raises QP_FORGERY_SUSPECTED. */
    void suspect() {
        if (watch.suspect(clock().nanoTime(), tr.counters))
            pd.context().raise(AsyncEventType.QP_FORGERY_SUSPECTED, this);
    }

    /** Whether a burst of forgery-like packets came lately: then only a NAK of the oldest unacknowledged PSN is obeyed. */
    boolean guarded() {
        return watch.guarded(clock());
    }

    private boolean drop(Counter reason) {
        tr.counters.add(reason);
        return false;
    }

    /** Adds the ICRC to the packet of {@code len} bytes in {@link QpTransmitter#tx} and sends it to the peer. */
    void transmit(int len) {
        out.transmitTo(len, remoteAddr, remote);
    }

    // =============================================================================================
    // timers
    // =============================================================================================

    /**
     * The earliest armed deadline (retransmission, end of an RNR wait, pacing, the cork's), 0 when none; read by the
     * timer without the lock.
     */
    long nextDeadline() {
        long d = earliest(earliest(completer.retryDeadline, requester.rnrDeadline), congestion.rateDeadline);
        return earliest(d, cork.deadline);
    }

    private static long earliest(long a, long b) {
        return a == 0 ? b : b == 0 ? a : a - b <= 0 ? a : b;
    }

    /** A deadline passed (timer thread): posts corked, the end of an RNR wait, pacing, or a retransmission timeout. */
    void onTimer(long now) {
        synchronized (this) {
            if (isClosed() || (state != QpState.RTS && state != QpState.SQD)) {
                completer.retryDeadline = 0;
                requester.rnrDeadline = 0;
                congestion.rateDeadline = cork.deadline = 0;
                return;
            }
            cork.onTimer(now);
            long rnr = requester.rnrDeadline;
            if (rnr != 0 && now - rnr >= 0) {
                requester.endRnrWait();
                return;
            }
            congestion.onTimer(now);
            long retry = completer.retryDeadline;
            if (retry != 0 && now - retry >= 0) {
                out.begin();
                try {
                    completer.onRetryTimeout(now);
                } finally {
                    out.end();
                }
            }
        }
    }

    void trace(String engine, Enum<?> step) {
        LOG.log(System.Logger.Level.DEBUG, "qp 0x" + Integer.toHexString(qpn) + " " + engine + " " + step.name());
    }

    // =============================================================================================

    @Override
    protected void destroy() {
        if (srq != null) srq.users.remove(this);
        if (scq != null) scq.users.remove(this);
        if (rcq != null) rcq.users.remove(this);
        if (qpn != 0) tr.removeQp(qpn, this, remote);
        tr.timer.unregister(this);
        synchronized (this) {
            responder.sendOwedAck(); // an ACK held for a request to carry (CarriedAcks) still leaves
            completer.retryDeadline = 0;
            requester.rnrDeadline = 0;
            sq.clear();
            rq.clear();
            state = QpState.RESET;
        }
    }

    @Override
    public String toString() {
        return "SoftQp[qpn=0x" + Integer.toHexString(qpn) + ", state=" + state + "]";
    }
}
