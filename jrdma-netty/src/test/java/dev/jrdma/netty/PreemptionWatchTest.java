package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link PreemptionWatch}, with the times given by hand (nanoseconds). */
class PreemptionWatchTest {
    private static final long US = 1000;

    @Test
    void aSpinTurnFollowedLateMeansPreemptedAndTheLoopSleepsForTheBackOff() {
        PreemptionWatch w = new PreemptionWatch(50 * US, 5000 * US);
        assertTrue(w.enabled());
        w.spun(0);
        w.resumed(1 * US); // back at once: on its core
        assertTrue(w.maySpin(1 * US));
        w.spun(10 * US);
        w.resumed(200 * US); // 190 us later with nothing to do: another thread had the core
        assertEquals(1, w.preemptions());
        assertFalse(w.maySpin(200 * US));
        assertFalse(w.maySpin(5199 * US), "within the back-off");
        assertTrue(w.maySpin(5200 * US), "the back-off is over");
        assertTrue(w.maySpin(5201 * US));
    }

    @Test
    void aGapWithoutASpinBeforeItIsNotAPreemption() {
        PreemptionWatch w = new PreemptionWatch(50 * US, 5000 * US);
        w.resumed(0);
        w.resumed(1000 * US); // it slept or ran tasks in between (no spun())
        w.spun(2000 * US);
        w.resumed(2010 * US);
        w.resumed(3000 * US); // the spin was measured once already
        assertEquals(0, w.preemptions());
        assertTrue(w.maySpin(3000 * US));
    }

    @Test
    void offWithAGapOfZero() {
        PreemptionWatch w = new PreemptionWatch(0, 5000 * US);
        assertFalse(w.enabled());
        assertThrows(IllegalArgumentException.class, () -> new PreemptionWatch(-1, 0));
    }
}
