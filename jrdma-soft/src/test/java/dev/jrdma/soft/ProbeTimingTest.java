package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The selective-repeat probe's timing ({@link Completer#probeWait}) on the deterministic network (manual clock): B's
 * answers come late by turns (200 us, and every fifth 3 ms, as in the QEMU guest, where a vCPU holds a whole batch
 * back now and then) after a loss was seen, so the probe is armed after every WRITE. A probe at 4 x srtt fired 12 times
 * in the forty WRITEs (-Djrdma.soft.probeDeviation=false) and sent packets that had arrived; at srtt + 4 rttvar none
 * does, and a real tail loss right after is still repaired by one probe, long before the QP's timeout.
 */
@Timeout(60)
class ProbeTimingTest {
    /** The clock's step while nothing is in flight. */
    static final long STEP_NANOS = 10_000;

    static final long QUICK_NANOS = 200_000, LATE_NANOS = 3_000_000;

    /** How late B's answers to the {@code i}th WRITE of a jittery run come. */
    static long answerDelay(int i) {
        return i % 5 == 4 ? LATE_NANOS : QUICK_NANOS;
    }

    /** The network, with B's answers held back {@link #delayNanos} when {@link #holding}. */
    final DeterministicNetwork net = DeterministicNetwork.faultless();

    record Held(DeterministicNetwork.Packet packet, long due) {}

    final List<Held> held = new ArrayList<>();
    final Set<DeterministicNetwork.Packet> released = Collections.newSetFromMap(new IdentityHashMap<>());
    boolean holding;
    long delayNanos;

    /** Delivers, hands B's held answers back once due, and moves the clock while nothing moves, until {@code done}. */
    void runUntil(BooleanSupplier done) {
        long start = net.clock.nanoTime();
        while (!done.getAsBoolean()) {
            assertTrue(net.clock.nanoTime() - start < 10_000_000_000L, "not done after 10 s");
            if (net.deliver()) continue;
            boolean moved = false;
            for (var it = held.iterator(); it.hasNext(); ) {
                Held h = it.next();
                if (net.clock.nanoTime() - h.due() < 0) continue;
                it.remove();
                released.add(h.packet());
                net.inFlight.add(h.packet());
                moved = true;
            }
            if (!moved) net.advance(STEP_NANOS);
        }
    }

    @Test
    void aJitteryRoundTripSendsNoProbeWhileATailLossIsStillRepairedByOne() {
        try (RcPair pair = net.pair()) {
            soft(pair.a.qp).selectiveRepeat = true;
            soft(pair.b.qp).selectiveRepeat = true;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            Completer completer = soft(pair.a.qp).completer;
            int len = 10 * 1024; // ten packets at MTU 1024
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            RcPair.fill(src.segment(), len, 31);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            Set<Integer> lose = new java.util.HashSet<>();
            net.drop = p -> {
                if (p.from() == ta) return Opcode.isRc(p.opcode()) && lose.remove(p.psn());
                if (!holding || released.contains(p)) return false;
                held.add(new Held(p, net.clock.nanoTime() + delayNanos)); // B's answer, handed back later
                return true;
            };
            WorkCompletion[] wc = WorkCompletion.array(1);
            // the estimator learns the jitter first: no loss seen yet, so no probe is armed
            jitteryWrites(pair, src, dst, wc, 0);
            assertEquals(0, ta.counters.get(Counter.RETRY_PROBES));
            // a loss in the middle of a WRITE, repaired by B's NAK: a loss seen, so the probe is armed from here on
            int first = soft(pair.a.qp).requester.nextPsn;
            lose.add(Psn.add(first, 3));
            pair.postWrite(2, src, dst, len);
            runUntil(() -> pair.a.cq.poll(wc) == 1);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            assertEquals(1, ta.counters.get(Counter.TX_SELECTIVE_RESENDS));
            String estimate = "srtt " + completer.srttNanos + " ns, rttvar " + completer.rttVarNanos
                    + " ns, probe wait " + completer.probeWait() + " ns";
            // the same jitter: every answer comes before the probe's time, so nothing goes twice
            jitteryWrites(pair, src, dst, wc, 40);
            assertEquals(0, ta.counters.get(Counter.RETRY_PROBES), estimate);
            assertEquals(0, tb.counters.get(Counter.RX_DUPLICATE_REQUEST), estimate);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS), estimate);
            assertTrue(completer.probeWait() > LATE_NANOS && completer.probeWait() < 4 * LATE_NANOS, estimate);
            // a real tail loss: the last packet of a WRITE (and one in its middle, so that the NAK says B keeps what
            // follows it) goes again at the probe, once, not at the QP's timeout
            first = soft(pair.a.qp).requester.nextPsn;
            lose.add(Psn.add(first, 3));
            lose.add(Psn.add(first, 9));
            long start = net.clock.nanoTime();
            pair.postWrite(3, src, dst, len);
            runUntil(() -> pair.a.cq.poll(wc) == 1);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, len, 31);
            long took = net.clock.nanoTime() - start;
            assertEquals(
                    3,
                    ta.counters.get(Counter.TX_SELECTIVE_RESENDS),
                    "the first loss's, then the NAK's and the probe's");
            assertEquals(1, ta.counters.get(Counter.RETRY_PROBES), estimate);
            assertEquals(0, ta.counters.get(Counter.RETRY_TIMEOUTS), estimate);
            assertEquals(0, tb.counters.get(Counter.RX_DUPLICATE_REQUEST), estimate);
            assertTrue(
                    took < 2 * completer.probeWait() && took < soft(pair.a.qp).timeoutNanos, took + " ns, " + estimate);
        }
    }

    /**
     * A round trip longer than the QP's timeout (the QEMU guest: ~100 ms against 67 ms), no round trip measured yet,
     * one WRITE at a time: the first times out and goes again, and the backed-off wait then stays until a round trip
     * is measured (Karn), so the next WRITE measures one and no further timeout fires. Before guest21 (progress reset
     * the back-off) every WRITE timed out, resending the very packet it sampled, and srtt stayed 0.
     */
    @ParameterizedTest(name = "as before guest21: {0}")
    @ValueSource(booleans = {false, true})
    void aRoundTripLongerThanTheTimeoutIsMeasuredAfterOneTimeout(boolean before) {
        try (RcPair pair = net.pair()) {
            SoftQp a = soft(pair.a.qp);
            a.completer.rttAcrossNaks = !before;
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(1024), dst = pair.b.mrAll(1024);
            net.drop = p -> {
                if (p.from() == ta || !holding || released.contains(p)) return false;
                held.add(new Held(p, net.clock.nanoTime() + delayNanos)); // B's answer, handed back later
                return true;
            };
            holding = true;
            delayNanos = a.timeoutNanos * 3 / 2;
            WorkCompletion[] wc = WorkCompletion.array(1);
            for (int i = 0; i < 10; i++) {
                pair.postWrite(i, src, dst, 1024);
                runUntil(() -> pair.a.cq.poll(wc) == 1);
                assertEquals(WcStatus.SUCCESS, wc[0].status);
            }
            long timeouts = ta.counters.get(Counter.RETRY_TIMEOUTS);
            String what =
                    timeouts + " timeouts, srtt " + a.completer.srttNanos + " ns, timeout " + a.timeoutNanos + " ns";
            System.out.println("round trip 1.5 x the timeout, before guest21 " + before + ": " + what);
            if (before) {
                assertEquals(10, timeouts, what);
                assertEquals(0, a.completer.srttNanos, what);
            } else {
                assertEquals(1, timeouts, what);
                assertTrue(a.completer.srttNanos >= delayNanos, what);
            }
        }
    }

    /** 40 one-packet signalled WRITEs, one at a time, B's answer to each held {@link #answerDelay} (from {@code from}). */
    void jitteryWrites(RcPair pair, MemoryRegion src, MemoryRegion dst, WorkCompletion[] wc, int from) {
        holding = true;
        for (int i = 0; i < 40; i++) {
            delayNanos = answerDelay(from + i);
            pair.postWrite(10 + from + i, src, dst, 1024);
            runUntil(() -> pair.a.cq.poll(wc) == 1);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
        }
        holding = false;
    }
}
