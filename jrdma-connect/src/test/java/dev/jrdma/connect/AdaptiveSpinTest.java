package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link AdaptiveSpin}: the budget from the last waits, times given by hand (nothing sleeps). */
class AdaptiveSpinTest {
    private static final long FULL = 100_000;
    private static final long FLOOR = 20_000;

    /** Eight waits of {@code nanos} each, the clock starting at {@code t}; returns the time after them. */
    private static long waits(AdaptiveSpin spin, long t, long nanos) {
        for (int i = 0; i < AdaptiveSpin.HISTORY; i++) {
            spin.idle(t);
            t += nanos;
            spin.work(t);
        }
        return t;
    }

    @Test
    void theFullBudgetUntilEightWaitsAreKnown() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        assertEquals(FULL, spin.budget(FULL));
        spin.idle(0);
        spin.work(1_000);
        assertEquals(FULL, spin.budget(FULL), "one wait is not enough to go by");
    }

    @Test
    void shortWaitsLeaveTheFloorAndLongerOnesTwiceTheLongest() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        long t = waits(spin, 0, 3_000); // a Netty ping-pong's replies
        assertEquals(FLOOR, spin.budget(FULL));
        t = waits(spin, t, 30_000);
        assertEquals(60_000, spin.budget(FULL));
        spin.idle(t);
        spin.work(t + 70_000);
        assertEquals(FULL, spin.budget(FULL), "twice 70 us is past the full budget: the full budget");
    }

    @Test
    void waitsPastTheFullBudgetLeaveTheFloorAndOneReplyWithinItBringsTheSpinBack() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        long t = waits(spin, 0, 450_000); // the peer's gRPC batch: spinning would not have met it
        assertEquals(FLOOR, spin.budget(FULL));
        // a reply 80 us after the last work (found after a sleep: the wait counts whole, whatever the owner did)
        spin.idle(t);
        spin.idle(t + 40_000); // a later idle turn of the same wait does not restart it
        spin.work(t + 80_000);
        assertEquals(FULL, spin.budget(FULL));
        // the budget remembers eight waits: seven more long ones keep the 80 us wait, the eighth forgets it
        t += 80_000;
        for (int i = 0; i < AdaptiveSpin.HISTORY - 1; i++) {
            spin.idle(t);
            t += 450_000;
            spin.work(t);
        }
        assertEquals(FULL, spin.budget(FULL));
        spin.idle(t);
        spin.work(t + 450_000);
        assertEquals(FLOOR, spin.budget(FULL));
    }

    /**
     * One wait of an owner that spins within its budget and then sleeps: a reply {@code replyAfter} after the wait's
     * start is met spinning when the budget reaches it, else found {@code wakeUp} later, after a sleep.
     *
     * @return whether the reply was met spinning
     */
    private static boolean replyAfter(AdaptiveSpin spin, long t, long replyAfter, long wakeUp) {
        spin.idle(t);
        boolean spun = replyAfter < spin.budget(FULL);
        spin.work(t + replyAfter + (spun ? 0 : wakeUp));
        return spun;
    }

    @Test
    void afterLongWaitsRepliesFoundAsleepDoNotKeepTheBudgetAtTheFloorForGood() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        long t = waits(spin, 0, 450_000); // gRPC's rate phase: the peer's batches
        assertEquals(FLOOR, spin.budget(FULL));
        // then one call at a time: each reply 45 us after the last work, a loop found asleep wakes 80 us later, so a
        // reply found asleep counts as a 125 us wait, past the full budget (grpc20's slow p50 mode)
        int spun = 0;
        for (int i = 0; i < 3 * AdaptiveSpin.HISTORY; i++) {
            if (replyAfter(spin, t, 45_000, 80_000)) spun++;
            t += 1_000_000;
        }
        assertEquals(90_000, spin.budget(FULL), "twice the 45 us wait that a probe met spinning");
        assertTrue(spun >= 2 * AdaptiveSpin.HISTORY, "replies met spinning after the first probe: " + spun);
    }

    @Test
    void oneWaitInEightSpinsTheFullBudgetTheOthersTheFloor() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        long t = waits(spin, 0, 450_000);
        int full = 0;
        for (int i = 0; i < 4 * AdaptiveSpin.PROBE_EVERY; i++) {
            spin.idle(t);
            long budget = spin.budget(FULL);
            assertTrue(budget == FLOOR || budget == FULL, "budget " + budget);
            if (budget == FULL) full++;
            spin.idle(t + 30_000); // a later turn of the same wait: the same budget
            assertEquals(budget, spin.budget(FULL));
            t += 450_000;
            spin.work(t);
            assertEquals(FLOOR, spin.budget(FULL), "between waits: the history's budget");
        }
        assertEquals(4, full, "probes in 32 long waits");
    }

    @Test
    void withoutProbesRepliesFoundAsleepKeepTheBudgetAtTheFloor() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, false); // session 18-19: the trap the probes get out of
        long t = waits(spin, 0, 450_000);
        for (int i = 0; i < 3 * AdaptiveSpin.HISTORY; i++) {
            assertFalse(replyAfter(spin, t, 45_000, 80_000), "reply " + i + " met spinning");
            t += 1_000_000;
        }
        assertEquals(FLOOR, spin.budget(FULL));
    }

    @Test
    void workWithoutAnIdleTurnIsNoWaitAndTheBudgetNeverExceedsTheFullOne() {
        AdaptiveSpin spin = new AdaptiveSpin(FLOOR, true);
        waits(spin, 0, 3_000);
        spin.work(1_000_000_000L); // busy: work after work
        assertEquals(FLOOR, spin.budget(FULL));
        assertEquals(10_000, spin.budget(10_000), "a full budget under the floor wins");
        assertThrows(IllegalArgumentException.class, () -> new AdaptiveSpin(-1));
    }
}
