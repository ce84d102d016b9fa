package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.*;

import dev.jrdma.soft.SendWqe.Progress;
import dev.jrdma.soft.wire.AtomicEth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Ieth;
import dev.jrdma.soft.wire.ImmDt;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.Reth;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.nio.ByteBuffer;

/**
 * The requester of an RC QP (the role of Linux rxe's {@code rxe_req.c}): turns posted send WQEs into request
 * packets. It assigns PSNs, segments messages by the path MTU, keeps at most {@link #window} packets beyond the
 * oldest unacknowledged one in flight, limits outstanding READ/atomics to max_rd_atomic, waits for FENCE, runs
 * local operations (memory window bind, local invalidate) in order, and goes back to an earlier PSN when the
 * completer asks ({@link #retry}) or an RNR wait ends. Everything runs under the QP's monitor.
 */
final class Requester {
    /** The steps of {@link #run}; the last five are where a run stops. */
    enum State {
        NEXT_WQE,
        START_WQE,
        LOCAL_OPERATION,
        SEND_PACKET,
        ERROR,
        QUEUE_EMPTY,
        WAIT_FENCE,
        WAIT_RD_ATOMIC,
        WAIT_PSN_SPACE,
        WAIT_WINDOW,
        /** DCQCN's rate allows no packet now ({@link QpCongestion#pace}): the timer brings the requester back. */
        WAIT_RATE,
        WAIT_READ_RESPONSES,
        STOPPED;

        boolean stops() {
            return ordinal() >= QUEUE_EMPTY.ordinal();
        }
    }

    private static final int PKEY = Bth.DEFAULT_PKEY;
    /**
     * At most this many PSNs are outstanding (a quarter of the PSN space): every comparison of PSNs in flight stays far
     * inside the half of the space where ordering is defined. The largest message (max_msg_sz at MTU 256) fits.
     */
    static final int MAX_OUTSTANDING_PSNS = 1 << 22;

    private final SoftQp qp;
    private final SendQueue sq;

    /** The PSN the next new WQE starts at (PSNs are assigned per WQE when it starts). */
    int nextPsn;
    /**
     * One past the last PSN a request went out for (rxe: {@code req.psn}): a response can only be about a PSN before
     * it (for a READ request, every response PSN it asks for counts as sent).
     */
    int sentEnd;
    /** READ and atomic requests sent and not yet answered (at most max_rd_atomic). */
    int rdAtomicOut;
    /**
     * {@code -Djrdma.soft.bdpPackets=N}: the window in packets (IRN's BDP cap), whatever the MTU; by default 256 KiB of
     * packets.
     */
    static final int BDP_PACKETS = Integer.getInteger("jrdma.soft.bdpPackets", 0);

    /**
     * Packets allowed in flight (IRN's BDP-FC cap), and how often a packet asks for an ACK. In flight are the packets
     * beyond the oldest unacknowledged PSN, less those a selective-repeat responder said it keeps beyond a gap
     * ({@link Completer#heldAtPeer}); never more than {@link HeldRequests#REACH} windows beyond that PSN.
     */
    int window = 256, ackEvery = 64;
    /**
     * Whether the window leaves out what the peer keeps beyond a gap ({@link #beyondWindow}); tests turn it off to
     * compare with a window that stalls at a hole.
     */
    boolean countsHeldAtPeer = true;
    /** SEND/WRITE packets sent since the last that set AckReq. */
    private int unaskedPackets;
    /** The packet being built is a selective resend: it asks for the ACK. */
    private boolean resending;
    /**
     * An RNR NAK arrived: nothing is sent until {@link #rnrDeadline}, then everything from {@link #rnrPsn} again, or
     * that packet alone when the responder keeps what followed it ({@link #rnrOnlyThat}).
     */
    boolean rnrWait;

    private int rnrPsn;
    private boolean rnrOnlyThat;
    volatile long rnrDeadline;

    // the run in progress
    private SendWqe wqe;
    private WcStatus error;
    /** Where the last run stopped (tests and tracing). */
    State stoppedAt = State.QUEUE_EMPTY;
    /**
     * One past the newest request PSN handed to the transmitter ({@link #sentEnd} moves only after the transmit, which
     * may already have sent a full batch): where a batch ends ({@link Completer#batchSent}).
     */
    int transmittedEnd;

    Requester(SoftQp qp, SendQueue sq) {
        this.qp = qp;
        this.sq = sq;
    }

    /**
     * The path MTU changed: a window of 256 KiB in flight, an ACK asked for every quarter window or quarter send queue,
     * whichever is less (as NICs do: unsignalled requests free their slots well before the queue fills).
     */
    void pathMtu(int mtu) {
        window = BDP_PACKETS > 0 ? BDP_PACKETS : Math.max(16, (256 << 10) / mtu);
        ackEvery = Math.max(1, Math.min(window, sq.capacity()) / 4);
    }

    /** RTR to RTS: the first PSN is the QP's sq_psn. */
    void start(int sqPsn) {
        nextPsn = sentEnd = transmittedEnd = sqPsn;
    }

    void reset() {
        rdAtomicOut = 0;
        rnrWait = false;
        rnrDeadline = 0;
    }

    /** {@link #run} from outside a post or a received packet (a timer, a poll): what it sends leaves in one batch. */
    void runBatched() {
        qp.out.begin();
        try {
            run();
        } finally {
            qp.out.end();
        }
    }

    /** Transmits what the send queue, the window and the READ/atomic limit allow now. */
    void run() {
        qp.cork.opened(); // what a cork held goes now, as the window allows
        if (!qp.sendsRequests() || rnrWait) return;
        State s = State.NEXT_WQE;
        while (!s.stops()) {
            if (SoftQp.TRACE) qp.trace("requester", s);
            s = switch (s) {
                case NEXT_WQE -> nextWqe();
                case START_WQE -> startWqe();
                case LOCAL_OPERATION -> localOperation();
                case SEND_PACKET -> sendPacket();
                case ERROR -> error();
                default -> throw new IllegalStateException(s.name());
            };
        }
        stoppedAt = s;
        if (s != State.STOPPED) qp.completer.completeHead();
        if (s == State.WAIT_WINDOW || s == State.QUEUE_EMPTY) qp.completer.armProbe();
    }

    private State nextWqe() {
        if (sq.next == sq.tail) return State.QUEUE_EMPTY;
        wqe = sq.at(sq.next);
        if (wqe.progress != Progress.POSTED) return State.SEND_PACKET;
        return qp.state() == QpState.SQD
                ? State.QUEUE_EMPTY
                : State.START_WQE; // SQD finishes what it started, starts nothing
    }

    /** Gives a new WQE its PSNs, after the checks that may hold it back (fence, READ/atomic limit) or fail it. */
    private State startWqe() {
        SendWqe w = wqe;
        if (w.fence && rdAtomicOut > 0) return State.WAIT_FENCE;
        if (w.localErr != null) {
            error = w.localErr;
            return State.ERROR;
        }
        if (w.local) return State.LOCAL_OPERATION;
        if (w.readOrAtomic && rdAtomicOut >= Math.max(1, qp.maxRdAtomic)) return State.WAIT_RD_ATOMIC;
        int mtu = qp.mtu;
        int npkts = w.op.isAtomic() ? 1 : (int) Math.max(1, (w.total + mtu - 1) / mtu);
        if (Psn.diff(nextPsn, qp.completer.oldestUnacked) + (long) npkts > MAX_OUTSTANDING_PSNS)
            return State.WAIT_PSN_SPACE;
        if (w.readOrAtomic) rdAtomicOut++;
        w.firstPsn = nextPsn;
        w.npkts = npkts;
        w.lastPsn = Psn.add(w.firstPsn, w.npkts - 1);
        nextPsn = Psn.add(nextPsn, w.npkts);
        w.nextPkt = 0;
        w.readRecv = 0;
        w.progress = Progress.STARTED;
        return State.SEND_PACKET;
    }

    /** Memory window bind or local invalidate: executed in send queue order, no packet. */
    private State localOperation() {
        SendWqe w = wqe;
        WcStatus st = w.op == WrOpcode.BIND_MW ? bind(w) : SoftMw.invalidate(qp, w.invRkey, false);
        if (st != WcStatus.SUCCESS) {
            error = st;
            return State.ERROR;
        }
        w.progress = Progress.DONE;
        sq.next++;
        return State.NEXT_WQE;
    }

    /**
     * Sends the WQE's next packet within the window. An atomic is one request packet. A READ is asked for one window of
     * responses at a time (one request per window, the next when its responses are in), so READ responses are paced by
     * the same window as requests and no responder sends more than a window at once for us.
     */
    private State sendPacket() {
        SendWqe w = wqe;
        if (w.progress != Progress.STARTED || w.nextPkt >= w.npkts) {
            sq.next++;
            return State.NEXT_WQE;
        }
        if (w.op == WrOpcode.RDMA_READ && w.nextPkt > w.readRecv) return State.WAIT_READ_RESPONSES;
        if (!w.op.isAtomic() && beyondWindow(Psn.add(w.firstPsn, w.nextPkt))) return State.WAIT_WINDOW;
        if (qp.congestion.dcqcn.limited && !qp.congestion.pace(w, w.nextPkt)) return State.WAIT_RATE;
        if (!send(w, w.nextPkt)) {
            error = WcStatus.LOC_PROT_ERR;
            return State.ERROR;
        }
        w.nextPkt = w.op == WrOpcode.RDMA_READ ? readChunkEnd(w, w.nextPkt) : w.op.isAtomic() ? w.npkts : w.nextPkt + 1;
        return State.SEND_PACKET;
    }

    /**
     * Whether packet {@code psn} may not go yet: a window beyond the oldest unacknowledged PSN, unless the peer keeps
     * what follows a gap and has said how many it keeps (selective repeat): then the window counts only packets not
     * known to have arrived, up to {@link HeldRequests#REACH} windows beyond it (as far as the peer keeps), so a hole
     * does not stall the window while it is repaired.
     */
    boolean beyondWindow(int psn) {
        Completer c = qp.completer;
        int d = Psn.diff(psn, c.oldestUnacked);
        if (d < window) return false;
        if (!qp.selectiveRepeat || !c.peerHolds || !countsHeldAtPeer) return true;
        return d >= HeldRequests.REACH * window || d - c.heldAtPeer >= window;
    }

    /** The packet after the READ request chunk holding packet {@code k}: chunks are window-sized, aligned on the READ's start. */
    int readChunkEnd(SendWqe w, int k) {
        return (int) Math.min(w.npkts, (long) (k / window + 1) * window);
    }

    /** The first packet of the READ request chunk holding packet {@code k}. */
    int readChunkStart(int k) {
        return k / window * window;
    }

    private State error() {
        qp.completer.completeWithError(wqe, error);
        return State.STOPPED;
    }

    /** Builds and sends packet {@code k} of a request. False when its memory cannot be read. */
    private boolean send(SendWqe w, int k) {
        ByteBuffer b = qp.out.tx;
        int mtu = qp.mtu;
        int destQpn = qp.destQpn;
        int psn = Psn.add(w.firstPsn, k);
        int len, plen = 0;
        boolean rttSample = false;
        if (w.op == WrOpcode.RDMA_READ) {
            long off = (long) k * mtu, end = Math.min(w.total, (long) readChunkEnd(w, k) * mtu);
            len = RocePacket.writeBth(b, 0, RDMA_READ_REQUEST.code(), false, PKEY, destQpn, true, psn, 0);
            w.readAskedAt = k;
            Reth.write(b, Bth.BYTES, w.remoteAddr + off, w.rkey, end - off);
        } else if (w.op.isAtomic()) {
            boolean cas = w.op == WrOpcode.ATOMIC_CMP_AND_SWP;
            len = RocePacket.writeBth(
                    b, 0, cas ? COMPARE_SWAP.code() : FETCH_ADD.code(), false, PKEY, destQpn, true, psn, 0);
            AtomicEth.write(b, Bth.BYTES, w.remoteAddr, w.rkey, cas ? w.swap : w.compareAdd, cas ? w.compareAdd : 0);
        } else {
            long off = (long) k * mtu;
            plen = (int) Math.min(mtu, w.total - off);
            boolean last = k == w.npkts - 1;
            int opc = opcode(w.op, k == 0, last);
            boolean ackReq = asksForAck(w, last, psn);
            // Karn: a packet sent before (a resend, or a go-back's) measures no round trip
            rttSample = ackReq && !resending && Psn.diff(psn, sentEnd) >= 0;
            len = RocePacket.writeBth(b, 0, opc, w.solicited && last, PKEY, destQpn, ackReq, psn, plen);
            int fl = flags(opc);
            if ((fl & RETH) != 0) Reth.write(b, Bth.BYTES, w.remoteAddr, w.rkey, w.total);
            if ((fl & IMMDT) != 0) ImmDt.write(b, immOffset(opc), w.imm);
            if ((fl & IETH) != 0) Ieth.write(b, immOffset(opc), w.invRkey);
            if (plen > 0 && !w.gather(off, qp.out.txSeg, headerLength(opc), plen)) return false;
        }
        // the offer of the selective-repeat mode (jrdma's mark on every request): a jrdma responder in the mode that
        // executes it in sequence keeps what follows a gap; rxe and NICs ignore the reserved bit
        if (qp.selectiveRepeat) Bth.setHoldsMark(b, 0);
        qp.carried.offer(b); // jrdma's carried ACKs, offered to a known jrdma peer
        len = qp.carried.carry(b, len, plen); // the ACK this QP's responder owes, when the peer takes it
        qp.completer.requestSent(psn, rttSample); // the RTT sample and the retry timer, one clock read
        int after = Psn.add(psn, 1);
        if (Psn.after(after, transmittedEnd)) transmittedEnd = after; // before the transmit: it may end a full batch
        qp.transmit(len);
        qp.congestion.sent(len);
        int end = w.op == WrOpcode.RDMA_READ ? Psn.add(w.firstPsn, readChunkEnd(w, k)) : Psn.add(psn, 1);
        if (Psn.after(end, sentEnd)) sentEnd = end;
        return true;
    }

    /**
     * Whether SEND/WRITE packet {@code psn} sets AckReq (IBA 9.7.5.1.1: the responder must acknowledge such a packet and
     * may leave the others unacknowledged). As NICs and rxe ({@code RXE_MAX_UNACKED_PSNS}) do, not every packet asks:
     * the last packet of a signalled message (its completion waits for the ACK), the last one the requester sends
     * before it stops (nothing queued after it, or the window closes: an ACK must come for it to go on), and one in
     * every {@link #ackEvery} so that a long run of unsignalled messages frees its window and send queue as it goes.
     * Behind a cork ({@link SendCork}) "nothing queued after it" is the last post of a batch: one ACK per batch. A READ
     * or atomic request always asks (its response is the acknowledgement).
     */
    private boolean asksForAck(SendWqe w, boolean last, int psn) {
        boolean ask = resending
                || (last && (w.signaled || !remoteRequestFollows()))
                || ++unaskedPackets >= ackEvery
                || beyondWindow(Psn.add(psn, 1))
                || qp.state() == QpState.SQD; // it starts nothing after this: the ACK must not wait for a later request
        if (ask) unaskedPackets = 0;
        return ask;
    }

    /**
     * Whether the WQE after the one being sent is a request that will go out behind it (it can ask for the ACK then); a
     * local operation (bind, local invalidate) or a WQE that fails locally sends nothing.
     */
    private boolean remoteRequestFollows() {
        if (sq.next + 1 == sq.tail) return false;
        SendWqe after = sq.at(sq.next + 1);
        return !after.local && after.localErr == null;
    }

    /** The opcode of a SEND/WRITE packet by its place in the message. */
    private static int opcode(WrOpcode op, boolean first, boolean last) {
        return switch (op) {
            case SEND ->
                first && last
                        ? SEND_ONLY.code()
                        : first ? SEND_FIRST.code() : last ? SEND_LAST.code() : SEND_MIDDLE.code();
            case SEND_WITH_IMM ->
                first && last
                        ? SEND_ONLY_WITH_IMMEDIATE.code()
                        : first ? SEND_FIRST.code() : last ? SEND_LAST_WITH_IMMEDIATE.code() : SEND_MIDDLE.code();
            case SEND_WITH_INV ->
                first && last
                        ? SEND_ONLY_WITH_INVALIDATE.code()
                        : first ? SEND_FIRST.code() : last ? SEND_LAST_WITH_INVALIDATE.code() : SEND_MIDDLE.code();
            case RDMA_WRITE ->
                first && last
                        ? RDMA_WRITE_ONLY.code()
                        : first ? RDMA_WRITE_FIRST.code() : last ? RDMA_WRITE_LAST.code() : RDMA_WRITE_MIDDLE.code();
            case RDMA_WRITE_WITH_IMM ->
                first && last
                        ? RDMA_WRITE_ONLY_WITH_IMMEDIATE.code()
                        : first
                                ? RDMA_WRITE_FIRST.code()
                                : last ? RDMA_WRITE_LAST_WITH_IMMEDIATE.code() : RDMA_WRITE_MIDDLE.code();
            default -> throw new IllegalArgumentException(op + " is not sent as SEND/WRITE packets");
        };
    }

    /** Executes a BIND_MW WQE (type 1 from bindMemoryWindow, type 2 from a work request). */
    private WcStatus bind(SendWqe w) {
        SoftMw mw = w.bindMw;
        SoftMr mr = w.bindMr;
        SoftPd pd = qp.pd();
        if (mw.isClosed() || mw.pd != pd) return WcStatus.MW_BIND_ERR;
        boolean type1 = mw.type == MwType.TYPE_1;
        if (!type1) {
            if (mw.binding != null) return WcStatus.MW_BIND_ERR; // a type 2 window must be invalidated first
            if ((w.bindRkey >>> 8) != mw.keyIndex) return WcStatus.MW_BIND_ERR;
        }
        if (type1 && w.bindLen == 0) {
            mw.binding = null;
            return WcStatus.SUCCESS;
        }
        if (mr.isClosed()
                || mr.pd != pd
                || (mr.accessBits & Access.MW_BIND.bit) == 0
                || !mr.contains(w.bindAddr, w.bindLen)) return WcStatus.MW_BIND_ERR;
        int acc = w.bindAccess & (Access.REMOTE_READ.bit | Access.REMOTE_WRITE.bit | Access.REMOTE_ATOMIC.bit);
        if ((acc & (Access.REMOTE_WRITE.bit | Access.REMOTE_ATOMIC.bit)) != 0
                && (mr.accessBits & Access.LOCAL_WRITE.bit) == 0) return WcStatus.MW_BIND_ERR;
        mw.binding = new SoftMw.Binding(w.bindRkey, mr, w.bindAddr, w.bindLen, acc, type1 ? null : qp);
        mw.rkey = w.bindRkey;
        return WcStatus.SUCCESS;
    }

    /**
     * Go-back-N (rxe's {@code req_retry}): sends again from {@code psn}, i.e. the WQE holding that PSN (from that
     * packet; a READ from its first missing response) and every started WQE after it.
     */
    void retry(int psn) {
        int end = sq.tail;
        int start = -1;
        for (int i = sq.head; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.POSTED) break;
            if (w.progress == Progress.DONE || w.local) continue;
            if (Psn.diff(w.lastPsn, psn) >= 0) {
                start = i;
                break;
            }
        }
        if (start < 0) return;
        qp.count(Counter.RETRANSMITS);
        for (int i = start; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.POSTED) break;
            if (w.progress == Progress.DONE || w.local) continue;
            if (w.op == WrOpcode.RDMA_READ) w.nextPkt = w.readRecv;
            else if (w.op.isAtomic()) w.nextPkt = 0;
            else w.nextPkt = i == start ? Math.max(0, Psn.diff(psn, w.firstPsn)) : 0;
        }
        sq.next = start;
        qp.completer.restartRetryTimer();
    }

    /**
     * Selective repeat ({@link SoftQp#selectiveRepeat}): sends again only the SEND/WRITE packet at {@code psn}, asking
     * for the ACK (which tells how far the responder got with the packets it held). False, sending nothing, when
     * {@code psn} is not a SEND/WRITE packet that went out (a READ or atomic goes back N instead) or its memory can no
     * longer be read (go-back-N then fails the request).
     */
    boolean resendOne(int psn) {
        SendWqe w = sentSendOrWrite(psn);
        if (w == null) return false;
        resending = true;
        try {
            if (!send(w, Psn.diff(psn, w.firstPsn))) return false;
        } finally {
            resending = false;
        }
        qp.count(Counter.TX_SELECTIVE_RESENDS);
        return true;
    }

    /** Whether {@link #resendOne} can send packet {@code psn} again: a SEND/WRITE packet that went out. */
    boolean canResendOne(int psn) {
        return sentSendOrWrite(psn) != null;
    }

    /** The started SEND/WRITE WQE whose packet {@code psn} has been sent; null when none. */
    private SendWqe sentSendOrWrite(int psn) {
        int end = sq.tail;
        for (int i = sq.head; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.POSTED) return null;
            if (w.progress != Progress.STARTED || w.local || w.readOrAtomic) continue;
            int k = Psn.diff(psn, w.firstPsn);
            if (k >= 0 && k < w.npkts) return k < w.nextPkt || sq.next != i ? w : null;
        }
        return null;
    }

    /** An RNR NAK for {@code psn}: wait {@code nanos}, then send again from it ({@code onlyThat}: it alone). */
    void waitRnr(int psn, long nanos, boolean onlyThat) {
        rnrWait = true;
        rnrPsn = psn;
        rnrOnlyThat = onlyThat;
        rnrDeadline = qp.clock().nanoTime() + nanos;
        qp.timer().wake(rnrDeadline);
    }

    /** The RNR wait is over (timer). */
    void endRnrWait() {
        rnrDeadline = 0;
        rnrWait = false;
        if (!rnrOnlyThat || !resendOne(rnrPsn)) retry(rnrPsn); // a READ or atomic is never RNR-NAKed
        run();
    }
}
