package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** A spinning wait dates progress at its own clock reads (one in 1024 spins), and still ends a run that stalls. */
class StallTest {
    private static Stall spinningStall() {
        PerfOptions o = new PerfOptions();
        o.timeoutSec = 1;
        return new Stall(new BenchResources(o), "the test's peer");
    }

    @Test
    void progressBetweenSpinsKeepsASpinningWaitAlivePastTheLimit() {
        Stall stall = spinningStall();
        long until = System.nanoTime() + 1_500_000_000L; // longer than the 1 s limit
        while (System.nanoTime() < until) {
            for (int i = 0; i < 3000; i++) stall.spin(); // more than one clock read's worth of spins per message
            stall.progress();
        }
    }

    @Test
    void aSpinningWaitWithoutProgressStallsAfterTheLimit() {
        Stall stall = spinningStall();
        stall.progress(); // progress once, then none: the limit counts from the first clock read after it
        long start = System.nanoTime();
        BenchException e = assertThrows(BenchException.class, () -> {
            while (System.nanoTime() - start < 5_000_000_000L) stall.spin();
        });
        assertTrue(System.nanoTime() - start >= 1_000_000_000L, "stalled before the limit");
        assertTrue(e.getMessage().contains("the test's peer"), e.getMessage());
    }
}
