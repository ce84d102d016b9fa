package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 23 §4, loss recovery that does not collapse, on the deterministic network (manual clock): with both ends in
 * jrdma's selective-repeat mode ({@link SoftQp#selectiveRepeat}) random losses are repaired by sending again only what
 * was lost (at most 1.5 retransmitted request packets per lost packet), every byte arrives, and the same losses cost
 * go-back-N far more; against a peer not in the mode each end keeps to go-back-N; a marked NAK that names no packet in
 * flight is a counted drop.
 */
@Timeout(120)
class SelectiveRepeatTest {
    static final int SIZE = 4096, MESSAGES = 600, SEND_QUEUE = 256;

    /**
     * What a run cost: request packets A sent, the distinct PSNs among them, packets the network lost, A's selective
     * resends, request packets that arrived late (overtaken by one or two later ones), B's duplicates.
     */
    record Cost(
            long requestPackets,
            long distinct,
            long lostRequests,
            long lostTotal,
            long selectiveResends,
            long late,
            long arrivedTwice,
            long timeouts,
            long lateBatches,
            long rttSamples) {
        long retransmitted() {
            return requestPackets - distinct;
        }
    }

    /**
     * The path of a run: each request lost with {@code requestLoss}, each response with {@code responseLoss}, each
     * request packet's first copy overtaken by one or two later packets with {@code late} (a veth in the guest), drawn
     * from {@code seed}.
     */
    record Path(double requestLoss, double responseLoss, double late, double lateBatch, long seed) {
        Path(double requestLoss, double responseLoss, double late, long seed) {
            this(requestLoss, responseLoss, late, 0, seed);
        }
    }

    static Cost run(boolean srA, boolean srB, double requestLoss, double responseLoss, long seed) {
        return run(srA, srB, new Path(requestLoss, responseLoss, 0, seed), SoftQp.REORDER_THRESHOLD);
    }

    /**
     * {@link #MESSAGES} WRITEs of {@link #SIZE} bytes from A to B (4 packets each at MTU 1024), {@link #SEND_QUEUE}
     * outstanding at most, every byte checked, on {@code path}; both ends with reordering threshold {@code threshold}.
     */
    static Cost run(boolean srA, boolean srB, Path path, int threshold) {
        return run(srA, srB, path, threshold, true);
    }

    /**
     * As {@link #run(boolean, boolean, Path, int)}; {@code followsBatch} false keeps the threshold fixed (as before
     * guest21, {@link Completer#reorderFollowsBatch}).
     */
    static Cost run(boolean srA, boolean srB, Path path, int threshold, boolean followsBatch) {
        return run(srA, srB, path, threshold, followsBatch, true);
    }

    /** As above; {@code rttAcrossNaks} false ends A's round-trip sample at each sequence NAK (as before guest21). */
    static Cost run(boolean srA, boolean srB, Path path, int threshold, boolean followsBatch, boolean rttAcrossNaks) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = srA;
            soft(pair.b.qp).selectiveRepeat = srB;
            soft(pair.a.qp).reorderThreshold = threshold;
            soft(pair.b.qp).reorderThreshold = threshold;
            soft(pair.a.qp).completer.reorderFollowsBatch = followsBatch;
            soft(pair.b.qp).completer.reorderFollowsBatch = followsBatch;
            soft(pair.a.qp).completer.rttAcrossNaks = rttAcrossNaks;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            Random rnd = new Random(path.seed()), lateRnd = new Random(path.seed() * 31 + 7);
            long[] lost = new long[2];
            net.drop = p -> {
                boolean request = p.from() == ta;
                if (rnd.nextDouble() >= (request ? path.requestLoss() : path.responseLoss())) return false;
                lost[request ? 0 : 1]++;
                return true;
            };
            Set<Integer> lateOnce = new HashSet<>();
            // a late batch (the guest's veth: a batch waits in the backlog of the vCPU that sent it while the next
            // one, sent from the other, goes first) arrives after as many later packets as it has
            Random batchRnd = new Random(path.seed() * 17 + 3);
            Map<Integer, Boolean> batchLate = new HashMap<>();
            net.lateBy = p -> {
                if (p.from() != ta) return 0;
                DeterministicNetwork.Batch b = net.batchOf.get(p);
                if (b != null
                        && batchLate.computeIfAbsent(b.number(), k -> batchRnd.nextDouble() < path.lateBatch())
                        && lateOnce.add(p.psn())) return b.packets();
                return lateRnd.nextDouble() < path.late() && lateOnce.add(p.psn()) ? 1 + lateRnd.nextInt(2) : 0;
            };
            long bytes = (long) SIZE * MESSAGES;
            MemoryRegion src = pair.a.mrAll(bytes), dst = pair.b.mrAll(bytes);
            RcPair.fill(src.segment(), bytes, (int) path.seed());
            int[] posted = {0}, done = {0};
            WorkCompletion[] wcs = WorkCompletion.array(64);
            net.runUntil(
                    () -> {
                        int n = pair.a.cq.poll(wcs);
                        for (int i = 0; i < n; i++)
                            assertEquals(WcStatus.SUCCESS, wcs[i].status, () -> "WRITE " + wcs[0].wrId);
                        done[0] += n;
                        while (posted[0] < MESSAGES && posted[0] - done[0] < SEND_QUEUE) {
                            int i = posted[0]++;
                            pair.a.qp.postSend(new SendWorkRequest()
                                    .wrId(i)
                                    .opcode(WrOpcode.RDMA_WRITE)
                                    .buffer(src, (long) SIZE * i, SIZE)
                                    .remote(dst.address() + (long) SIZE * i, dst.rkey())
                                    .signaled(true));
                        }
                        return done[0] == MESSAGES;
                    },
                    1_000_000,
                    600_000_000_000L);
            RcPair.assertFilled(dst.segment(), 0, bytes, (int) path.seed());
            long requests = 0;
            Set<Integer> psns = new HashSet<>();
            for (DeterministicNetwork.Packet p : net.log) {
                if (p.from() != ta || !Opcode.isRc(p.opcode()) || p.opcode() == Opcode.CNP.code()) continue;
                requests++;
                psns.add(p.psn());
            }
            return new Cost(
                    requests,
                    psns.size(),
                    lost[0],
                    lost[0] + lost[1],
                    ta.counters.get(Counter.TX_SELECTIVE_RESENDS),
                    lateOnce.size(),
                    tb.counters.get(Counter.RX_DUPLICATE_REQUEST),
                    ta.counters.get(Counter.RETRY_TIMEOUTS),
                    batchLate.values().stream().filter(x -> x).count(),
                    soft(pair.a.qp).completer.rttSamples);
        }
    }

    @ParameterizedTest(name = "request loss {0}, response loss {1}, seed {2}")
    @CsvSource({"0.01, 0, 1", "0.05, 0, 2", "0.01, 0.01, 3", "0.03, 0.03, 4"})
    void randomLossIsRepairedBySendingAgainOnlyWhatWasLost(double requestLoss, double responseLoss, long seed) {
        Cost sr = run(true, true, requestLoss, responseLoss, seed);
        Cost gbn = run(false, false, requestLoss, responseLoss, seed);
        String what = "selective repeat " + sr + ", go-back-N " + gbn;
        System.out.println("request loss " + requestLoss + ", response loss " + responseLoss + ": " + what);
        assertTrue(sr.lostRequests() > 0, what);
        assertTrue(sr.selectiveResends() > 0, what);
        assertTrue(
                sr.retransmitted() <= 1.5 * sr.lostTotal(), "at most 1.5 packets sent again per packet lost: " + what);
        assertTrue(gbn.retransmitted() > 3 * sr.retransmitted(), "go-back-N resends far more: " + what);
    }

    /**
     * The guest's veth (issue 23 §4): request packets overtaken by one or two later ones, nothing lost. Below the
     * reordering threshold a marked NAK sends nothing again, so reordering costs no packet; with a threshold of 1 (the
     * first NAK resends, as before) every late packet was sent again and arrived twice.
     */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "2", "3"})
    void packetsOvertakenByOneOrTwoOthersCostNoResend(long seed) {
        Path reordered = new Path(0, 0, 0.02, seed);
        Cost sr = run(true, true, reordered, SoftQp.REORDER_THRESHOLD);
        Cost eager = run(true, true, reordered, 1, false);
        String what = "threshold " + SoftQp.REORDER_THRESHOLD + ": " + sr + ", threshold 1: " + eager;
        System.out.println("reordered, seed " + seed + ": " + what);
        assertTrue(sr.late() > 20, what);
        assertEquals(0, sr.retransmitted(), what);
        assertEquals(0, sr.arrivedTwice(), what);
        assertTrue(eager.selectiveResends() >= eager.late() / 2, what);
        assertTrue(eager.arrivedTwice() >= eager.late() / 2, what);
    }

    /**
     * The guest's veth reorders whole send batches (issue 23 §4, guest21): 5% of A's batches arrive after as many later
     * packets as they have, nothing lost. With the threshold following the batches sent, nothing goes twice and no
     * timer fires; with the fixed threshold of 3 (as before) most late batches drew a resend that arrived twice.
     */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "2", "3"})
    void aWholeBatchDeliveredAfterTheNextSendsNothingTwice(long seed) {
        Path reordered = new Path(0, 0, 0, 0.05, seed);
        Cost sr = run(true, true, reordered, SoftQp.REORDER_THRESHOLD);
        Cost fixed = run(true, true, reordered, SoftQp.REORDER_THRESHOLD, false);
        String what = "following the batch: " + sr + ", fixed threshold: " + fixed;
        System.out.println("late batches, seed " + seed + ": " + what);
        assertTrue(sr.lateBatches() > 10, what);
        assertEquals(0, sr.retransmitted(), what);
        assertEquals(0, sr.arrivedTwice(), what);
        assertEquals(0, sr.timeouts(), what);
        assertTrue(fixed.arrivedTwice() >= fixed.lateBatches() / 2, what);
    }

    /**
     * A fifth of A's batches late (issue 23 §4: in the guest's netem runs a sequence NAK came in nearly every window):
     * round trips are still measured, since a NAK that sends nothing again does not end the sample under way; when it
     * did (as before guest21) the run took half the samples (seeds 1, 2: 15 against 7; in the guest none for the first
     * seconds, so the probe waited its 200 us floor against a round trip of ~100 ms). Two late batches in a row are
     * more than the threshold tolerates: 10 and 24 packets sent twice here.
     */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "2"})
    void roundTripsAreMeasuredThroughLateBatches(long seed) {
        Path path = new Path(0, 0, 0, 0.2, seed);
        Cost across = run(true, true, path, SoftQp.REORDER_THRESHOLD, true, true);
        Cost endedAtNaks = run(true, true, path, SoftQp.REORDER_THRESHOLD, true, false);
        String what = "across NAKs: " + across + ", ended at NAKs: " + endedAtNaks;
        System.out.println("a fifth of the batches late, seed " + seed + ": " + what);
        assertTrue(across.lateBatches() > 50, what);
        assertTrue(across.rttSamples() >= 2 * endedAtNaks.rttSamples(), what);
    }

    /**
     * Loss and late batches together (1% of requests lost, 5% of batches late): each lost packet goes again once, by
     * a NAK or the probe, no timer fires, nothing late goes twice.
     */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "2", "3"})
    void lossBehindLateBatchesIsRepairedByOneResendWithoutATimeout(long seed) {
        Cost sr = run(true, true, new Path(0.01, 0, 0, 0.05, seed), SoftQp.REORDER_THRESHOLD);
        System.out.println("loss and late batches, seed " + seed + ": " + sr);
        assertTrue(sr.lostRequests() > 10 && sr.lateBatches() > 10, sr::toString);
        assertEquals(sr.lostRequests(), sr.retransmitted(), sr::toString);
        assertEquals(0, sr.arrivedTwice(), sr::toString);
        assertEquals(0, sr.timeouts(), sr::toString);
    }

    /** 1% of the requests lost, nothing reordered: exactly one packet sent again per packet lost. */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "6", "7"})
    void onePercentLossCostsOneResendPerLostPacket(long seed) {
        Cost sr = run(true, true, new Path(0.01, 0, 0, seed), SoftQp.REORDER_THRESHOLD);
        System.out.println("1% loss, seed " + seed + ": " + sr);
        assertTrue(sr.lostRequests() > 10, sr::toString);
        assertEquals(sr.lostRequests(), sr.retransmitted(), sr::toString);
        assertEquals(0, sr.arrivedTwice(), sr::toString);
    }

    /**
     * Loss and reordering together (1% of requests lost, 2% overtaken by one or two): what is lost goes again, once
     * (seeds 1-3: 33 of 33, 25 of 24, 27 of 27), and what is late costs nothing; with a threshold of 1 some late ones
     * were sent again too (8-11 arrived twice).
     */
    @ParameterizedTest(name = "seed {0}")
    @CsvSource({"1", "2", "3"})
    void lossAndReorderingTogether(long seed) {
        Path path = new Path(0.01, 0, 0.02, seed);
        Cost sr = run(true, true, path, SoftQp.REORDER_THRESHOLD);
        Cost eager = run(true, true, path, 1, false);
        String what = "threshold " + SoftQp.REORDER_THRESHOLD + ": " + sr + ", threshold 1: " + eager;
        System.out.println("loss and reordering, seed " + seed + ": " + what);
        assertTrue(sr.lostRequests() > 10 && sr.late() > 20, what);
        assertTrue(sr.retransmitted() <= sr.lostRequests() + 2, what);
        assertEquals(0, sr.arrivedTwice(), what);
        // fewer than in the reordering alone: while a loss is being repaired the responder NAKs only its gap
        assertTrue(eager.arrivedTwice() >= 5 && eager.retransmitted() - eager.lostRequests() >= 5, what);
    }

    /** What {@link #oneWriteLosing} cost: A's counters, B's duplicates, the clock from the post to the completion. */
    record TailCost(long resends, long probes, long timeouts, long arrivedTwice, long nanos) {}

    /**
     * One signalled WRITE of {@code packets} packets (MTU 1024) after {@link #offerTheMode}, the first copy of each
     * packet in {@code lost} (its index in the WRITE) lost; the clock moves 10 us a step while nothing is in flight.
     */
    static TailCost oneWriteLosing(int packets, Set<Integer> lost) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = packets * 1024;
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            RcPair.fill(src.segment(), len, 29);
            offerTheMode(net, pair, src, dst);
            int first = soft(pair.a.qp).requester.nextPsn;
            Set<Integer> dropped = new HashSet<>();
            net.drop = p -> p.from() == ta
                    && Opcode.isRc(p.opcode())
                    && lost.contains(Psn.diff(p.psn(), first))
                    && dropped.add(p.psn());
            long start = net.clock.nanoTime();
            pair.postWrite(1, src, dst, len);
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 10_000, 10_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, len, 29);
            assertEquals(lost.size(), dropped.size());
            return new TailCost(
                    ta.counters.get(Counter.TX_SELECTIVE_RESENDS),
                    ta.counters.get(Counter.RETRY_PROBES),
                    ta.counters.get(Counter.RETRY_TIMEOUTS),
                    tb.counters.get(Counter.RX_DUPLICATE_REQUEST),
                    net.clock.nanoTime() - start);
        }
    }

    /**
     * The last packet lost after a loss in the middle (so a loss was seen): the middle one goes again at the NAK that
     * counts three kept beyond it, the last one at the probe (200 us here), not at the retransmission timeout.
     */
    @Test
    void aLostLastPacketIsRecoveredByTheProbeNotTheTimeout() {
        TailCost c = oneWriteLosing(10, Set.of(3, 9));
        assertEquals(new TailCost(2, 1, 0, 0, c.nanos()), c, "two resends, one probe, no timeout");
        assertTrue(c.nanos() < 2 * Completer.PROBE_FLOOR_NANOS, c::toString);
    }

    /**
     * A gap with two packets after it at the end of the WRITE: the peer keeps fewer than the threshold beyond it, so no
     * NAK sends it again; the probe does, alone (the peer said it keeps both packets after it).
     */
    @Test
    void aGapWithFewerThanThresholdPacketsAfterItIsRepairedByTheProbe() {
        TailCost c = oneWriteLosing(10, Set.of(7));
        assertEquals(new TailCost(1, 1, 0, 0, c.nanos()), c, "one resend, one probe, no timeout");
        assertTrue(c.nanos() < 2 * Completer.PROBE_FLOOR_NANOS, c::toString);
    }

    @Test
    void againstAPeerNotInTheModeEachEndGoesBackN() {
        // A in the mode, B not: B's NAKs carry no mark, so A goes back N
        Cost aOnly = run(true, false, 0.02, 0, 5);
        assertEquals(0, aOnly.selectiveResends(), aOnly::toString);
        assertTrue(aOnly.retransmitted() > aOnly.lostRequests(), aOnly::toString);
        // B in the mode, A not: A's requests carry no offer, so B keeps nothing beyond a gap and marks nothing (IrnTest
        // checks the marks): go-back-N, and every byte still arrives once
        Cost bOnly = run(false, true, 0.02, 0, 5);
        assertEquals(0, bOnly.selectiveResends(), bOnly::toString);
        assertTrue(bOnly.retransmitted() > bOnly.lostRequests(), bOnly::toString);
    }

    /**
     * The last packets of a run lost, before any gap was ever NAKed: the marked ACKs told A that B keeps what follows a
     * gap, so one timeout sends the oldest unacknowledged packet and the last one, B NAKs the gap between, and the lost
     * packets go again with two packets in vain (go-back-N would resend the whole run). B keeps one packet beyond each
     * gap, fewer than the reordering threshold, so probes resend them, not the NAKs.
     */
    @Test
    void aLossAtTheTailCostsOneTimeoutAndTheLostPacketsAndTwoInVain() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A);
            int n = 10; // 10 WRITEs of 4 KiB: 40 packets, the last signalled
            MemoryRegion src = pair.a.mrAll((long) SIZE * n), dst = pair.b.mrAll((long) SIZE * n);
            RcPair.fill(src.segment(), (long) SIZE * n, 17);
            int first = soft(pair.a.qp).requester.nextPsn, last = Psn.add(first, 4 * n - 1);
            // a first exchange, so that B has acknowledged something (marked) before the loss
            pair.postWrite(99, src, dst, 64);
            net.deliver();
            assertTrue(soft(pair.a.qp).completer.peerHolds, "A learned from B's marked ACK");
            pair.a.cq.poll(WorkCompletion.array(1));
            Set<Integer> lost = new HashSet<>();
            int from = Psn.add(first, 1 + 4 * n - 3); // the WRITE above took PSN first
            net.drop = p -> p.from() == ta
                    && Psn.diff(p.psn(), from) >= 0
                    && Psn.diff(p.psn(), Psn.add(last, 1)) <= 0
                    && lost.add(p.psn());
            SendWorkRequest head = null, prev = null;
            for (int i = 0; i < n; i++) {
                SendWorkRequest wr = new SendWorkRequest()
                        .wrId(i)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .buffer(src, (long) SIZE * i, SIZE)
                        .remote(dst.address() + (long) SIZE * i, dst.rkey())
                        .signaled(i == n - 1);
                if (head == null) head = wr;
                else prev.next = wr;
                prev = wr;
            }
            long start = net.clock.nanoTime();
            pair.a.qp.postSend(head);
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 10_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, (long) SIZE * n, 17);
            assertEquals(3, lost.size());
            StringBuilder trace = new StringBuilder();
            long requests = 0;
            for (DeterministicNetwork.Packet p : net.log) {
                trace.append(p.from() == ta ? " A" : " B")
                        .append(p.opcode())
                        .append('@')
                        .append(p.psn());
                if (p.from() == ta && Opcode.isRc(p.opcode())) requests++;
            }
            // the timeout sends the oldest unacknowledged packet and the last one: the oldest had arrived,
            // unacknowledged (none of the packets that arrived asked for an ACK), so it goes in vain. B NAKs the first
            // gap keeping one packet beyond it (the last), below the reordering threshold: A's probe sends the gap and,
            // since one kept packet need not be the last, the last again (in vain); the second probe the other gap
            // alone (B keeps every packet after it). Before the threshold the NAKs resent each gap: one in vain.
            assertEquals(1 + 4 * n + 3 + 2, requests, "each packet once, the three lost twice, two in vain:" + trace);
            assertEquals(5, ta.counters.get(Counter.TX_SELECTIVE_RESENDS), "the timeout's two, the probes' three");
            assertEquals(2, ta.counters.get(Counter.RETRY_PROBES), trace::toString);
            assertTrue(net.clock.nanoTime() - start < 2 * 67_000_000L, "one timeout: " + trace);
        }
    }

    /**
     * The first packet of a WRITE lost, and its resend too: B's marked NAK said it keeps every packet after it, so the
     * probe (or timeout) that repairs the lost resend sends that packet alone, not the last one as well (a probe of the
     * tail, which B has: it would arrive twice). Resent: the lost packet twice, nothing else; B sees no duplicate.
     */
    @Test
    void aLostResendIsSentAgainAloneWhenThePeerSaidItKeepsTheTail() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = 10 * 1024; // ten packets at MTU 1024
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            RcPair.fill(src.segment(), len, 23);
            offerTheMode(net, pair, src, dst);
            int first = soft(pair.a.qp).requester.nextPsn;
            int[] copies = {0};
            net.drop = p -> p.from() == ta && p.psn() == first && ++copies[0] <= 2; // it and its first resend
            pair.postWrite(1, src, dst, len);
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 10_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, len, 23);
            long requests = net.log.stream()
                    .filter(p -> p.from() == ta && Opcode.isRc(p.opcode()) && Psn.diff(p.psn(), first) >= 0)
                    .count();
            assertEquals(3, copies[0], "the first packet: lost, its resend lost, then the probe's");
            assertEquals(10 + 2, requests, "each packet once, the lost one twice more");
            assertEquals(0, tb.counters.get(Counter.RX_DUPLICATE_REQUEST), "nothing arrived twice");
        }
    }

    @Test
    void sendsLostInTheMiddleOfARunArriveOnceAndInOrder() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int n = 40, len = 3000; // 3 packets each
            MemoryRegion src = pair.a.mrAll((long) len * n), dst = pair.b.mrAll((long) len * n);
            RcPair.fill(src.segment(), (long) len * n, 11);
            // a round trip measured first (a WRITE the first SEND overwrites): the probe arms only once there is one
            offerTheMode(net, pair, src, dst);
            for (int i = 0; i < n; i++)
                pair.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(dst, (long) len * i, len));
            Set<Integer> lostOnce = new HashSet<>();
            net.drop = p -> p.from() == ta && p.psn() % 7 == 3 && lostOnce.add(p.psn()); // every 7th, first copy
            SendWorkRequest first = null, prev = null;
            for (int i = 0; i < n; i++) {
                SendWorkRequest wr = new SendWorkRequest()
                        .wrId(i)
                        .opcode(WrOpcode.SEND)
                        .buffer(src, (long) len * i, len)
                        .signaled(true);
                if (prev == null) first = wr;
                else prev.next = wr;
                prev = wr;
            }
            pair.a.qp.postSend(first);
            WorkCompletion[] wcs = WorkCompletion.array(n);
            int[] got = {0}, sent = {0};
            net.runUntil(
                    () -> {
                        int k = pair.b.cq.poll(wcs);
                        for (int i = 0; i < k; i++) {
                            assertEquals(WcStatus.SUCCESS, wcs[i].status);
                            assertEquals(got[0]++, wcs[i].wrId, "in order");
                            assertEquals(len, wcs[i].byteLen);
                        }
                        sent[0] += pair.a.cq.poll(WorkCompletion.array(n));
                        return got[0] == n && sent[0] == n;
                    },
                    1_000_000,
                    10_000_000_000L);
            RcPair.assertFilled(dst.segment(), 0, (long) len * n, 11);
            assertTrue(tb.counters.get(Counter.RX_OUT_OF_ORDER_HELD) > 0);
            // a gap with fewer packets kept behind it than the batch after its own (the last SENDs: one batch of 32
            // overtaken by the next would look the same) waits for the probe, which sends the oldest (and the last,
            // unless the peer said it keeps it); before guest21 (a fixed threshold of 3) no probe: 17 of 17
            long probes = ta.counters.get(Counter.RETRY_PROBES),
                    resends = ta.counters.get(Counter.TX_SELECTIVE_RESENDS);
            String what = resends + " resends, " + probes + " probes, " + lostOnce.size() + " lost";
            assertTrue(probes <= 2, what);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS), what);
            assertTrue(resends >= lostOnce.size() && resends <= lostOnce.size() + 2 * probes, what);
        }
    }

    @Test
    void twoDifferentPacketsForOneHeldPsnAreBothDroppedAndThePeerFillsTheGap() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            offerTheMode(net, pair, src, dst); // B keeps what follows a gap once A's offer arrived in sequence
            RcPair.fill(src.segment(), SIZE, 21);
            int first = soft(pair.a.qp).requester.nextPsn;
            boolean[] done = {false, false};
            net.drop = p -> {
                if (p.from() != ta) return false;
                if (p.psn() == first && !done[0]) return done[0] = true; // a gap, so what follows is held
                if (p.psn() == first + 2 && !done[1]) { // a forged copy overtakes the real one
                    done[1] = true;
                    byte[] forged = p.bytes().clone();
                    forged[Bth.BYTES] ^= 0x5A; // the first payload byte of a WRITE MIDDLE
                    withIcrc(ByteBuffer.wrap(forged), forged.length, DeterministicNetwork.A, DeterministicNetwork.B);
                    net.inFlight.add(new DeterministicNetwork.Packet(forged, p.to(), p.from()));
                    net.inFlight.add(p);
                    return true;
                }
                return false;
            };
            pair.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, SIZE)
                    .remote(dst.address(), dst.rkey())
                    .signaled(true));
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 10_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, SIZE, 21); // the real bytes, not the forged ones
            assertTrue(done[1]);
            assertEquals(1, tb.counters.get(Counter.RX_OUT_OF_ORDER_NOT_HELD), "the conflict: neither copy kept");
            assertEquals(2, ta.counters.get(Counter.TX_SELECTIVE_RESENDS), "the gap and the PSN the conflict emptied");
        }
    }

    @Test
    void aMarkedNakThatNamesNoPacketInFlightIsACountedDrop() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            pair.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, SIZE)
                    .remote(dst.address(), dst.rkey())
                    .signaled(true));
            SoftQp qa = soft(pair.a.qp);
            int far = Psn.add(qa.requester.sentEnd, 1000);
            long before = ta.counters.get(Counter.RX_RESPONSE_OUT_OF_WINDOW);
            net.inFlight.add(
                    new DeterministicNetwork.Packet(markedNak(qa, far, 0), ta, net.transport(DeterministicNetwork.B)));
            net.deliver();
            assertEquals(before + 1, ta.counters.get(Counter.RX_RESPONSE_OUT_OF_WINDOW), "dropped and counted");
            assertEquals(0, ta.counters.get(Counter.TX_SELECTIVE_RESENDS), "nothing sent again for it");
            assertNotNull(pair.awaitOk(pair.a.cq));
        }
    }

    /**
     * A first WRITE of 64 bytes, delivered and completed: it carries A's offer of the mode, which B takes once it has
     * executed it in sequence, and B's marked ACK tells A that B keeps what follows a gap.
     */
    static void offerTheMode(DeterministicNetwork net, RcPair pair, MemoryRegion src, MemoryRegion dst) {
        pair.postWrite(-1, src, dst, 64);
        net.deliver();
        assertEquals(1, pair.a.cq.poll(WorkCompletion.array(1)));
        assertTrue(soft(pair.b.qp).responder.requesterOffers, "B took A's offer");
        assertTrue(soft(pair.a.qp).completer.peerHolds, "A learned from B's marked ACK");
    }

    /**
     * A PSN sequence NAK with jrdma's mark at {@code psn}, its MSN field claiming {@code held} packets kept beyond it,
     * to A's QP, as B would build it.
     */
    static byte[] markedNak(SoftQp to, int psn, int held) {
        ByteBuffer b = ByteBuffer.allocate(64);
        int len = RocePacket.writeBth(
                b, 0, Opcode.ACKNOWLEDGE.code(), false, Bth.DEFAULT_PKEY, to.qpNum(), false, psn, 0);
        Aeth.write(b, Bth.BYTES, Aeth.nakSyndrome(Aeth.NAK_PSN_SEQUENCE_ERROR), held);
        Bth.setHoldsMark(b, 0);
        withIcrc(b, len, DeterministicNetwork.B, DeterministicNetwork.A);
        byte[] out = new byte[len];
        b.get(0, out);
        return out;
    }

    /** Writes the ICRC of the {@code len}-byte packet in {@code b} sent from {@code from} to {@code to}. */
    static void withIcrc(ByteBuffer b, int len, java.net.Inet4Address from, java.net.Inet4Address to) {
        new Icrc()
                .generate(
                        b,
                        0,
                        len,
                        IpAddress.of(from).ipv4(),
                        IpAddress.of(to).ipv4(),
                        DeterministicNetwork.PORT,
                        DeterministicNetwork.PORT);
    }
}
