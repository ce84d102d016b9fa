package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/**
 * Issue 23 §3: DCQCN's arithmetic on a clock the test owns ({@link Dcqcn} takes the time as an argument): the rate cut,
 * the recovery curve (fast recovery, additive, hyper increase, back to line rate), alpha's decay, the pacer and the
 * notification point's one CNP per interval.
 */
class DcqcnTest {
    static final long LINE = 10_000_000_000L, US = 1000;
    static final double G = 1.0 / 256;

    /** 10 Gb/s line, the paper's other settings (55 us periods, F = 5, 10 MB byte counter, R_AI 40 Mb/s, R_HAI 400 Mb/s). */
    static Dcqcn.Params params() {
        return new Dcqcn.Params(
                true, LINE, 10_000_000L, G, 55 * US, 55 * US, 10L << 20, 5, 40_000_000L, 400_000_000L, 50 * US);
    }

    @Test
    void aCnpHalvesTheRateAtFirstAndTheTimerBringsItBackInFastRecoveryThenAdditiveIncrease() {
        Dcqcn d = new Dcqcn(params());
        long t = 1_000_000_000L;
        assertFalse(d.limited, "no CNP yet: the line rate, no pacing");
        d.onCnp(t);
        assertTrue(d.limited);
        assertEquals(LINE / 2, d.rateBps(), "alpha starts at 1: Rc (1 - 1/2)");
        assertEquals(1.0, d.alpha(), 1e-12, "(1 - g) 1 + g");
        double rate = LINE / 2.0, target = LINE;
        for (int event = 1; event <= 4; event++) { // fast recovery: Rc = (Rt + Rc) / 2, Rt unchanged
            d.catchUp(t + event * 55 * US);
            rate = (target + rate) / 2;
            assertEquals((long) rate, d.rateBps(), "fast recovery event " + event);
        }
        d.catchUp(t + 5 * 55 * US); // T = 5 = F: additive increase, Rt += R_AI (capped at the line rate)
        rate = (Math.min(LINE, target + 40_000_000L) + rate) / 2;
        assertEquals((long) rate, d.rateBps(), "additive increase");
        d.catchUp(t + 100 * 55 * US);
        assertFalse(d.limited, "back at line rate: unlimited again");
        assertEquals(LINE, d.rateBps());
    }

    @Test
    void aSecondCnpCutsByTheRaisedAlphaAndAlphaDecaysInPeriodsWithoutCnp() {
        Dcqcn d = new Dcqcn(params());
        long t = 0;
        d.onCnp(t);
        d.onCnp(t + 10 * US); // same alpha period
        double alpha = 1.0; // (1 - g) + g, twice
        assertEquals(alpha, d.alpha(), 1e-12);
        assertEquals(LINE / 4, d.rateBps(), "alpha 1 again: half of the half");
        d.catchUp(t + 10 * 55 * US); // the first period had CNPs: 9 periods of decay after it
        assertEquals(alpha * Math.pow(1 - G, 9), d.alpha(), 1e-12);
        long before = d.rateBps();
        double a = d.alpha();
        d.onCnp(t + 10 * 55 * US);
        assertEquals((long) (before * (1 - a / 2)), d.rateBps(), 2, "Rc (1 - alpha/2) with the decayed alpha");
    }

    @Test
    void bytesSentCountRateIncreaseEventsAndBothCountersPastFGiveHyperIncrease() {
        Dcqcn.Params p = new Dcqcn.Params(
                true, LINE, 10_000_000L, G, 55 * US, 55 * US, 1 << 20, 5, 40_000_000L, 400_000_000L, 50 * US);
        Dcqcn d = new Dcqcn(p);
        long t = 0;
        d.onCnp(t);
        d.onCnp(t);
        d.onCnp(t); // Rc = line/8, Rt = line/4
        assertEquals(LINE / 8, d.rateBps());
        // five timer events (no bytes): fast recovery to about Rt, then the byte counter's events while T >= F
        d.catchUp(t + 5 * 55 * US); // T = 5: four fast recovery events and one additive
        long afterTimer = d.rateBps();
        assertTrue(afterTimer > LINE / 8 && afterTimer < LINE / 4 + 40_000_000L, "recovered towards Rt: " + afterTimer);
        long now = t + 5 * 55 * US;
        for (int i = 0; i < 5 * 1024; i++) { // 5 MB in 1 KiB packets: BC = 5, as the pacer lets them go
            now = Math.max(now, d.nextSendAt());
            assertTrue(d.trySend(now, 1024));
        }
        // now both counters are at F: the next event is hyper increase, Rt += (min(T, BC) - F + 1) R_HAI
        long rateBefore = d.rateBps();
        for (int i = 0; i < 1024; i++) {
            now = Math.max(now, d.nextSendAt());
            d.trySend(now, 1024);
        }
        assertTrue(d.rateBps() - rateBefore > 100_000_000L, "hyper increase moved the rate by more than R_AI");
    }

    @Test
    void thePacerLetsAPacketGoEveryItsTimeAtTheCurrentRate() {
        Dcqcn d = new Dcqcn(params());
        long t = 1_000_000;
        d.onCnp(t); // 5 Gb/s: 1,000 bytes take 1.6 us
        assertTrue(d.trySend(t, 1000));
        assertEquals(t + 1600, d.nextSendAt());
        assertFalse(d.trySend(t + 1599, 1000), "too early");
        assertTrue(d.trySend(t + 1600, 1000));
        assertEquals(t + 3200, d.nextSendAt());
        // a pacer left idle starts from now: no saved-up burst
        d.catchUp(t + 500 * US);
        long rate = d.rateBps(); // nine rate-increase events later
        assertTrue(d.limited && rate > LINE / 2, "recovered part of the way: " + rate);
        assertTrue(d.trySend(t + 500 * US, 1000));
        assertEquals(t + 500 * US + (long) (8000 * 1e9 / rate), d.nextSendAt(), 1, "paced from now, at the new rate");
    }

    @Test
    void theNotificationPointSendsOneCnpPerIntervalHoweverManyPacketsAreMarked() {
        Dcqcn d = new Dcqcn(params());
        long t = 5_000_000;
        assertTrue(d.shouldSendCnp(t));
        for (long dt = 1; dt < 50 * US; dt += 997) assertFalse(d.shouldSendCnp(t + dt), "within 50 us");
        assertTrue(d.shouldSendCnp(t + 50 * US));
        Dcqcn off = new Dcqcn(new Dcqcn.Params(
                false, LINE, 10_000_000L, G, 55 * US, 55 * US, 10L << 20, 5, 40_000_000L, 400_000_000L, 50 * US));
        assertFalse(off.shouldSendCnp(t), "-Djrdma.soft.dcqcn=off: no CNPs");
        off.onCnp(t);
        assertFalse(off.limited, "nor rate cuts");
    }

    @Test
    void theLineRateScalesThePapersConstantsAndThePropertiesStillWin() {
        Dcqcn.Params ref = Dcqcn.Params.scaledTo(true, Dcqcn.REFERENCE_LINE_BPS);
        assertEquals(
                new Dcqcn.Params(
                        true,
                        Dcqcn.REFERENCE_LINE_BPS,
                        10_000_000L,
                        G,
                        55 * US,
                        55 * US,
                        10L << 20,
                        5,
                        40_000_000L,
                        400_000_000L,
                        50 * US),
                ref,
                "at the default line rate the paper's constants, as before");
        Dcqcn.Params slow = Dcqcn.Params.scaledTo(true, 100_000_000L); // 1000x slower: times x1000, rates /1000
        assertEquals(55 * US * 1000, slow.alphaPeriodNanos());
        assertEquals(55 * US * 1000, slow.increasePeriodNanos());
        assertEquals(50 * US * 1000, slow.cnpIntervalNanos());
        assertEquals(40_000L, slow.additiveBps());
        assertEquals(400_000L, slow.hyperBps());
        assertEquals(10_000L, slow.minRateBps());
        assertEquals(10L << 20, slow.increaseBytes(), "a rate times a time: unchanged");
        assertEquals(G, slow.g());
        assertEquals(5, slow.fastRecovery());
        assertThrows(IllegalArgumentException.class, () -> Dcqcn.Params.scaledTo(true, 0));

        java.util.Properties saved =
                (java.util.Properties) System.getProperties().clone();
        try {
            System.setProperty("jrdma.soft.dcqcn.lineRateMbps", "100");
            System.setProperty("jrdma.soft.dcqcn.additiveMbps", "0.5");
            Dcqcn.Params p = Dcqcn.Params.fromSystemProperties();
            assertEquals(100_000_000L, p.lineRateBps());
            assertEquals(500_000L, p.additiveBps(), "set on its own: as given (fractions of a Mb/s allowed)");
            assertEquals(55 * US * 1000, p.alphaPeriodNanos(), "not set: scaled to the line rate");
            assertEquals("0.5", p.describe().get("dcqcn.additiveMbps"));
            assertEquals("55000", p.describe().get("dcqcn.alphaPeriodUs"));
            System.setProperty("jrdma.soft.dcqcn.g", "much");
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, Dcqcn.Params::fromSystemProperties);
            assertTrue(e.getMessage().contains("jrdma.soft.dcqcn.g"), e.getMessage());
        } finally {
            System.setProperties(saved);
        }
    }

    /**
     * A 100 Mb/s sender behind a 20 Mb/s bottleneck that marks every packet arriving at a queue above 30 kB (a
     * switch's ECN threshold), CNPs back after 200 us, 2 s on the test's clock: with the constants scaled to the
     * line rate the rate is held at or below the bottleneck and the queue stays bounded; with the paper's absolute constants
     * (40 Mb/s steps every 55 us, alpha decaying between two marked packets) the rate stays near the line and the
     * queue grows without end, as measured in the guest (2,314 CNPs left the rate at 99.6% of the line).
     */
    @Test
    void aSlowLineBehindANarrowerBottleneckIsHeldNearItOnlyWithScaledConstants() {
        long line = 100_000_000L;
        Dcqcn.Params scaled = Dcqcn.Params.scaledTo(true, line);
        Dcqcn.Params absolute = new Dcqcn.Params(
                true, line, 10_000_000L, G, 55 * US, 55 * US, 10L << 20, 5, 40_000_000L, 400_000_000L, 50 * US);
        double[] good = bottleneck(scaled, line), bad = bottleneck(absolute, line);
        // scaled: held at or below the bottleneck over the second second, the queue bounded (the recovery after the
        // first cuts is DCQCN's own, slow at a 5:1 line-to-bottleneck ratio: the model's link is busy ~35% of it)
        assertTrue(good[0] > 1e6 && good[0] < 1.3 * 20e6, "scaled: sending rate " + good[0]);
        assertTrue(good[1] < 500_000, "scaled: largest queue " + good[1]);
        assertTrue(good[3] >= 3, "scaled: CNPs " + good[3]);
        assertTrue(bad[0] > 50e6, "absolute: sending rate " + bad[0]);
        assertTrue(bad[1] > 2_000_000, "absolute: largest queue " + bad[1]);
    }

    /**
     * The model behind {@link #aSlowLineBehindANarrowerBottleneckIsHeldNearItOnlyWithScaledConstants}: {sending rate
     * in b/s over the second second, largest queue in bytes, fraction of the second second the bottleneck was busy,
     * CNPs}.
     */
    private static double[] bottleneck(Dcqcn.Params p, long line) {
        final int packet = 4096 + 66;
        final double bottleneckBps = 20e6, markAbove = 30_000;
        final long feedback = 200 * US, end = 2_000_000_000L, half = end / 2, lineGap = (long) (packet * 8e9 / line);
        Dcqcn sender = new Dcqcn(p), receiver = new Dcqcn(p);
        java.util.ArrayDeque<Long> cnps = new java.util.ArrayDeque<>();
        double queue = 0, maxQueue = 0, busy = 0, sentLate = 0;
        long t = 0, drained = 0, nextLine = 0, cnpCount = 0;
        while (t < end) {
            while (!cnps.isEmpty() && cnps.peekFirst() <= t) sender.onCnp(cnps.pollFirst());
            // the queue drains at the bottleneck's rate up to t
            double canDrain = (t - drained) * bottleneckBps / 8e9;
            if (t > half) busy += Math.min(queue, canDrain) / (bottleneckBps / 8e9);
            queue = Math.max(0, queue - canDrain);
            drained = t;
            if (t >= nextLine && sender.trySend(t, packet)) {
                queue += packet;
                maxQueue = Math.max(maxQueue, queue);
                if (t > half) sentLate += packet;
                if (queue > markAbove && receiver.shouldSendCnp(t)) {
                    cnps.addLast(t + feedback);
                    cnpCount++;
                }
                nextLine = t + lineGap;
            }
            long next = nextLine;
            if (sender.limited) next = Math.max(next, sender.nextSendAt());
            if (!cnps.isEmpty()) next = Math.min(next, cnps.peekFirst());
            t = Math.max(t + 1, next);
        }
        return new double[] {sentLate * 8 / ((end - half) / 1e9), maxQueue, busy / (end - half), cnpCount};
    }
}
