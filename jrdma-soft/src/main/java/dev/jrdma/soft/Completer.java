package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.*;

import dev.jrdma.soft.SendWqe.Progress;
import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The completer of an RC QP (the role of Linux rxe's {@code rxe_comp.c}): reads what the responder sent back
 * (ACK, NAK, RNR NAK, READ responses, atomic ACKs), marks send WQEs done and completes them in order, places READ
 * data and atomic results, and decides on retries: go-back-N on a PSN sequence NAK, on a gap in READ responses, on an
 * implicit NAK (a later request acknowledged while a READ/atomic response is missing) and on the retransmission
 * timeout it owns; an RNR wait on an RNR NAK. Everything runs under the QP's monitor.
 *
 * <p><b>Backing off.</b> The QP's timeout is the least a requester waits for an acknowledgement (IBA's Local ACK
 * Timeout), not the most: each timeout in a row without progress doubles the next wait, up to
 * {@link #MAX_BACKOFF_NANOS} (or the QP's timeout when that is longer), and progress starts again from the QP's
 * timeout. The responder of a software device is a thread of an ordinary process: on a loaded host the scheduler can
 * keep it off the CPU for longer than timeout x (retry_cnt + 1), and with a fixed wait perftest's timeout 14 and
 * retry_cnt 7 gave up after 0.54 s over UDP and over the same-host rings alike, while TCP, which backs off, carried on
 * (the traces: jrdma-bench/README.md, "The RETRY_EXC_ERR under load"). With the back-off that peer has about 5 s; a
 * peer that is gone still ends in RETRY_EXC_ERR after retry_cnt + 1 timeouts, later than with fixed waits.
 */
final class Completer {
    /** The steps of {@link #receive}. */
    enum State {
        CHECK_PSN,
        CHECK_ACK,
        ACK,
        RNR_NAK,
        SEQUENCE_NAK,
        FATAL_NAK,
        READ_RESPONSE,
        ATOMIC_RESPONSE,
        COMPLETE,
        DROP,
        DONE
    }

    private final SoftQp qp;
    private final SendQueue sq;

    /** The oldest PSN not yet acknowledged (rxe: {@code comp.psn}). */
    int oldestUnacked;

    private int retryLeft, rnrLeft;
    /**
     * A READ/atomic re-request (after a response gap or an implicit NAK) from {@link #readRetryPsn} is under way:
     * further gaps are ignored until the response at that PSN arrives (on a FIFO path every stale packet of the old
     * burst comes before it), the WQE completes, or the timer retries. Without this, stale packets of the old burst
     * would each trigger another replay: a storm.
     */
    private boolean readRetryActive;

    private int readRetryPsn;
    /**
     * A go-back from {@link #oldestUnacked} (a sequence NAK or a timeout) is under way and nothing was acknowledged
     * since (rxe: {@code started_retry}): a sequence NAK for that same PSN (a duplicate of the one that started it, or
     * one the old burst still carried) is ignored, neither a retry of its own nor a use of retry_cnt. A NAK at a later
     * PSN acknowledges progress first, which ends the go-back, so a loss inside the replay is repaired at once; a
     * timeout always retries.
     */
    private boolean goBackStarted;
    /** The longest wait a back-off reaches (see the class comment), unless the QP's timeout is longer. */
    static final long MAX_BACKOFF_NANOS = 1_000_000_000L;
    /** Timeouts in a row without progress: the next wait is the QP's timeout doubled that many times (capped). */
    private int timeoutsInARow;
    /** When the oldest outstanding request times out; 0 when nothing is armed. */
    volatile long retryDeadline;
    /** The wait {@link #retryDeadline} was armed with (how late a firing is, is measured against it). */
    private long retryPeriod;
    /**
     * A firing of the timer more than its own period late (the device's timer thread was kept off the CPU: a starved
     * host, not a silent peer) resends without counting a retry, at most this many times in a row without progress:
     * so a peer that is gone is still reported, at most this many periods later (see {@link #onRetryTimeout}).
     */
    static final int MAX_LATE_FORGIVEN = 3;
    /** Late firings forgiven since the last progress. */
    private int lateForgiven;
    /**
     * The selective-repeat mode: the peer has sent an ACK or NAK with jrdma's mark, so it keeps what arrives after a gap,
     * and a timeout sends only the oldest unacknowledged packet and the last one sent ({@link #resendAfterTimeout}).
     */
    boolean peerHolds;
    /**
     * The packets beyond {@link #oldestUnacked} the peer said it keeps (the MSN field of its last marked sequence NAK,
     * no more than were sent): the requester's window does not count them as in flight. 0 when anything moves the
     * window.
     */
    int heldAtPeer;
    /**
     * The last selective resend: its PSN, and how many packets beyond it had gone out before it. A later marked NAK
     * for that PSN that counts more packets kept beyond it than that has seen a packet sent after the resend, so the
     * resend was lost (the path keeps order; a reordered one costs one packet more): it goes again at once instead of
     * after a timeout ({@link #resendIfLost}).
     */
    private int resentPsn, sentBeyondResend = -1;

    /**
     * {@code -Djrdma.soft.reorderFollowsBatch=false}: the reordering threshold is {@link SoftQp#reorderThreshold} only,
     * as before guest21 (for comparisons).
     */
    static final boolean REORDER_FOLLOWS_BATCH = !"false".equals(System.getProperty("jrdma.soft.reorderFollowsBatch"));
    /** {@link #REORDER_FOLLOWS_BATCH} for this QP (tests set it directly). */
    boolean reorderFollowsBatch = REORDER_FOLLOWS_BATCH;
    /**
     * Where the last {@link #BATCH_ENDS} batches of new request packets ended (one {@link Link} send each, one system
     * call: a GSO batch or a {@code sendmmsg}; {@link Requester#transmittedEnd} when it left), oldest first from
     * {@link #batchEndsNext}; allocated at RTS in the selective-repeat mode. A path that reorders does so
     * by whole batches (the guest's veth hands a batch to the backlog of the CPU that sent it, so the next batch, sent
     * from the other vCPU, can arrive first), and which batch a missing packet left in says what may have overtaken it
     * ({@link #takenForLost}).
     */
    private int[] batchEnds;

    private int batchEndsNext, batchEndsKept;
    static final int BATCH_ENDS = 256;

    /**
     * The selective-repeat mode's probe (IRN's RTO_low): while the requester is stopped with packets outstanding, the
     * retry deadline is brought forward to a few round trips ({@link #armProbe}); when it fires without progress the
     * oldest unacknowledged packet and the last one sent go again alone, without counting a retry, and the IBA
     * timeout it stood in front of ({@link #probeUntil}) is armed again. It repairs what no later packet can reveal: a
     * lost resend, NAK or ACK when nothing more goes out (the window at its reach, the send queue empty), at a few
     * round trips instead of the QP's timeout (perftest's 14: 67 ms). Doubled per probe without progress. Armed only
     * within {@link #PROBE_AFTER_LOSS_NANOS} of a loss seen ({@link #lossSeenAt}): on a path that loses nothing a late
     * answer is a peer whose threads wait for a CPU, and probing it sent packets again for nothing (on a loaded host
     * hundreds of times a second; netty-bench's request rate fell by a quarter on a quiet machine, ten-fold under
     * load). A lost answer on such a path costs the QP's timeout, as it does with go-back-N.
     */
    private long probeAt, probeUntil;
    /** How long after a loss seen the probe is armed. */
    static final long PROBE_AFTER_LOSS_NANOS = 1_000_000_000L;
    /** When a loss was last seen (a sequence NAK, a retry timeout), if {@link #lossSeen}; a probe's own resends are not one. */
    private long lossSeenAt;

    private boolean lossSeen;

    private int probesInARow;
    /** The least wait of a probe. */
    static final long PROBE_FLOOR_NANOS = 200_000;
    /** {@code -Djrdma.soft.probeDeviation=false}: the probe waits 4 x srtt only, as before (for comparisons). */
    static final boolean PROBE_FROM_DEVIATION = !"false".equals(System.getProperty("jrdma.soft.probeDeviation"));
    /** A smoothed round trip (a request asking for an ACK to the response covering it, Karn's rule), 0 before one. */
    long srttNanos;
    /** The round trip's mean deviation (RFC 6298's RTTVAR), 0 before a sample. */
    long rttVarNanos;
    /**
     * {@code -Djrdma.soft.rttTimeout=false}: the retransmission timer waits the QP's timeout only, however long the
     * measured round trip ({@link #retryTimeout}).
     */
    static final boolean RTT_TIMEOUT = !"false".equals(System.getProperty("jrdma.soft.rttTimeout"));

    private int rttPsn;
    private long rttSentAt;

    /**
     * {@code -Djrdma.soft.rttAcrossNaks=false}: a sequence NAK ends the round-trip sample under way, as before guest21
     * (for comparisons).
     */
    static final boolean RTT_ACROSS_NAKS = !"false".equals(System.getProperty("jrdma.soft.rttAcrossNaks"));
    /** {@link #RTT_ACROSS_NAKS} for this QP (tests set it directly). */
    boolean rttAcrossNaks = RTT_ACROSS_NAKS;
    /** Round-trip samples taken (tests). */
    long rttSamples;

    /**
     * {@code -Djrdma.soft.logTimeouts=true} (a debug aid, off by default): each retransmission timeout is a line on
     * standard error, {@code timeout DEST_QPN LATE_US PERIOD_US SRTT_US RTTVAR_US SINCE_PROGRESS_US OUTSTANDING
     * HELD_AT_PEER THRESHOLD REQUESTER_STATE LOSS_SEEN}, so a run can say why its timer fired.
     */
    static final boolean LOG_TIMEOUTS = Boolean.getBoolean("jrdma.soft.logTimeouts");
    /** When the window last moved (only with {@link #LOG_TIMEOUTS}). */
    private long progressAt;

    // the packet being processed
    private RocePacket pkt;
    private MemorySegment seg;
    private int psn;
    /** The last step before DONE of the last packet: how it was handled (tests and tracing). */
    State lastOutcome = State.DONE;

    Completer(SoftQp qp, SendQueue sq) {
        this.qp = qp;
        this.sq = sq;
    }

    /** RTR to RTS: nothing outstanding yet; the retry budgets are full. */
    void start(int sqPsn) {
        // here, not on the hot path: the receive thread allocates nothing per message (AllocationTest)
        if (qp.selectiveRepeat && batchEnds == null) batchEnds = new int[BATCH_ENDS];
        batchEndsKept = 0;
        oldestUnacked = sqPsn;
        retryLeft = qp.retryCnt;
        rnrLeft = qp.rnrRetry;
        goBackStarted = false;
        timeoutsInARow = 0;
        lateForgiven = 0;
        peerHolds = false;
        heldAtPeer = 0;
        sentBeyondResend = -1;
        probesInARow = 0;
        lossSeen = false;
    }

    void reset() {
        probeAt = 0;
        rttSentAt = 0;
        readRetryActive = false;
        goBackStarted = false;
        timeoutsInARow = 0;
        lateForgiven = 0;
        retryDeadline = 0;
    }

    /** A response packet for this QP (the driving thread). */
    void receive(RocePacket p, MemorySegment segment) {
        pkt = p;
        seg = segment;
        psn = p.psn();
        State s = State.CHECK_PSN;
        while (s != State.DONE) {
            if (SoftQp.TRACE) qp.trace("completer", s);
            State step = s;
            s = switch (s) {
                case CHECK_PSN -> checkPsn();
                case CHECK_ACK -> checkAck();
                case ACK -> ack();
                case RNR_NAK -> rnrNak();
                case SEQUENCE_NAK -> sequenceNak();
                case FATAL_NAK -> fatalNak();
                case READ_RESPONSE -> readResponse();
                case ATOMIC_RESPONSE -> atomicResponse();
                case COMPLETE -> complete();
                case DROP -> State.DONE;
                default -> throw new IllegalStateException(s.name());
            };
            if (s == State.DONE) lastOutcome = step;
        }
        pkt = null;
        seg = null;
    }

    /**
     * A response is acted on only inside the window of outstanding requests, as rxe does: from the oldest
     * unacknowledged PSN (one before it for a plain ACK, which may repeat the last one) to the last PSN sent (not merely
     * assigned: a large WQE's later PSNs are not in flight yet). Anything
     * else is stale, forged or stray: dropped and counted.
     */
    private State checkPsn() {
        boolean plainAck = pkt.opcode() == ACKNOWLEDGE.code() && Aeth.type(pkt.aethSyndrome()) == Aeth.TYPE_ACK;
        int low = plainAck ? Psn.add(oldestUnacked, -1) : oldestUnacked, end = qp.requester.sentEnd;
        if (!Psn.inWindow(psn, low, Psn.diff(end, low))) {
            // no responder sends a PSN far from the requests it was sent: a forger sweeping the PSN space does
            if (Psn.diff(psn, low) < -ForgeryWatch.FAR || Psn.diff(psn, end) > ForgeryWatch.FAR) qp.suspect();
            return drop(Counter.RX_RESPONSE_OUT_OF_WINDOW);
        }
        return State.CHECK_ACK;
    }

    private State drop(Counter reason) {
        qp.count(reason);
        return State.DROP;
    }

    /**
     * Which kind of response this is, and whether it answers a request of that kind that is in flight, before it is
     * allowed to acknowledge anything (a READ response or a NAK implicitly acknowledges every PSN before its own, so a
     * response that fits no request must not get that far): a READ response only inside an outstanding READ, an atomic
     * ACK only at an atomic's PSN, a plain ACK never inside an unfinished READ (a responder acknowledges a READ with its
     * responses, never at a PSN in their middle), a NAK only at a PSN a request went out with; while the QP is
     * {@link SoftQp#guarded} a NAK only at the oldest unacknowledged PSN ({@link ForgeryWatch}).
     */
    private State checkAck() {
        int op = pkt.opcode();
        SendWqe w = holding(psn);
        if (op == ATOMIC_ACKNOWLEDGE.code()) {
            return w != null && w.op.isAtomic() && w.firstPsn == psn
                    ? State.ATOMIC_RESPONSE
                    : drop(Counter.RX_RESPONSE_IGNORED);
        }
        if (op != ACKNOWLEDGE.code())
            return w != null && w.op == WrOpcode.RDMA_READ ? State.READ_RESPONSE : drop(Counter.RX_RESPONSE_IGNORED);
        int syn = pkt.aethSyndrome();
        int type = Aeth.type(syn);
        if (type == Aeth.TYPE_ACK) {
            if (w != null && w.op == WrOpcode.RDMA_READ && w.progress != Progress.DONE && psn != w.lastPsn)
                return drop(Counter.RX_RESPONSE_IGNORED);
            return State.ACK;
        }
        if (type != Aeth.TYPE_RNR_NAK && type != Aeth.TYPE_NAK)
            return drop(Counter.RX_RESPONSE_IGNORED); // reserved syndrome
        // a NAK names the request it refuses: for a READ, the PSN its last request went out with (not one of its
        // responses')
        if (w == null || (w.op == WrOpcode.RDMA_READ && Psn.diff(psn, w.firstPsn) != w.readAskedAt))
            return drop(Counter.RX_RESPONSE_IGNORED);
        if (psn != oldestUnacked && qp.guarded()) return drop(Counter.RX_RESPONSE_IGNORED);
        if (type == Aeth.TYPE_RNR_NAK) return State.RNR_NAK;
        return Aeth.value(syn) == Aeth.NAK_PSN_SEQUENCE_ERROR ? State.SEQUENCE_NAK : State.FATAL_NAK;
    }

    /** The started, not completed WQE (not a local operation) that {@code psn} belongs to; null when none. */
    private SendWqe holding(int psn) {
        int end = sq.tail;
        for (int i = sq.head; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.POSTED) return null;
            if (!w.local && holds(w, psn)) return w;
        }
        return null;
    }

    /** An ACK covers every request up to its PSN (ACKs are coalesced: one may cover many WQEs). */
    private State ack() {
        if (qp.selectiveRepeat && pkt.holdsMark()) peerHolds = true; // checked in window: from the peer, or its forger
        // the one PSN before the window: a repeat of the last ACK (the peer re-ACKs duplicates), which changes nothing
        if (psn == Psn.add(oldestUnacked, -1)) return drop(Counter.RX_RESPONSE_IGNORED);
        if (ackUpTo(psn)) progress(psn);
        return State.COMPLETE;
    }

    /**
     * Receiver not ready at {@code psn}: what came before it is acknowledged; wait min_rnr_timer, at most rnr_retry
     * times without progress. RNR NAKs during a wait neither extend it nor use a retry (a storm cannot stall the QP).
     */
    private State rnrNak() {
        qp.count(Counter.RNR_NAKS_RECEIVED);
        if (qp.requester.rnrWait) return drop(Counter.RX_RESPONSE_IGNORED);
        int prev = Psn.add(psn, -1);
        if (ackUpTo(prev)) progress(prev);
        SendWqe w = firstPending();
        if (w == null || !qp.sendsRequests()) return State.COMPLETE;
        if (!holds(w, psn)) {
            qp.count(Counter.RX_RESPONSE_IGNORED);
            return State.COMPLETE;
        }
        if (qp.rnrRetry != 7) { // 7 means retry forever
            if (rnrLeft == 0) {
                completeWithError(w, WcStatus.RNR_RETRY_EXC_ERR);
                return State.DONE;
            }
            rnrLeft--;
        }
        retryDeadline = 0;
        rttSentAt = 0; // the ACK now waits min_rnr_timer too: no round trip
        // marked (selective-repeat mode): the responder keeps what followed, so only this packet goes again
        boolean onlyThis = qp.selectiveRepeat && pkt.holdsMark();
        qp.requester.waitRnr(psn, Aeth.rnrTimerMicros(Aeth.value(pkt.aethSyndrome())) * 1000L, onlyThis);
        return State.COMPLETE;
    }

    /** The responder expected {@code psn}: what came before it is acknowledged; go back to it (a retry). */
    private State sequenceNak() {
        // the round-trip sample runs on: a gap repaired by a resend ends it there (Karn, resendSelectively, a go-back's
        // restartRetryTimer), and a gap that was reordering, not loss, delays its ACK as the path does. Ending it at
        // every sequence NAK left the QEMU guest's netem runs without a single sample for their first seconds (srtt 0:
        // the probe at its 200 us floor and the timer at the QP's 67 ms, against ~85-130 ms for a window there)
        if (!rttAcrossNaks) rttSentAt = 0;
        if (!qp.requester.rnrWait) lossSeen(qp.clock().nanoTime()); // behind an RNR NAK a gap is no loss
        int prev = Psn.add(psn, -1);
        if (ackUpTo(prev)) progress(prev);
        boolean marked = qp.selectiveRepeat && pkt.holdsMark();
        if (marked && psn == oldestUnacked) // what the peer keeps beyond the gap: at most what went out after it
        heldAtPeer = Math.max(0, Math.min(pkt.aethMsn(), Psn.diff(qp.requester.sentEnd, psn) - 1));
        if (!qp.sendsRequests() || qp.requester.rnrWait) return State.COMPLETE; // an RNR wait resends from there anyway
        if (goBackStarted) {
            if (marked) { // the window may have opened: the requester goes on (complete), after a lost resend again
                if (psn == oldestUnacked) resendIfLost(psn);
                return State.COMPLETE;
            }
            return drop(Counter.RX_RESPONSE_IGNORED); // the go-back under way resends from here already
        }
        if (marked && mayBeLate(psn)) {
            peerHolds = true;
            qp.count(Counter.NAKS_BELOW_REORDER_THRESHOLD);
            return State.COMPLETE; // the requester goes on; when it stops, the probe stands in for later NAKs
        }
        if (retryLeft == 0) {
            SendWqe w = firstPending();
            if (w != null) {
                completeWithError(w, WcStatus.RETRY_EXC_ERR);
                return State.DONE;
            }
            return State.COMPLETE;
        }
        retryLeft--;
        goBackStarted = true;
        // both ends in the selective-repeat mode: the responder keeps what came after psn, so only psn goes again
        if (marked && resendSelectively(psn)) {
            peerHolds = true;
            qp.count(Counter.RETRANSMITS);
            restartRetryTimerKeepingSample();
            return State.COMPLETE;
        }
        qp.requester.retry(psn);
        return State.COMPLETE;
    }

    /**
     * A marked NAK names {@code psn} while the peer keeps fewer than {@link SoftQp#reorderThreshold} packets beyond it:
     * it may be late, not lost (TCP's three duplicate ACKs; in the guest two vCPUs reorder one flow over a veth, and every
     * resend for such a NAK arrived twice), so it is not sent again yet. The peer NAKs again once it keeps that many (or
     * at a kept packet that asks for an ACK); a tail with fewer packets after the gap is repaired by the probe
     * ({@link #armProbe}: the NAK is a loss seen) or the timeout. Only for a SEND/WRITE packet that can go again alone:
     * anything else goes back N at once, as before.
     */
    private boolean mayBeLate(int psn) {
        return psn == oldestUnacked && !takenForLost(psn, heldAtPeer) && qp.requester.canResendOne(psn);
    }

    /**
     * Whether the peer keeping {@code kept} packets beyond {@code psn} makes it lost: at least {@link
     * SoftQp#reorderThreshold} kept, and either as many as {@link #reorderThreshold} (more than any one batch sent after
     * the one {@code psn} left in: one whole batch overtaking another costs nothing) or more than went out after that
     * batch (then a packet sent behind {@code psn} in its own batch arrived, and a batch is not reordered inside: a
     * loss at the tail, found at once instead of by the probe).
     */
    private boolean takenForLost(int psn, int kept) {
        if (kept < qp.reorderThreshold) return false;
        if (kept >= reorderThreshold(psn)) return true;
        int after = sentAfterBatchOf(psn);
        return after >= 0 && kept > after;
    }

    /**
     * How many packets the peer must keep beyond a gap at {@code psn} before the packet missing there is taken for
     * lost: {@link SoftQp#reorderThreshold}, or one more than the largest batch of new packets sent after the batch
     * {@code psn} left in (all remembered batches when that one is no longer known) when that is more, at most half
     * the window (so that a real loss is still found by the NAKs of the packets after it before the window closes).
     */
    int reorderThreshold(int psn) {
        int n = qp.reorderThreshold;
        if (!reorderFollowsBatch || batchEnds == null) return n;
        int largest = 0;
        for (int i = 1; i < batchEndsKept; i++) {
            int e = batchEnds[(batchEndsNext - i) & (BATCH_ENDS - 1)];
            int start = batchEnds[(batchEndsNext - i - 1) & (BATCH_ENDS - 1)];
            if (Psn.diff(start, psn) <= 0 && Psn.diff(e, psn) > 0) break; // the batch psn left in
            largest = Math.max(largest, Psn.diff(e, start));
        }
        return Math.max(n, Math.min(largest + 1, qp.requester.window / 2));
    }

    /** The packets sent after the batch {@code psn} went out in, or -1 when that batch is no longer known. */
    private int sentAfterBatchOf(int psn) {
        if (batchEnds == null) return -1;
        int end = -1;
        for (int i = 1; i <= batchEndsKept; i++) {
            int e = batchEnds[(batchEndsNext - i) & (BATCH_ENDS - 1)];
            if (Psn.diff(e, psn) <= 0) return end < 0 ? -1 : Psn.diff(qp.requester.sentEnd, end);
            end = e;
        }
        return -1; // psn went out before the oldest batch remembered
    }

    /** The transmitter sent a batch of packets at once (one system call). */
    void batchSent() {
        if (batchEnds == null || !qp.selectiveRepeat || !reorderFollowsBatch) return;
        int end = qp.requester.transmittedEnd;
        if (batchEndsKept > 0 && batchEnds[(batchEndsNext - 1) & (BATCH_ENDS - 1)] == end) return; // no new request
        batchEnds[batchEndsNext] = end;
        batchEndsNext = (batchEndsNext + 1) & (BATCH_ENDS - 1);
        if (batchEndsKept < BATCH_ENDS) batchEndsKept++;
    }

    /**
     * A probe or a timeout in the selective-repeat mode: the oldest unacknowledged packet goes again and, to reveal a
     * loss at the tail, the last one sent, unless the peer's last marked NAK said it keeps every packet after the oldest
     * ({@link #heldAtPeer}): then the last one arrived, and sending it again would only be a duplicate (a lost resend,
     * or a timeout that fired while the answer was still on its way: under emulation, often). False, sending nothing,
     * when the oldest is not a SEND/WRITE packet that went out.
     */
    private boolean resendOldestAndTail() {
        long sampleSentAt = rttSentAt;
        boolean sampleResent = oldestUnacked == rttPsn;
        if (!resendSelectively(oldestUnacked)) return false;
        int last = Psn.add(qp.requester.sentEnd, -1);
        if (last != oldestUnacked && heldAtPeer < Psn.diff(last, oldestUnacked)) {
            sampleResent |= last == rttPsn;
            qp.requester.resendOne(last);
        }
        // a timeout's or probe's resends end the round-trip sample only when they include its packet: under the
        // QEMU guest a window's round trip (~100 ms) is longer than the QP's timeout (67 ms), and ending the sample at
        // each timeout left srtt 0 for whole runs (the timer never learned the round trip). Its ACK may wait for the
        // oldest's repair: a long sample, never a short one.
        if (rttAcrossNaks && !sampleResent) rttSentAt = sampleSentAt;
        return true;
    }

    /** Sends the SEND/WRITE packet at {@code psn} again alone ({@link Requester#resendOne}), noting what went before it. */
    private boolean resendSelectively(int psn) {
        rttSentAt = 0; // Karn: no round trip is measured across a resend
        int before = Psn.diff(qp.requester.sentEnd, psn) - 1;
        if (!qp.requester.resendOne(psn)) return false;
        resentPsn = psn;
        sentBeyondResend = before;
        return true;
    }

    /**
     * A marked NAK for {@code psn} while its selective resend is under way: if the peer keeps at least
     * {@link SoftQp#reorderThreshold} more packets beyond it than had gone out before that resend, that many sent after
     * the resend arrived and the resend did not (IRN's lost retransmission; fewer may only have overtaken it): it goes
     * again now, not after a retry timeout (67 ms at perftest's timeout 14, against a round trip of microseconds). Each
     * time needs packets sent after the last resend, so a forger's counts cannot make more than one resend per packet
     * sent.
     */
    private void resendIfLost(int psn) {
        if (psn != resentPsn || sentBeyondResend < 0 || heldAtPeer - sentBeyondResend < reorderThreshold(psn)) return;
        if (resendSelectively(psn)) qp.count(Counter.RESENDS_FOUND_LOST);
    }

    /** The responder refused the request at {@code psn} (and went to ERR): complete it with the matching error. */
    private State fatalNak() {
        int prev = Psn.add(psn, -1);
        if (ackUpTo(prev)) progress(prev);
        if (!qp.sendsRequests()) return State.DONE;
        SendWqe w = firstPending();
        if (w == null || !holds(w, psn)) return drop(Counter.RX_RESPONSE_IGNORED); // names no request in flight
        completeWithError(
                w,
                switch (Aeth.value(pkt.aethSyndrome())) {
                    case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
                    case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
                    case Aeth.NAK_INVALID_RD_REQUEST -> WcStatus.REM_INV_RD_REQ_ERR;
                    default -> WcStatus.REM_OP_ERR;
                });
        return State.DONE;
    }

    /** An atomic's original value: written to the WQE's local buffer; responses to earlier requests are implied. */
    private State atomicResponse() {
        SendWqe w = firstPending();
        if (w == null || !w.op.isAtomic() || w.firstPsn != psn) {
            if (!ackUpTo(Psn.add(psn, -1))) return State.DONE;
            w = firstPending();
            if (w == null || !w.op.isAtomic() || w.firstPsn != psn) return drop(Counter.RX_RESPONSE_IGNORED);
        }
        long orig = pkt.atomicAckOriginal();
        SoftMr mr = w.mr[0];
        try {
            if (mr == null || mr.isClosed()) throw new IllegalStateException();
            mr.seg.set(ValueLayout.JAVA_LONG_UNALIGNED, w.addr[0] - mr.addr, orig);
        } catch (RuntimeException e) {
            completeWithError(w, WcStatus.LOC_PROT_ERR);
            return State.DONE;
        }
        readOrAtomicDone(w);
        progress(psn);
        return State.COMPLETE;
    }

    /** One READ response packet: in order it is scattered into the WQE's buffers; after a gap the READ is asked again from the gap. */
    private State readResponse() {
        if (!ackUpTo(Psn.add(psn, -1))) return State.DONE;
        SendWqe w = firstPending();
        if (w == null || w.op != WrOpcode.RDMA_READ) return drop(Counter.RX_RESPONSE_IGNORED);
        int expected = Psn.add(w.firstPsn, w.readRecv);
        int d = Psn.diff(psn, expected);
        if (d < 0) return drop(Counter.RX_RESPONSE_IGNORED); // a duplicate
        if (d > 0) { // a response was lost: ask again from it, once
            retryRead(expected);
            return State.DONE;
        }
        if (readRetryActive && psn == readRetryPsn)
            readRetryActive = false; // the replay has begun: later gaps are real
        int mtu = qp.mtu;
        int k = w.readRecv;
        // each READ request asks for one chunk: the responder numbers its responses FIRST..LAST within the chunk
        boolean first = k == qp.requester.readChunkStart(k), last = k == qp.requester.readChunkEnd(w, k) - 1;
        int want = first && last
                ? RDMA_READ_RESPONSE_ONLY.code()
                : first
                        ? RDMA_READ_RESPONSE_FIRST.code()
                        : last ? RDMA_READ_RESPONSE_LAST.code() : RDMA_READ_RESPONSE_MIDDLE.code();
        long off = (long) k * mtu;
        long plen = Math.min(mtu, w.total - off);
        if (pkt.opcode() != want || pkt.payloadLength() != plen) {
            completeWithError(w, WcStatus.BAD_RESP_ERR);
            return State.DONE;
        }
        if (plen > 0 && !w.scatter(seg, pkt.payloadOffset(), off, plen)) {
            completeWithError(w, WcStatus.LOC_PROT_ERR);
            return State.DONE;
        }
        w.readRecv++;
        if (w.readRecv == w.npkts) readOrAtomicDone(w);
        progress(psn);
        return State.COMPLETE;
    }

    /** Completes what is done at the head and lets the requester send what the freed window allows. */
    private State complete() {
        completeHead();
        qp.requester.run();
        return State.DONE;
    }

    private void readOrAtomicDone(SendWqe w) {
        w.progress = Progress.DONE;
        qp.requester.rdAtomicOut--;
        readRetryActive = false;
    }

    /** Asks again for a READ/atomic response from {@code fromPsn}, unless such a re-request is already under way. */
    private void retryRead(int fromPsn) {
        if (readRetryActive) return;
        readRetryActive = true;
        readRetryPsn = fromPsn;
        qp.requester.retry(fromPsn);
        qp.requester.run();
    }

    // ---- send queue bookkeeping ----------------------------------------------------------------------------

    /** Completes, in order, the WQEs at the head of the send queue that are done. */
    void completeHead() {
        while (sq.head != sq.next) {
            SendWqe w = sq.at(sq.head);
            if (w.progress != Progress.DONE) break;
            if (w.signaled) {
                int bl = w.local ? 0 : w.op.isAtomic() ? 8 : (int) w.total;
                qp.sendCq().push(w.wrId, WcStatus.SUCCESS, w.op.completionOpcode(), bl, 0, 0, qp.qpNum(), 0, false);
            }
            sq.head++;
        }
    }

    /** Completes {@code w} with an error and moves the QP to ERR (flushing everything else). */
    void completeWithError(SendWqe w, WcStatus status) {
        completeHead();
        for (int i = sq.head; i != sq.tail; i++) {
            SendWqe x = sq.at(i);
            if (x == w) {
                qp.sendCq().push(x.wrId, status, x.op.completionOpcode(), 0, 0, 0, qp.qpNum(), 0, false);
                sq.head = i + 1;
                break;
            }
        }
        qp.toErr();
    }

    /** Whether {@code psn} is one of {@code w}'s PSNs. */
    private static boolean holds(SendWqe w, int psn) {
        return Psn.inWindow(psn, w.firstPsn, w.npkts);
    }

    /** The first WQE, from the head, that is started and not done; null when none. */
    private SendWqe firstPending() {
        int end = sq.tail;
        for (int i = sq.head; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.STARTED) return w;
            if (w.progress == Progress.POSTED) return null;
        }
        return null;
    }

    /**
     * Marks done every SEND/WRITE whose last PSN is at or before {@code ackPsn}; false on an implicit NAK. Like every
     * scan here it runs to the first WQE not started, not to the requester's place ({@code sq.next}): a go-back moves
     * that place back while the WQEs after it are still out (a scan that stopped there completed none of them).
     */
    private boolean ackUpTo(int ackPsn) {
        int end = sq.tail;
        for (int i = sq.head; i != end; i++) {
            SendWqe w = sq.at(i);
            if (w.progress == Progress.DONE) continue;
            if (w.progress == Progress.POSTED) break;
            if (Psn.diff(w.lastPsn, ackPsn) > 0) break;
            if (w.readOrAtomic) {
                // the peer acknowledged a later request, but this READ/atomic's response is missing: ask again
                retryRead(Psn.add(w.firstPsn, w.readRecv));
                return false;
            }
            w.progress = Progress.DONE; // the peer has every packet of it (even if a go-back queued some again)
        }
        return true;
    }

    /** The peer has everything up to {@code ackedPsn}: move the window, refill the retry budgets, rearm the timer. */
    private void progress(int ackedPsn) {
        int next = Psn.next(ackedPsn);
        if (Psn.after(next, oldestUnacked)) {
            oldestUnacked = next;
            heldAtPeer = 0;
            sentBeyondResend = -1;
            retryLeft = qp.retryCnt;
            rnrLeft = qp.rnrRetry;
            goBackStarted = false;
            // Karn: before any round trip was measured the backed-off wait stays (RFC 6298 5.7 likewise keeps a
            // longer RTO once the first one expired): a QP whose round trip is longer than its timeout (the QEMU
            // guest: ~100 ms against 67 ms) otherwise timed out once per message and resent the packet it sampled,
            // so it never measured one
            if (srttNanos != 0 || !rttAcrossNaks) timeoutsInARow = 0;
            lateForgiven = 0;
            probeAt = 0;
            probesInARow = 0;
            long now = rttSentAt != 0 || oldestUnacked != qp.requester.nextPsn || LOG_TIMEOUTS
                    ? qp.clock().nanoTime()
                    : 0;
            progressAt = now;
            if (rttSentAt != 0 && Psn.diff(ackedPsn, rttPsn) >= 0) {
                long rtt = Math.max(1, now - rttSentAt);
                if (srttNanos == 0) {
                    srttNanos = rtt;
                    rttVarNanos = rtt / 2;
                } else { // RFC 6298 2.3: the deviation against the old mean first
                    rttVarNanos += (Math.abs(srttNanos - rtt) - rttVarNanos) / 4;
                    srttNanos += (rtt - srttNanos) / 8;
                }
                rttSentAt = 0;
                rttSamples++;
                timeoutsInARow = 0;
            }
            retryPeriod = backedOffTimeout();
            retryDeadline = oldestUnacked != qp.requester.nextPsn && qp.timeoutNanos > 0 ? now + retryPeriod : 0;
        }
    }

    /**
     * The requester stopped with packets outstanding, waiting for a response (its window, or nothing more to send):
     * in the selective-repeat mode, the retry deadline comes forward to the probe's ({@link #probeAt}).
     */
    void armProbe() {
        if (!qp.selectiveRepeat || !peerHolds || !lossSeen || probeAt != 0 || retryDeadline == 0) return;
        if (oldestUnacked == qp.requester.sentEnd || qp.requester.rnrWait) return;
        // no round trip measured yet: the probe would wait its 200 us floor whatever the path, and resend the very
        // packet the first sample waits for (one message at a time), so none was ever taken where the round trip is
        // long (the QEMU guest); RACK-TLP (RFC 8985 7.2) likewise waits a second without SRTT: the timer stands in
        if (srttNanos == 0 && rttAcrossNaks) return;
        long now = qp.clock().nanoTime();
        if (now - lossSeenAt > PROBE_AFTER_LOSS_NANOS) return;
        long wait = probeWait() << Math.min(probesInARow, 16);
        long at = now + wait;
        if (at - retryDeadline >= 0) return; // the timeout comes first anyway
        probeUntil = retryDeadline;
        probeAt = at;
        retryDeadline = at;
        qp.timer().wake(at);
    }

    /**
     * A probe came due while the peer has not taken the packet sent last from its same-host ring: its threads have not
     * run since (a descheduled peer, issue 24 §5: starvation is not silence), so nothing is sent again; the probe waits
     * another probe period, never past the IBA timeout it stands in front of ({@link #probeUntil}), which stays where it
     * was: a peer that died is reported exactly as without the probe.
     */
    private void holdProbe(long now) {
        qp.count(Counter.RETRY_PROBES_HELD);
        long at = now + probeWait();
        if (at - probeUntil < 0) {
            probeAt = at;
            retryDeadline = at;
        } else {
            probeAt = 0;
            retryDeadline = probeUntil;
        }
        qp.timer().wake(retryDeadline);
    }

    /**
     * A probe's wait before doubling: four smoothed round trips, or the round trip plus four deviations when that is
     * longer (RFC 6298's RTO; RACK-TLP, RFC 8985, likewise waits out a reordering window past the round trip), at least
     * {@link #PROBE_FLOOR_NANOS}. On a steady path 4 x srtt is the longer; where the answers come late by turns (the
     * QEMU guest's vCPUs hold a whole batch back now and then) the deviation is, and a probe at 4 x srtt sent packets
     * that had arrived (308 probes in one netem run of session 19, 616 of its 906 resends).
     */
    long probeWait() {
        long rto = PROBE_FROM_DEVIATION ? srttNanos + 4 * rttVarNanos : 0;
        return Math.max(PROBE_FLOOR_NANOS, Math.max(4 * srttNanos, rto));
    }

    private void lossSeen(long now) {
        lossSeen = true;
        lossSeenAt = now;
    }

    // ---- the retransmission timer ------------------------------------------------------------------------

    /**
     * Request packet {@code psn} goes out now: it starts a round-trip sample when it asks for an ACK and is not a resend
     * ({@code rttSample}) and none runs, and the retransmission timer unless it runs already. One clock read for both
     * (none when neither starts: a stream's packets behind its first).
     */
    void requestSent(int psn, boolean rttSample) {
        boolean sample = rttSample && rttSentAt == 0, arm = retryDeadline == 0 && qp.timeoutNanos > 0;
        if (!sample && !arm) return;
        long now = qp.clock().nanoTime();
        if (sample) {
            rttPsn = psn;
            rttSentAt = now;
        }
        if (arm) {
            probeAt = 0;
            retryPeriod = backedOffTimeout();
            retryDeadline = now + retryPeriod;
            qp.timer().wake(retryDeadline);
        }
    }

    /**
     * A go-back started (every packet from the oldest goes again): a full wait from now (backed off after timeouts in
     * a row).
     */
    void restartRetryTimer() {
        rttSentAt = 0; // Karn: the sampled packet goes again too
        restartRetryTimerKeepingSample();
    }

    /**
     * A selective resend (a NAK's, a timeout's): a full wait from now; the round-trip sample is the resend's business
     * ({@link #resendSelectively}, {@link #resendOldestAndTail}).
     */
    private void restartRetryTimerKeepingSample() {
        probeAt = 0;
        if (!rttAcrossNaks) rttSentAt = 0;
        if (qp.timeoutNanos > 0) {
            retryPeriod = backedOffTimeout();
            retryDeadline = qp.clock().nanoTime() + retryPeriod;
        }
    }

    /**
     * The wait of the retransmission timer before a back-off: the QP's timeout, or RFC 6298's RTO (the smoothed round
     * trip plus four deviations) when that is longer, at most {@link #MAX_BACKOFF_NANOS}. IBA's Local ACK Timeout is the
     * least a requester waits; under emulation (the QEMU guest: 64 packets of 4 KiB in flight to a responder that
     * takes ~500 a second) the round trip of the window's last packet is ~100 ms, so perftest's 67 ms fired dozens of
     * times a run with nothing lost, each sending packets again that then arrived twice. On a host, round trips of
     * microseconds leave the QP's timeout as it was.
     */
    long retryTimeout() {
        long t = qp.timeoutNanos;
        return RTT_TIMEOUT ? Math.max(t, Math.min(MAX_BACKOFF_NANOS, srttNanos + 4 * rttVarNanos)) : t;
    }

    /** The QP's timeout doubled once per timeout in a row, at most {@link #MAX_BACKOFF_NANOS} (or the timeout, if longer). */
    long backedOffTimeout() {
        long t = retryTimeout(), cap = Math.max(t, MAX_BACKOFF_NANOS);
        for (int i = 0; i < timeoutsInARow && t < cap; i++) t <<= 1;
        return Math.min(t, cap);
    }

    /**
     * The oldest outstanding request timed out at {@code now} (the device drove its receive path first, so an ACK
     * that was waiting there has been handled): resend from it, or fail it after retry_cnt retries. A firing more than
     * its own period after its deadline says the device itself was kept off the CPU, not that the peer was silent: it
     * resends but counts no retry and does not back off ({@code retry_timer_late}), at most {@link #MAX_LATE_FORGIVEN}
     * times in a row without progress. A peer that is gone is then reported after the usual retry_cnt + 1 timeouts
     * plus at most {@link #MAX_LATE_FORGIVEN} periods of the back-off ({@link #backedOffTimeout}), on top of the time
     * the device's threads waited for a CPU.
     */
    void onRetryTimeout(long now) {
        if (oldestUnacked == qp.requester.nextPsn) {
            retryDeadline = 0;
            probeAt = 0;
            return;
        }
        SendWqe w = firstPending();
        if (w == null) {
            retryDeadline = 0;
            probeAt = 0;
            return;
        }
        if (probeAt != 0 && retryDeadline == probeAt) { // a probe, not the IBA timeout: no retry counted
            if (qp.transport().peerBehind(now, ProgressEngine.PEER_BEHIND_NANOS)) {
                holdProbe(now);
                return;
            }
            probeAt = 0;
            retryDeadline = probeUntil;
            probesInARow++;
            qp.count(Counter.RETRY_PROBES);
            resendOldestAndTail();
            armProbe(); // the next, twice as late, in case the probe or its answer is lost too
            return;
        }
        probeAt = 0;
        qp.count(Counter.RETRY_TIMEOUTS);
        if (LOG_TIMEOUTS) logTimeout(now);
        if (now - retryDeadline > retryPeriod && lateForgiven < MAX_LATE_FORGIVEN) {
            lateForgiven++;
            qp.count(Counter.RETRY_TIMER_LATE);
            readRetryActive = false;
            goBackStarted = true;
            resendAfterTimeout(); // a full wait from now, not backed off further
            return;
        }
        lossSeen(now); // a timeout on time (a late one is this host's starvation)
        if (retryLeft == 0) {
            completeWithError(w, WcStatus.RETRY_EXC_ERR);
            return;
        }
        retryLeft--;
        timeoutsInARow++;
        readRetryActive = false;
        goBackStarted = true;
        resendAfterTimeout();
    }

    private void logTimeout(long now) {
        System.err.println("timeout " + qp.destQpn + " " + (now - retryDeadline) / 1000 + " " + retryPeriod / 1000 + " "
                + srttNanos / 1000 + " " + rttVarNanos / 1000 + " " + (progressAt == 0 ? -1 : (now - progressAt) / 1000)
                + " " + Psn.diff(qp.requester.sentEnd, oldestUnacked) + " " + heldAtPeer + " "
                + reorderThreshold(oldestUnacked) + " "
                + qp.requester.stoppedAt + " " + (lossSeen ? 1 : 0));
    }

    /**
     * After a timeout: go back N from the oldest unacknowledged PSN; in the selective-repeat mode, once the peer has
     * shown it keeps packets after a gap ({@link #peerHolds}), only that packet and, as a probe of the tail, the last
     * one sent (if it was lost too, the responder now holds it and NAKs each gap before it, instead of a timeout each).
     */
    private void resendAfterTimeout() {
        if (qp.selectiveRepeat && peerHolds && resendOldestAndTail()) {
            qp.count(Counter.RETRANSMITS);
            restartRetryTimerKeepingSample();
            return;
        }
        qp.requester.retry(oldestUnacked);
        qp.requester.run();
    }
}
