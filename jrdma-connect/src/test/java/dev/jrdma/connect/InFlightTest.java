package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Operations in flight: an array slot per send-queue entry, found again from the work request id. */
class InFlightTest {
    @Test
    void anOperationIsFoundByItsIdOnceAndOnlyOnce() {
        InFlight<String> ops = new InFlight<>(4);
        long a = ops.add("a"), b = ops.add("b");
        assertEquals(2, ops.size());
        assertTrue(a > 0 && b > 0 && a != b);
        assertEquals("b", ops.remove(b));
        assertNull(ops.remove(b), "a second completion for the same id finds nothing");
        assertEquals("a", ops.remove(a));
        assertTrue(ops.isEmpty());
    }

    @Test
    void fillsUpToTheSendQueueDepthAndRefusesMore() {
        InFlight<Integer> ops = new InFlight<>(3);
        for (int i = 0; i < 3; i++) ops.add(i);
        assertTrue(ops.isFull());
        assertThrows(IllegalStateException.class, () -> ops.add(99));
    }

    @Test
    void aLateCompletionOfAnOperationGivenUpDoesNotTakeTheOneNowInItsSlot() {
        InFlight<String> ops = new InFlight<>(1);
        long old = ops.add("timed out");
        assertEquals("timed out", ops.remove(old)); // given up (a timeout)
        long current = ops.add("current"); // the same slot, another id
        assertFalse(old == current);
        assertNull(ops.remove(old), "the stale completion must not complete the operation now in the slot");
        assertEquals("current", ops.remove(current));
    }

    @Test
    void idsStayUniqueAndBelowTheReceiveTagOverManyRounds() {
        InFlight<Long> ops = new InFlight<>(16);
        Set<Long> seen = new HashSet<>();
        for (long round = 0; round < 100_000; round++) {
            long id = ops.add(round);
            assertTrue(id > 0 && id < (1L << 62));
            assertTrue(seen.add(id));
            assertEquals(round, ops.remove(id));
        }
    }

    @Test
    void drainHandsOverEveryOperationAndEmpties() {
        InFlight<String> ops = new InFlight<>(8);
        long x = ops.add("x");
        ops.add("y");
        ops.add("z");
        ops.remove(x);
        List<String> drained = new ArrayList<>();
        ops.drain(drained::add);
        assertEquals(Set.of("y", "z"), new HashSet<>(drained));
        assertTrue(ops.isEmpty());
        for (int i = 0; i < 8; i++) ops.add("again " + i); // every slot is free again
        assertTrue(ops.isFull());
    }

    @Test
    void scanningBySlotSeesWhatIsInFlight() {
        InFlight<String> ops = new InFlight<>(4);
        long id = ops.add("only");
        int found = 0;
        for (int slot = 0; slot < ops.capacity(); slot++) {
            if (ops.at(slot) != null) {
                found++;
                assertSame("only", ops.at(slot));
                assertEquals(id, ops.idAt(slot));
            }
        }
        assertEquals(1, found);
    }
}
