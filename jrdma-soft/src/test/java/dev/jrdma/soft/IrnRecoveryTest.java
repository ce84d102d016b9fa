package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.Random;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 23 §4, IRN's loss recovery without the retry timer, on the deterministic network (manual clock), with
 * perftest's settings (MTU 4096, 64 KiB WRITEs, 128 outstanding, timeout 14: 67 ms): a lost resend goes again as soon
 * as a later packet shows it lost; a lost answer when nothing more goes out (the window at its reach, the queue empty)
 * costs a probe of a few round trips, not the QP's timeout; random loss costs round trips, never a timeout.
 */
@Timeout(120)
class IrnRecoveryTest {
    static final int SIZE = 65536, DEPTH = 128;

    /** What a run took: delivery rounds (half round trips), time stalled with nothing in flight, counters of A. */
    record Run(long rounds, long stalledMicros, long lostRequests, long lostResponses, Transport a) {
        long count(Counter c) {
            return a.counters.get(c);
        }

        @Override
        public String toString() {
            return "rounds " + rounds + ", stalled " + stalledMicros + " us, lost " + lostRequests + " requests and "
                    + lostResponses + " responses, resends " + count(Counter.TX_SELECTIVE_RESENDS) + ", found lost "
                    + count(Counter.RESENDS_FOUND_LOST) + ", probes " + count(Counter.RETRY_PROBES) + ", timeouts "
                    + count(Counter.RETRY_TIMEOUTS);
        }
    }

    /**
     * {@code messages} WRITEs of {@code size} bytes from A to B, {@link #DEPTH} outstanding, every byte checked, the
     * packets {@code lose} says lost; the clock moves 50 us at a time while nothing is in flight.
     */
    static Run run(int messages, int size, Predicate<DeterministicNetwork.Packet> lose) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        net.keepLog = false;
        try (RcPair pair = net.bulkPair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            long[] lost = {0, 0};
            long bytes = (long) size * Math.min(messages, DEPTH);
            MemoryRegion src = pair.a.mrAll(bytes), dst = pair.b.mrAll(bytes);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), bytes, 9);
            net.drop = p -> {
                if (!lose.test(p)) return false;
                lost[p.from() == ta ? 0 : 1]++;
                return true;
            };
            int posted = 0, done = 0;
            long rounds = 0, stalled = 0;
            WorkCompletion[] wcs = WorkCompletion.array(64);
            while (true) {
                int n = pair.a.cq.poll(wcs);
                for (int i = 0; i < n; i++) assertEquals(WcStatus.SUCCESS, wcs[i].status);
                done += n;
                if (done == messages) break;
                while (posted < messages && posted - done < DEPTH) {
                    int i = posted++;
                    long off = (long) size * (i % DEPTH);
                    pair.a.qp.postSend(new SendWorkRequest()
                            .wrId(i)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, off, size)
                            .remote(dst.address() + off, dst.rkey())
                            .signaled(true));
                }
                if (net.moveOn()) {
                    rounds++;
                    continue;
                }
                assertTrue(stalled < 10_000_000_000L, "not done");
                net.advance(50_000);
                stalled += 50_000;
            }
            RcPair.assertFilled(dst.segment(), 0, bytes, 9);
            return new Run(rounds, stalled / 1000, lost[0], lost[1], ta);
        }
    }

    /** The first {@code copies} copies of request packet {@code k} of the run (counted from its first PSN) are lost. */
    static Predicate<DeterministicNetwork.Packet> firstCopies(int k, int copies) {
        int[] seen = {0};
        int[] first = {-1};
        return p -> {
            if (!Opcode.isRc(p.opcode()) || p.opcode() == Opcode.ACKNOWLEDGE.code()) return false;
            if (first[0] < 0) first[0] = p.psn();
            return Psn.diff(p.psn(), first[0]) == k && seen[0]++ < copies;
        };
    }

    @Test
    void aLostResendGoesAgainAsSoonAsALaterPacketShowsItLost() {
        Run r = run(100, SIZE, firstCopies(300, 2)); // the packet and its first resend
        System.out.println("a lost resend: " + r);
        assertEquals(2, r.lostRequests(), r::toString);
        assertEquals(1, r.count(Counter.RESENDS_FOUND_LOST), r::toString);
        assertEquals(2, r.count(Counter.TX_SELECTIVE_RESENDS), r::toString);
        assertEquals(0, r.count(Counter.RETRY_TIMEOUTS), r::toString);
        assertEquals(0, r.stalledMicros(), r::toString);
    }

    /**
     * Loses the first copy of request packet 1 (a sequence NAK: a loss seen, which arms the probe), then the first
     * {@code answers} ACKs of the last packet of {@code messages} 4-packet WRITEs.
     */
    static Predicate<DeterministicNetwork.Packet> aLossThenTheLastAcks(int messages, int answers) {
        Predicate<DeterministicNetwork.Packet> early = firstCopies(1, 1);
        int[] first = {-1}, lost = {0};
        return p -> {
            if (first[0] < 0 && Opcode.isRc(p.opcode()) && p.opcode() != Opcode.ACKNOWLEDGE.code()) first[0] = p.psn();
            if (early.test(p)) return true;
            return p.opcode() == Opcode.ACKNOWLEDGE.code()
                    && Psn.diff(p.psn(), first[0]) == 4 * messages - 1
                    && lost[0]++ < answers;
        };
    }

    @Test
    void aLostAckWithNothingMoreToSendCostsAProbeNotTheTimeout() {
        // two WRITEs of 4 packets; a request packet is lost, then the ACK of the last packet
        Run r = run(2, 4 * 4096, aLossThenTheLastAcks(2, 1));
        System.out.println("a lost ACK at the tail after a loss: " + r);
        assertEquals(1, r.lostRequests(), r::toString);
        assertEquals(1, r.lostResponses(), r::toString);
        assertEquals(1, r.count(Counter.RETRY_PROBES), r::toString);
        assertEquals(0, r.count(Counter.RETRY_TIMEOUTS), r::toString);
        assertTrue(r.stalledMicros() <= 2 * Completer.PROBE_FLOOR_NANOS / 1000, r::toString);
    }

    @Test
    void aLostProbeIsProbedAgainLaterNotTimedOut() {
        // as above; the ACK and the answer to the first probe are lost (the probe sends the oldest packet alone: the
        // NAK said the peer keeps every packet after it, so not the last one too)
        Run r = run(2, 4 * 4096, aLossThenTheLastAcks(2, 2));
        System.out.println("a lost ACK and a lost answer to the probe: " + r);
        assertEquals(2, r.lostResponses(), r::toString);
        assertEquals(2, r.count(Counter.RETRY_PROBES), r::toString);
        assertEquals(0, r.count(Counter.RETRY_TIMEOUTS), r::toString);
        assertTrue(r.stalledMicros() <= 3 * Completer.PROBE_FLOOR_NANOS / 1000, r::toString); // 200 us, then 400
    }

    @Test
    void onAPathThatLostNothingALostTailAckCostsTheTimeoutNotAProbe() {
        boolean[] once = {false};
        Run r = run(1, 4 * 4096, p -> p.opcode() == Opcode.ACKNOWLEDGE.code() && !once[0] && (once[0] = true));
        System.out.println("a lost ACK at the tail of a clean path: " + r);
        assertEquals(1, r.lostResponses(), r::toString);
        assertEquals(0, r.count(Counter.RETRY_PROBES), r::toString);
        assertEquals(1, r.count(Counter.RETRY_TIMEOUTS), r::toString);
    }

    /**
     * A peer whose answers come late (its threads off the CPU for a millisecond, five probe floors) on a path that
     * lost nothing: nothing is sent again. Before, a probe resent packets at 200 us every time.
     */
    @Test
    void aSlowPeerOnACleanPathIsNotProbed() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.bulkPair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            long probes = ta.counters.get(Counter.RETRY_PROBES),
                    resends = ta.counters.get(Counter.TX_SELECTIVE_RESENDS);
            RcPair.fill(src.segment(), SIZE, 5);
            for (int round = 0; round < 20; round++) {
                pair.postWrite(round, src, dst, SIZE);
                net.advance(1_000_000); // the packets wait a millisecond before the peer takes them
                net.deliver();
                WorkCompletion[] wc = WorkCompletion.array(1);
                assertEquals(1, pair.a.cq.poll(wc), "round " + round);
                assertEquals(WcStatus.SUCCESS, wc[0].status);
            }
            RcPair.assertFilled(dst.segment(), 0, SIZE, 5);
            assertEquals(0, ta.counters.get(Counter.RETRY_PROBES) - probes);
            assertEquals(0, ta.counters.get(Counter.TX_SELECTIVE_RESENDS) - resends);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS));
        }
    }

    @ParameterizedTest(name = "loss {0} each way, seed {1}")
    @CsvSource({"0.01, 1", "0.01, 2", "0.03, 3"})
    void randomLossCostsRoundTripsNeverATimeout(double loss, long seed) {
        Run clean = run(600, SIZE, p -> false);
        Random rnd = new Random(seed);
        Run lossy = run(600, SIZE, p -> rnd.nextDouble() < loss);
        String what = "no loss " + clean + "; loss " + loss + " each way " + lossy;
        System.out.println(what);
        assertTrue(lossy.lostRequests() > 0 && lossy.lostResponses() > 0, what);
        assertEquals(0, lossy.count(Counter.RETRY_TIMEOUTS), what);
        long resent = lossy.count(Counter.TX_SELECTIVE_RESENDS);
        assertTrue(resent <= 1.5 * lossy.lostRequests(), "at most 1.5 resends per request lost: " + what);
        if (loss <= 0.01)
            assertTrue(
                    lossy.rounds() <= 1.1 * clean.rounds(), "1% loss costs at most a tenth more round trips: " + what);
        assertTrue(lossy.stalledMicros() <= 10 * Completer.PROBE_FLOOR_NANOS / 1000, what);
    }
}
