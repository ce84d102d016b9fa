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
}
