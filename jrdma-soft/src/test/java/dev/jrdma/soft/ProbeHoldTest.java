package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The selective-repeat probe and a peer that is behind on its same-host ring (issue 23 §5, issue 24 §5: starvation is
 * not silence), on the deterministic network (manual clock), whose packets in flight play the peer's ring: a packet
 * not yet delivered is one the peer has not taken ({@link Transport#peerBehind}), a lost one is gone from it. Before,
 * a probe fired every 200 us of a descheduled peer's absence and sent packets again that the peer then took twice.
 */
@Timeout(60)
class ProbeHoldTest {
    static final int SIZE = 65536;

    /** A loss seen (arms the probe for a second): the first copy of the second packet of a WRITE is lost, repaired. */
    private static void aLossSeen(DeterministicNetwork net, RcPair pair, MemoryRegion src, MemoryRegion dst) {
        net.drop = IrnRecoveryTest.firstCopies(1, 1);
        write(pair, src, dst, 1);
        net.runUntil(() -> pair.a.cq.poll(WorkCompletion.array(1)) == 1, 50_000, 1_000_000_000L);
        net.drop = p -> false;
        assertTrue(net.dropped >= 1, "the loss happened");
    }

    private static void write(RcPair pair, MemoryRegion src, MemoryRegion dst, long id) {
        pair.postWrite(id, src, dst, SIZE);
    }

    @Test
    void noProbeFiresWhileThePeerHasNotTakenThePacketsAndTheyCompleteOnceItDoes() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.bulkPair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            aLossSeen(net, pair, src, dst);
            long probes = ta.counters.get(Counter.RETRY_PROBES),
                    resends = ta.counters.get(Counter.TX_SELECTIVE_RESENDS),
                    sent = net.sent;
            RcPair.fill(src.segment(), SIZE, 3);
            write(pair, src, dst, 2);
            long packets = net.sent - sent;
            // the peer's threads are off the CPU for 2 ms (ten probe floors): its ring keeps the packets
            for (int i = 0; i < 40; i++) net.advance(50_000);
            assertEquals(0, ta.counters.get(Counter.RETRY_PROBES) - probes, "no probe while the peer is behind");
            assertEquals(0, ta.counters.get(Counter.TX_SELECTIVE_RESENDS) - resends);
            assertEquals(packets, net.sent - sent, "nothing sent again");
            assertTrue(ta.counters.get(Counter.RETRY_PROBES_HELD) >= 2, "probes held: " + ta.counters);
            net.deliver();
            WorkCompletion[] wc = WorkCompletion.array(1);
            assertEquals(1, pair.a.cq.poll(wc));
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, SIZE, 3);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS));
        }
    }

    @Test
    void aProbeStillFiresWhenThePeerTookThePacketsAndTheAnswerWasLost() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.bulkPair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            aLossSeen(net, pair, src, dst);
            long probes = ta.counters.get(Counter.RETRY_PROBES);
            net.drop = p -> p.from() == tb; // the peer took the packets; its answers are lost
            write(pair, src, dst, 2);
            net.deliver();
            net.drop = p -> false;
            net.runUntil(() -> pair.a.cq.poll(WorkCompletion.array(1)) == 1, 50_000, 10_000_000L);
            assertTrue(ta.counters.get(Counter.RETRY_PROBES) - probes >= 1, "the probe repaired it: " + ta.counters);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS));
        }
    }

    /**
     * A peer that died (it never takes a packet again, so it stays behind for ever) right after a loss was seen: held
     * probes never hold the IBA timeout, so RETRY_EXC_ERR comes after retry_cnt + 1 timeouts, each the QP's timeout
     * doubled per timeout in a row (at most 1 s), plus a clock step per timeout (the test's timer fires on its steps).
     */
    @Test
    void aPeerThatDiedIsStillReportedAfterTheRetriesTimeouts() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.bulkPair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            aLossSeen(net, pair, src, dst);
            SoftQp qp = soft(pair.a.qp);
            long bound = 0, t = qp.timeoutNanos;
            for (int i = 0; i <= qp.retryCnt; i++, t = Math.min(t << 1, Math.max(qp.timeoutNanos, 1_000_000_000L)))
                bound += t;
            long step = 100_000, start = net.clock.nanoTime();
            bound += (qp.retryCnt + 1) * step; // each timeout fires up to a clock step late and the next starts then
            write(pair, src, dst, 2);
            WorkCompletion[] wc = WorkCompletion.array(1);
            while (pair.a.cq.poll(wc) == 0) {
                assertTrue(net.clock.nanoTime() - start <= bound, "not reported within " + bound + " ns");
                net.advance(step); // nothing is ever delivered: the peer is gone
            }
            assertEquals(WcStatus.RETRY_EXC_ERR, wc[0].status);
            assertTrue(net.clock.nanoTime() - start <= bound);
            assertTrue(ta.counters.get(Counter.RETRY_PROBES_HELD) >= 1, ta.counters::toString);
        }
    }
}
