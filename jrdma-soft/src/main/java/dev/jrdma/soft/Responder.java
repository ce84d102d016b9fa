package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.AtomicAckEth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.CarriedAck;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * The responder of an RC QP (the role of Linux rxe's {@code rxe_resp.c}): checks each request packet in the order
 * IBA vol 1 §9.7.5 lays out (PSN, opcode sequence, length, receive WQE, rkey and rights) before any memory is
 * touched, then executes it: SEND data into the next receive WQE, WRITE data into the region, READ responses and
 * atomics from the region, recorded in a ring of max_dest_rd_atomic resources so duplicates are answered without
 * executing again. ACKs are coalesced per receive burst, or carried in a request ({@link CarriedAcks}). A bad request
 * is NAKed and, like rxe, moves the QP to ERR. Everything runs under the QP's monitor.
 */
final class Responder {
    /** The steps of {@link #receive}; the ERR_ states NAK the request. */
    enum State {
        CHECK_PSN,
        CHECK_OP_SEQUENCE,
        CHECK_LENGTH,
        CHECK_RESOURCE,
        CHECK_RKEY,
        EXECUTE,
        READ_REPLY,
        ATOMIC_REPLY,
        COMPLETE,
        ACKNOWLEDGE,
        DUPLICATE,
        ERR_PSN_SEQUENCE,
        ERR_RNR,
        ERR_INVALID_REQUEST,
        ERR_REMOTE_ACCESS,
        ERR_REMOTE_OPERATIONAL,
        DONE
    }

    /** What kind of message the packet belongs to (and which one is in progress). */
    private static final int NONE = 0, SEND_MESSAGE = 1, WRITE_MESSAGE = 2, READ_REQUEST = 3, ATOMIC_REQUEST = 4;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int PKEY = Bth.DEFAULT_PKEY;

    private final SoftQp qp;
    private final RecvQueue rq;

    /** The PSN expected next (rxe: {@code resp.psn}), and the message sequence number carried in ACKs. */
    int expectedPsn, msn;
    /** The message in progress (a multi-packet SEND or WRITE), or NONE. */
    private int inProgress = NONE;

    private long recvOffset;
    private final WriteMessage write = new WriteMessage();
    /** A PSN sequence or RNR NAK was sent: later packets of the same burst are dropped without another NAK. */
    private boolean nakSent;
    /** That NAK was an RNR NAK: what arrives behind it is no loss to NAK (its requester waits, then sends it again). */
    private boolean rnrGap;

    private boolean ackQueued;
    private int ackPsn;
    private ResponderResource[] resources = {new ResponderResource()};
    /** Resources used so far; the next goes to slot {@code used % length} (a long: it cannot wrap). */
    private long resourcesUsed;
    /** Some resource has replies to send: ACKs and NAKs wait behind them (responses leave in PSN order). */
    private boolean repliesPending;
    /** The receive loop owes this QP a turn to send more replies. */
    private boolean turnRequested;
    /** A PSN sequence or RNR NAK that waits for pending replies. */
    private boolean controlDeferred;

    private int deferredSyndrome, deferredPsn;
    private boolean deferredMark;

    // the packet being processed
    private RocePacket pkt;
    private MemorySegment seg;
    private int psn, kind, flags;
    /** The region and offset an rkey check found. */
    private final RemoteAccess target = new RemoteAccess();
    /** For an error: whether the receive WQE in use completes, and with which status. */
    private RecvWqe errRecv;

    private WcStatus errRecvStatus;
    /** The last step before DONE of the last packet: how it was handled (tests and tracing). */
    State lastOutcome = State.DONE;
    /**
     * The selective-repeat mode ({@link SoftQp#selectiveRepeat}): requests beyond a gap, kept until it is filled; made
     * on the first gap.
     */
    private HeldRequests held;
    /** The view of a held packet being executed. */
    private final RocePacket heldPkt = new RocePacket();
    /**
     * The requester offered the selective-repeat mode: a request with jrdma's mark ({@link Bth#holdsMark}) was executed
     * in sequence, after every check. Until then (rxe, a NIC, a jrdma requester without the mode) this end neither
     * keeps nor places what arrives beyond a gap, and marks nothing: go-back-N as the specification says.
     */
    boolean requesterOffers;

    Responder(SoftQp qp, RecvQueue rq) {
        this.qp = qp;
        this.rq = rq;
    }

    /** INIT to RTR: expect the QP's rq_psn; a fresh ring of max_dest_rd_atomic resources. */
    void start(int rqPsn, int maxDestRdAtomic) {
        expectedPsn = rqPsn;
        msn = 0;
        inProgress = NONE;
        nakSent = rnrGap = false;
        resources = new ResponderResource[Math.max(1, maxDestRdAtomic)];
        for (int i = 0; i < resources.length; i++) resources[i] = new ResponderResource();
        resourcesUsed = 0;
        requesterOffers = false;
    }

    void reset() {
        toErr();
        ackQueued = false;
        for (ResponderResource r : resources) r.valid = false;
    }

    /** Nothing more goes out: pending replies and deferred NAKs are dropped. */
    void toErr() {
        inProgress = NONE;
        if (held != null) held.clear();
        for (ResponderResource r : resources) r.sendFrom = r.sendTo;
        repliesPending = false;
        controlDeferred = false;
    }

    /** Tests: pretend {@code n} READ/atomic requests were served before (the resource ring position after 2^31 requests and more). */
    void skipResources(long n) {
        resourcesUsed += n;
    }

    /**
     * A request packet for this QP (the driving thread); in the selective-repeat mode, when it moved the expected PSN
     * on, then the packets held after it that now follow in sequence.
     */
    void receive(RocePacket p, MemorySegment segment) {
        int before = expectedPsn;
        boolean offer = p.holdsMark(), takesAcks = p.takesAcks();
        handle(p, segment);
        if (expectedPsn == before) return;
        // the offers count only from a request that was executed in sequence: a forger who cannot hit the expected PSN
        // with a request that passes every check cannot switch a mode on (authenticated mode: cannot at all)
        if (offer && qp.selectiveRepeat) requesterOffers = true;
        if (takesAcks) qp.carried.offered();
        if (held != null && held.count() > 0) executeHeld();
    }

    /** {@return the packets kept or placed beyond a gap now} */
    int heldCount() {
        return held == null ? 0 : held.count();
    }

    /** Whether this end keeps what arrives beyond a gap now: in the mode, offered by the requester, not guarded. */
    private boolean holding() {
        return qp.selectiveRepeat && requesterOffers && !qp.guarded();
    }

    /**
     * Executes the held packets from the expected PSN on, in sequence, each through every check as if it had just
     * arrived, up to the next gap or a packet that does not move the PSN on (an RNR NAK or an error: the requester sends
     * it again). A gap with packets held after it is NAKed at once (marked: send only that one); otherwise one ACK
     * covers them all.
     */
    private void executeHeld() {
        while (true) {
            HeldRequests.Placed placed = held.takePlaced(expectedPsn);
            if (placed != null) {
                if (!countPlaced(placed)) break;
                continue;
            }
            ByteBuffer b = held.take(expectedPsn);
            if (b == null) break;
            if (heldPkt.wrap(b, 0, b.limit()) != RocePacket.OK) break; // it was well-formed when kept
            int before = expectedPsn;
            handle(heldPkt, MemorySegment.ofBuffer(b));
            if (expectedPsn == before) break;
        }
        held.dropBefore(expectedPsn);
        QpState s = qp.state();
        if (qp.isClosed() || s == QpState.ERR || s == QpState.RESET || s == QpState.INIT) return;
        if (held.count() > 0) {
            if (!nakSent) {
                nakSent = true; // it acknowledges everything before the gap, too
                sendInOrder(Aeth.nakSyndrome(Aeth.NAK_PSN_SEQUENCE_ERROR), expectedPsn, true);
            }
        } else if (!nakSent) {
            ackLater(); // the requester's window waits for this
        }
    }

    private void handle(RocePacket p, MemorySegment segment) {
        pkt = p;
        seg = segment;
        psn = p.psn();
        flags = p.flags();
        errRecv = null;
        errRecvStatus = null;
        State s = State.CHECK_PSN;
        while (s != State.DONE) {
            if (SoftQp.TRACE) qp.trace("responder", s);
            State step = s;
            s = switch (s) {
                case CHECK_PSN -> checkPsn();
                case CHECK_OP_SEQUENCE -> checkOpSequence();
                case CHECK_LENGTH -> checkLength();
                case CHECK_RESOURCE -> checkResource();
                case CHECK_RKEY -> checkRkey();
                case EXECUTE -> execute();
                case READ_REPLY -> readReply();
                case ATOMIC_REPLY -> atomicReply();
                case COMPLETE -> complete();
                case ACKNOWLEDGE -> acknowledge();
                case DUPLICATE -> duplicate();
                case ERR_PSN_SEQUENCE -> errPsnSequence();
                case ERR_RNR -> errRnr();
                case ERR_INVALID_REQUEST -> fatal(Aeth.NAK_INVALID_REQUEST);
                case ERR_REMOTE_ACCESS -> fatal(Aeth.NAK_REMOTE_ACCESS_ERROR);
                case ERR_REMOTE_OPERATIONAL -> fatal(Aeth.NAK_REMOTE_OPERATIONAL_ERROR);
                case DONE -> State.DONE;
            };
            if (s == State.DONE) lastOutcome = step;
        }
        pkt = null;
        seg = null;
        target.mr = null;
    }

    // ---- checks ----------------------------------------------------------------------------------------------

    private State checkPsn() {
        int d = Psn.diff(psn, expectedPsn);
        if (d > ForgeryWatch.FAR || d < -ForgeryWatch.FAR)
            qp.suspect(); // no requester's window reaches that far: a PSN sweep
        if (d > 0) return State.ERR_PSN_SEQUENCE;
        if (d < 0) return State.DUPLICATE;
        nakSent = false;
        rnrGap = false;
        return State.CHECK_OP_SEQUENCE;
    }

    /** A SEND/WRITE continues the message in progress or starts a new one; READ/atomic start and end at once. */
    private State checkOpSequence() {
        int f = flags;
        kind = (f & SEND) != 0
                ? SEND_MESSAGE
                : (f & WRITE) != 0
                        ? WRITE_MESSAGE
                        : (f & READ) != 0 ? READ_REQUEST : (f & ATOMIC) != 0 ? ATOMIC_REQUEST : NONE;
        boolean start = (f & START) != 0;
        if (inProgress != NONE ? (kind != inProgress || start) : !start) return State.ERR_INVALID_REQUEST;
        return State.CHECK_LENGTH;
    }

    /** Every packet but the last of a message carries exactly one MTU; none carries more. */
    private State checkLength() {
        if ((flags & PAYLOAD) != 0) {
            int plen = pkt.payloadLength();
            if ((flags & END) != 0 ? plen > qp.mtu : plen != qp.mtu) return State.ERR_INVALID_REQUEST;
        }
        if ((kind == READ_REQUEST || (kind == WRITE_MESSAGE && (flags & START) != 0))
                && pkt.rethLength() > SoftContext.MAX_MSG)
            return State.ERR_INVALID_REQUEST; // longer than the device's max_msg_sz
        if (kind == SEND_MESSAGE && ((flags & START) != 0 ? 0 : recvOffset) + pkt.payloadLength() > SoftContext.MAX_MSG)
            return State.ERR_INVALID_REQUEST;
        if (kind == ATOMIC_REQUEST && (pkt.atomicVa() & 7) != 0) return State.ERR_INVALID_REQUEST;
        return State.CHECK_RESOURCE;
    }

    /** A SEND needs a receive WQE (RNR NAK when none); so does the end of a WRITE with immediate. */
    private State checkResource() {
        if (kind == SEND_MESSAGE) {
            if ((flags & START) != 0) {
                if (!qp.takeReceive()) return State.ERR_RNR;
                recvOffset = 0;
            }
            RecvWqe r = rq.first();
            if (r.localErr != null) return recvError(r, r.localErr, State.ERR_REMOTE_OPERATIONAL);
            if (recvOffset + pkt.payloadLength() > r.total)
                return recvError(r, WcStatus.LOC_LEN_ERR, State.ERR_INVALID_REQUEST);
        } else if (kind == WRITE_MESSAGE && (flags & IMMDT) != 0 && !qp.takeReceive()) {
            return State.ERR_RNR;
        }
        return State.CHECK_RKEY;
    }

    /** The rkey of a WRITE (first packet), READ or atomic: the region or window, its bounds and rights, the QP's rights. */
    private State checkRkey() {
        switch (kind) {
            case WRITE_MESSAGE -> {
                if ((flags & START) == 0) return State.EXECUTE;
                long dlen = pkt.rethLength();
                if (!target.resolve(qp, pkt.rethRkey(), pkt.rethVa(), dlen, Access.REMOTE_WRITE.bit))
                    return State.ERR_REMOTE_ACCESS;
                write.start(target.mr, target.off, dlen);
            }
            case READ_REQUEST -> {
                if (!target.resolve(qp, pkt.rethRkey(), pkt.rethVa(), pkt.rethLength(), Access.REMOTE_READ.bit))
                    return State.ERR_REMOTE_ACCESS;
            }
            case ATOMIC_REQUEST -> {
                if (!target.resolve(qp, pkt.atomicRkey(), pkt.atomicVa(), 8, Access.REMOTE_ATOMIC.bit))
                    return State.ERR_REMOTE_ACCESS;
            }
            default -> {}
        }
        return State.EXECUTE;
    }

    // ---- execution -------------------------------------------------------------------------------------------

    private State execute() {
        int plen = pkt.payloadLength();
        boolean end = (flags & END) != 0;
        switch (kind) {
            case SEND_MESSAGE -> {
                RecvWqe r = rq.first();
                if (plen > 0 && !r.scatter(seg, pkt.payloadOffset(), recvOffset, plen))
                    return recvError(r, WcStatus.LOC_PROT_ERR, State.ERR_REMOTE_OPERATIONAL);
                recvOffset += plen;
            }
            case WRITE_MESSAGE -> {
                if (plen > write.remaining() || (end && plen != write.remaining())) return State.ERR_INVALID_REQUEST;
                if (plen > 0 && !write.writeNext(seg, pkt.payloadOffset(), plen)) return State.ERR_REMOTE_ACCESS;
            }
            case READ_REQUEST -> {
                return State.READ_REPLY;
            }
            case ATOMIC_REQUEST -> {
                return State.ATOMIC_REPLY;
            }
            default -> {
                return State.ERR_INVALID_REQUEST;
            }
        }
        if (!end) {
            inProgress = kind;
            return State.ACKNOWLEDGE;
        }
        inProgress = NONE;
        msn = Psn.next(msn);
        return (flags & COMP) != 0 ? State.COMPLETE : State.ACKNOWLEDGE;
    }

    /** The last packet of a SEND (or of a WRITE with immediate) completes the receive WQE. */
    private State complete() {
        RecvWqe r = rq.first();
        WcOpcode op = WcOpcode.RECV;
        int len = (int) recvOffset, wcFlags = 0, imm = 0;
        if (kind != SEND_MESSAGE) { // a WRITE with immediate
            op = WcOpcode.RECV_RDMA_WITH_IMM;
            len = (int) write.total();
            wcFlags = WorkCompletion.WITH_IMM;
            imm = pkt.immediate();
        } else if ((flags & IMMDT) != 0) {
            wcFlags = WorkCompletion.WITH_IMM;
            imm = pkt.immediate();
        } else if ((flags & IETH) != 0) {
            imm = pkt.invalidateRkey();
            if (SoftMw.invalidate(qp, imm, true) != WcStatus.SUCCESS)
                return recvError(r, WcStatus.MW_BIND_ERR, State.ERR_INVALID_REQUEST);
            wcFlags = WorkCompletion.WITH_INV;
        }
        rq.head++;
        qp.recvCq().push(r.wrId, WcStatus.SUCCESS, op, len, imm, wcFlags, qp.qpNum(), qp.destQpn, pkt.solicitedEvent());
        return State.ACKNOWLEDGE;
    }

    /** The request is executed: expect the next PSN; ACK at the end of the burst when the packet asked for one. */
    private State acknowledge() {
        expectedPsn = Psn.next(psn);
        if (pkt.ackReq()) ackLater();
        return State.DONE;
    }

    /** Records a READ in the resource ring and starts sending its responses. */
    private State readReply() {
        ResponderResource r = nextResource();
        if (r == null) return State.ERR_INVALID_REQUEST;
        long dlen = pkt.rethLength();
        r.atomic = false;
        r.firstPsn = psn;
        r.mr = target.mr;
        r.off = target.off;
        r.length = dlen;
        r.va = pkt.rethVa();
        r.rkey = pkt.rethRkey();
        r.start(packets(dlen));
        expectedPsn = Psn.add(psn, r.npkts);
        msn = Psn.next(msn);
        sendReplies();
        return State.DONE;
    }

    private int packets(long length) {
        return (int) Math.max(1, (length + qp.mtu - 1) / qp.mtu);
    }

    /** Executes an atomic (once: a duplicate is answered from its resource) and sends the original value. */
    private State atomicReply() {
        ResponderResource r = nextResource();
        if (r == null) return State.ERR_INVALID_REQUEST;
        long orig;
        try {
            if (target.mr.isClosed()) throw new IllegalStateException();
            if (pkt.opcode() == COMPARE_SWAP.code()) {
                orig = (long)
                        LONG.compareAndExchange(target.mr.seg, target.off, pkt.atomicCompare(), pkt.atomicSwapAdd());
            } else {
                orig = (long) LONG.getAndAdd(target.mr.seg, target.off, pkt.atomicSwapAdd());
            }
        } catch (RuntimeException e) {
            return State.ERR_REMOTE_OPERATIONAL;
        }
        r.atomic = true;
        r.firstPsn = psn;
        r.orig = orig;
        r.mr = null;
        r.va = pkt.atomicVa();
        r.rkey = pkt.atomicRkey();
        r.start(1);
        expectedPsn = Psn.next(psn);
        msn = Psn.next(msn);
        sendReplies();
        return State.DONE;
    }

    /**
     * An old PSN: a READ or atomic duplicate is answered from its resource (an atomic never executes twice), a READ
     * with exactly the part it asks for; other duplicates are re-ACKed.
     */
    private State duplicate() {
        qp.count(Counter.RX_DUPLICATE_REQUEST);
        if ((flags & (READ | ATOMIC)) == 0) {
            ackLater(); // re-ACK duplicates with the latest PSN
            return State.DONE;
        }
        for (ResponderResource r : resources) {
            if (!r.valid) continue;
            if ((flags & READ) != 0 && !r.atomic && Psn.inWindow(psn, r.firstPsn, r.npkts)) {
                int k = Psn.diff(psn, r.firstPsn);
                long skip = (long) k * qp.mtu, asked = pkt.rethLength();
                if (pkt.rethRkey() != r.rkey || pkt.rethVa() != r.va + skip || asked > r.length - skip)
                    break; // not what was asked before
                r.replay(k, k + packets(asked));
                sendReplies();
                return State.DONE;
            }
            if ((flags & ATOMIC) != 0 && r.atomic && r.firstPsn == psn) {
                if (pkt.atomicRkey() != r.rkey || pkt.atomicVa() != r.va) break;
                r.replay(0, 1);
                sendReplies();
                return State.DONE;
            }
        }
        qp.count(Counter.RX_DUPLICATE_UNANSWERED); // too old to answer (the requester will time out), or not a
        // duplicate at all
        return State.DONE;
    }

    // ---- errors ----------------------------------------------------------------------------------------------

    /**
     * A packet beyond the expected PSN: one NAK per gap asks the requester to go back. In the selective-repeat mode
     * the packet is kept ({@link HeldRequests}: up to the requester's window ahead, not while the QP is guarded against
     * forgery) and the NAK carries jrdma's mark, which tells a jrdma requester in the same mode to send only the
     * missing packet; a requester without the mode (rxe, a NIC) goes back N and what it sends again that is held
     * already is dropped here as a duplicate once the gap is filled.
     */
    private State errPsnSequence() {
        qp.count(Counter.RX_OUT_OF_SEQUENCE);
        boolean holding = holding(), kept = false;
        if (holding) {
            if (held == null) held = new HeldRequests(HeldRequests.REACH * qp.requester.window);
            switch (keepOrPlace()) {
                case KEPT -> {
                    qp.count(Counter.RX_OUT_OF_ORDER_HELD);
                    kept = true;
                }
                case CONFLICT -> { // two different packets for one PSN: one is forged
                    qp.count(Counter.RX_OUT_OF_ORDER_NOT_HELD);
                    qp.suspect();
                }
                default -> qp.count(Counter.RX_OUT_OF_ORDER_NOT_HELD);
            }
        }
        if (!nakSent) {
            nakSent = true;
            sendInOrder(Aeth.nakSyndrome(Aeth.NAK_PSN_SEQUENCE_ERROR), expectedPsn, holding);
        } else if (holding && !rnrGap && (pkt.ackReq() || kept && countToReport(held.count()))) {
            // the requester asks how far it may go, or the gap may have just become a loss to it (it resends only once
            // this end keeps its reordering threshold of packets beyond the gap): at the end of the burst the NAK
            // again, with what is kept beyond the gap then (flushAck; its window counts only packets not known to have
            // arrived, so it runs past the hole)
            ackLater();
        }
        return State.DONE;
    }

    /**
     * Whether {@code kept} packets beyond a gap is a count the requester must hear at once: N, 2N, 4N, ... for this
     * end's reordering threshold N. The requester's own threshold may be higher than N (it follows the batches it
     * sends, {@link Completer#reorderThreshold}), and this end cannot know it: a count that doubles reaches it within
     * twice the packets, at a handful of NAKs per gap.
     */
    private boolean countToReport(int kept) {
        int n = qp.reorderThreshold;
        if (!qp.completer.reorderFollowsBatch) return kept == n; // as before guest21
        return kept >= n && kept % n == 0 && Integer.bitCount(kept / n) == 1;
    }

    /**
     * Keeps the packet beyond the gap: a WRITE MIDDLE or LAST of the WRITE message in progress goes where it belongs at
     * once ({@link #placeable}); anything else is held whole, to be executed with every check in sequence.
     */
    private HeldRequests.Outcome keepOrPlace() {
        if (!held.inRange(psn, expectedPsn)) return HeldRequests.Outcome.OUT_OF_RANGE;
        int d = Psn.diff(psn, expectedPsn);
        if (held.isPlaced(psn)) {
            if (held.samePlacedHeader(pkt.buffer(), pkt.offset(), pkt.payloadOffset() - pkt.offset(), psn)
                    && inProgress == WRITE_MESSAGE
                    && write.samePlaced(seg, pkt.payloadOffset(), pkt.payloadLength(), d, qp.mtu))
                return HeldRequests.Outcome.DUPLICATE;
            held.forget(psn); // a gap again: what is sent for it next is placed or executed over these bytes
            return HeldRequests.Outcome.CONFLICT;
        }
        // a WRITE MIDDLE/LAST of the message in progress: its RETH was checked in sequence and its PSN says where
        // its bytes go (WriteMessage), and nothing between can change that target
        if (!held.has(psn)
                && inProgress == WRITE_MESSAGE
                && write.placeable(pkt.opcode(), pkt.payloadLength(), d, qp.mtu)
                && write.place(seg, pkt.payloadOffset(), pkt.payloadLength(), d, qp.mtu)) {
            held.markPlaced(
                    pkt.buffer(),
                    pkt.offset(),
                    pkt.payloadOffset() - pkt.offset(),
                    psn,
                    new HeldRequests.Placed(pkt.payloadLength(), (flags & END) != 0, pkt.ackReq()));
            qp.count(Counter.RX_OUT_OF_ORDER_PLACED);
            return HeldRequests.Outcome.KEPT;
        }
        return held.hold(pkt.buffer(), pkt.offset(), pkt.lengthWithoutCarriedAck(), psn, expectedPsn);
    }

    /**
     * The placed packet at the expected PSN is next in sequence: its bytes are in place, so only the message's
     * progress moves on (and its ACK is owed when it asked). False, forgetting what is kept, if the message in progress
     * is not the one it was placed for (it cannot be: the message moves on only through its own packets, and an error
     * clears what is kept).
     */
    private boolean countPlaced(HeldRequests.Placed p) {
        if (inProgress != WRITE_MESSAGE
                || p.payloadLength() > write.remaining()
                || p.end() != (p.payloadLength() == write.remaining())) {
            held.clear();
            return false;
        }
        nakSent = false;
        rnrGap = false;
        write.advance(p.payloadLength());
        if (p.end()) {
            inProgress = NONE;
            msn = Psn.next(msn);
        }
        expectedPsn = Psn.next(expectedPsn);
        if (p.ackReq()) ackLater();
        return true;
    }

    /**
     * Receiver not ready: the requester waits and resends from this PSN; later packets of its pipeline are dropped
     * quietly, or in the selective-repeat mode kept unanswered, and the NAK's mark tells the requester to send only
     * this one again (the kept ones follow it in sequence, each taking its receive); rxe and NICs go back N.
     */
    private State errRnr() {
        boolean holding = holding();
        sendInOrder(Aeth.rnrNakSyndrome(qp.minRnrTimer), psn, holding);
        nakSent = true;
        rnrGap = true;
        return State.DONE;
    }

    /** Notes that the receive WQE in use completes with {@code status} when the error state NAKs. */
    private State recvError(RecvWqe r, WcStatus status, State next) {
        errRecv = r;
        errRecvStatus = status;
        return next;
    }

    /** A class C error: NAK it, complete the receive WQE in use (if any) and move to ERR, as rxe does. */
    private State fatal(int nakCode) {
        nak(nakCode, psn);
        if (errRecv != null) {
            qp.recvCq().push(errRecv.wrId, errRecvStatus, WcOpcode.RECV, 0, 0, 0, qp.qpNum(), qp.destQpn, false);
            rq.head++;
        }
        qp.toErr();
        raiseError(nakCode);
        return State.DONE;
    }

    // ---- packets out -----------------------------------------------------------------------------------------

    /**
     * The ring slot for a new READ/atomic, or null when every slot still has replies to send for the first time (the
     * peer exceeds max_dest_rd_atomic). A stale replay in the slot is dropped ({@link ResponderResource#replayOnly}).
     */
    private ResponderResource nextResource() {
        ResponderResource r = resources[(int) (resourcesUsed % resources.length)];
        if (r.pending() && !r.replayOnly()) return null;
        if (r.pending()) qp.count(Counter.STALE_REPLAYS_DROPPED);
        resourcesUsed++;
        r.valid = false;
        return r;
    }

    /**
     * Sends pending READ responses and atomic ACKs, oldest resource first, at most a quarter of the send window per
     * turn; when more remain, the receive loop gives this QP another turn after it has served the socket again, so
     * one large READ cannot hold the device (the ACKs and NAKs of this QP wait behind its replies, in PSN order).
     * Short turns also let a duplicate request that arrives while its replies are still going out merge with them
     * instead of sending them twice.
     */
    void sendReplies() {
        turnRequested = false;
        if (!repliesPending) flushAck(); // an ACK owed for earlier requests goes before these replies
        int budget = qp.requester.ackEvery;
        long oldest = Math.max(0, resourcesUsed - resources.length);
        for (long i = oldest; i < resourcesUsed; i++) {
            ResponderResource r = resources[(int) (i % resources.length)];
            while (r.pending()) {
                if (budget-- == 0) {
                    repliesPending = true;
                    turnRequested = true;
                    qp.transport().requestTurn(qp);
                    return;
                }
                if (!sendReply(r, r.sendFrom)) return; // the QP went to ERR
                r.sent();
            }
        }
        repliesPending = false;
        if (controlDeferred) {
            controlDeferred = false;
            sendAeth(ACKNOWLEDGE.code(), deferredSyndrome, deferredPsn, 0, deferredMark);
        }
        flushAck();
    }

    /** Sends reply packet {@code k} of {@code r}: a READ response or the atomic ACK. False when the region failed (the QP is in ERR). */
    private boolean sendReply(ResponderResource r, int k) {
        if (r.atomic) {
            sendAeth(ATOMIC_ACKNOWLEDGE.code(), Aeth.ackSyndrome(Aeth.CREDITS_INVALID), r.firstPsn, r.orig, false);
            return true;
        }
        ByteBuffer b = qp.out.tx;
        int mtu = qp.mtu;
        boolean first = k == 0, last = k == r.npkts - 1;
        int opc = first && last
                ? RDMA_READ_RESPONSE_ONLY.code()
                : first
                        ? RDMA_READ_RESPONSE_FIRST.code()
                        : last ? RDMA_READ_RESPONSE_LAST.code() : RDMA_READ_RESPONSE_MIDDLE.code();
        long off = (long) k * mtu;
        int plen = (int) Math.min(mtu, r.length - off);
        int len = RocePacket.writeBth(b, 0, opc, false, PKEY, qp.destQpn, false, Psn.add(r.firstPsn, k), plen);
        if ((flags(opc) & AETH) != 0) Aeth.write(b, Bth.BYTES, Aeth.ackSyndrome(Aeth.CREDITS_INVALID), msn);
        if (plen > 0) {
            try {
                if (r.mr.isClosed()) throw new IllegalStateException();
                MemorySegment.copy(r.mr.seg, r.off + off, qp.out.txSeg, headerLength(opc), plen);
            } catch (RuntimeException e) {
                nak(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, Psn.add(r.firstPsn, k));
                qp.toErr();
                return false;
            }
        }
        qp.transmit(len);
        return true;
    }

    /** Whether the receive loop owes this QP a turn (it asked and has not had it). */
    boolean turnRequested() {
        return turnRequested;
    }

    /** A PSN sequence or RNR NAK ({@code mark}: jrdma's selective-repeat mark): at once, or after the replies ahead of it. */
    private void sendInOrder(int syndrome, int nakPsn, boolean mark) {
        if (repliesPending) {
            controlDeferred = true;
            deferredSyndrome = syndrome;
            deferredPsn = nakPsn;
            deferredMark = mark;
            return;
        }
        flushAck();
        sendAeth(ACKNOWLEDGE.code(), syndrome, nakPsn, 0, mark);
    }

    private void sendAeth(int opcode, int syndrome, int ackedPsn, long orig, boolean mark) {
        ByteBuffer b = qp.out.tx;
        int len = RocePacket.writeBth(b, 0, opcode, false, PKEY, qp.destQpn, false, ackedPsn, 0);
        if (mark) Bth.setHoldsMark(b, 0);
        // a marked sequence NAK goes only to a requester that offered the mode: its MSN field carries how many packets
        // this end keeps beyond the gap, which the requester's window does not count as in flight
        // (Completer.heldAtPeer)
        boolean markedNak = mark && Aeth.type(syndrome) == Aeth.TYPE_NAK;
        Aeth.write(b, Bth.BYTES, syndrome, markedNak ? (held != null ? held.count() : 0) : msn);
        if (opcode == ATOMIC_ACKNOWLEDGE.code()) AtomicAckEth.write(b, Bth.BYTES + Aeth.BYTES, orig);
        qp.transmit(len);
    }

    private void nak(int code, int nakPsn) {
        sendAeth(ACKNOWLEDGE.code(), Aeth.nakSyndrome(code), nakPsn, 0, false);
    }

    private void ackLater() {
        ackPsn = Psn.add(expectedPsn, -1);
        if (!ackQueued) {
            ackQueued = true;
            if (qp.transport().driving()) qp.transport().ackLater(qp);
            else flushAck();
        } else {
            qp.transport().ackAgain(qp);
        }
    }

    /** Whether a coalesced ACK is owed (racy outside the QP's monitor). */
    boolean ackOwed() {
        return ackQueued;
    }

    /** Sends the coalesced ACK (the driving thread, end of a burst; under the QP's monitor); after pending replies. */
    void flushAck() {
        if (!qp.isClosed()) sendOwedAck();
    }

    /** {@link #flushAck}, also as the QP is destroyed: an ACK held for a request to carry leaves, as a NIC's would have. */
    void sendOwedAck() {
        if (!ackQueued || repliesPending) return;
        ackQueued = false;
        QpState s = qp.state();
        if (s == QpState.ERR || s == QpState.RESET || s == QpState.INIT) return;
        if (nakOwedInstead()) { // one per receive burst however many kept packets asked
            sendAeth(ACKNOWLEDGE.code(), Aeth.nakSyndrome(Aeth.NAK_PSN_SEQUENCE_ERROR), expectedPsn, 0, true);
            return;
        }
        // in the selective-repeat mode an ACK carries the mark too: the requester learns that this end keeps what
        // follows a gap before its first loss, so a loss at the tail costs one timeout, not a go-back of the window
        sendAeth(ACKNOWLEDGE.code(), Aeth.ackSyndrome(Aeth.CREDITS_INVALID), ackPsn, 0, holding());
    }

    /** A gap is open and NAKed: the ACK owed goes as the NAK again (it acknowledges the same), with what is kept now. */
    private boolean nakOwedInstead() {
        return holding() && nakSent && !rnrGap && heldCount() > 0 && ackPsn == Psn.add(expectedPsn, -1);
    }

    /**
     * Writes the ACK owed at {@code at} in {@code b}, for a request to carry it ({@link CarriedAcks#carry}); false when
     * none is owed or it must go alone (behind pending replies, or as the NAK of an open gap).
     */
    boolean takeOwedAck(ByteBuffer b, int at) {
        if (!ackQueued || repliesPending || nakOwedInstead()) return false;
        ackQueued = false;
        CarriedAck.write(b, at, holding(), ackPsn, Aeth.ackSyndrome(Aeth.CREDITS_INVALID), msn);
        return true;
    }

    /** The responder NAKed a request and moved the QP to ERR: the affiliated error of IBA 11.6.3.1 for the NAK's code. */
    private void raiseError(int nakCode) {
        AsyncEventType event = switch (nakCode) {
            case Aeth.NAK_INVALID_REQUEST -> AsyncEventType.QP_REQ_ERR;
            case Aeth.NAK_REMOTE_ACCESS_ERROR -> AsyncEventType.QP_ACCESS_ERR;
            default -> AsyncEventType.QP_FATAL;
        };
        qp.pd().context().raise(event, qp);
    }
}
