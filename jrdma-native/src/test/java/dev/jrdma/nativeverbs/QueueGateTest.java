package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The data path's gate: one caller at a time, and a shut that waits for the caller in flight and refuses the rest;
 * biased to its first caller, which another thread or a shut takes it from.
 */
class QueueGateTest {
    private long counter;

    @Test
    @Timeout(60)
    void oneCallerAtATime() throws Exception {
        QueueGate g = new QueueGate();
        int perThread = 200_000;
        Thread[] ts = new Thread[3];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    assertTrue(g.enter());
                    counter++; // a plain read-modify-write: only exact if the gate excludes the others
                    g.exit();
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        assertEquals((long) perThread * ts.length, counter);
    }

    @Test
    @Timeout(30)
    void shutWaitsForTheCallerInFlightThenRefusesEveryone() throws Exception {
        QueueGate g = new QueueGate();
        assertTrue(g.enter()); // a post in flight
        CountDownLatch shut = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            g.shut();
            shut.countDown();
        });
        closer.start();
        assertFalse(shut.await(200, TimeUnit.MILLISECONDS), "shut returned while a caller was inside");
        g.exit();
        assertTrue(shut.await(10, TimeUnit.SECONDS), "shut did not return once the caller left");
        assertTrue(g.isShut());
        assertFalse(g.enter(), "a caller got in after the gate was shut");
        g.shut(); // idempotent
        closer.join();
    }

    @Test
    @Timeout(30)
    void aWaitingCallerIsRefusedWhenTheGateShuts() throws Exception {
        QueueGate g = new QueueGate();
        assertTrue(g.enter());
        boolean[] got = new boolean[1];
        Thread waiter = new Thread(() -> got[0] = g.enter());
        waiter.start();
        Thread.sleep(50);
        Thread closer = new Thread(g::shut);
        closer.start();
        Thread.sleep(50);
        g.exit(); // the closer or the waiter takes it next; if the waiter did, it must leave before the shut completes
        waiter.join(10_000);
        if (got[0]) g.exit();
        closer.join(10_000);
        assertFalse(closer.isAlive());
        assertTrue(g.isShut());
        assertFalse(g.enter());
    }

    @Test
    @Timeout(60)
    void theOwnerAndAThreadThatTakesTheBiasAwayExcludeEachOther() throws Exception {
        QueueGate g = new QueueGate();
        assertTrue(g.enter()); // this thread is the first caller: the gate becomes its own
        g.exit();
        Assumptions.assumeTrue(Membarrier.AVAILABLE, "membarrier(2) is not available: the gate is never biased");
        assertTrue(g.isBiased());
        int perThread = 500_000;
        Thread other = new Thread(() -> {
            for (int i = 0; i < perThread; i++) {
                assertTrue(g.enter());
                counter++;
                g.exit();
            }
        });
        other.start(); // it takes the bias away while the owner runs its loop
        for (int i = 0; i < perThread; i++) {
            assertTrue(g.enter());
            counter++; // only exact if the owner's plain entry and the other's entry exclude each other
            g.exit();
        }
        other.join();
        assertEquals(2L * perThread, counter);
        assertFalse(g.isBiased(), "the bias was not taken away");
    }

    @Test
    @Timeout(30)
    void anotherThreadWaitsForTheOwnerInsideThenGetsIn() throws Exception {
        QueueGate g = new QueueGate();
        assertTrue(g.enter());
        g.exit();
        Assumptions.assumeTrue(Membarrier.AVAILABLE, "membarrier(2) is not available: the gate is never biased");
        assertTrue(g.enter()); // the owner, inside on the biased path
        CountDownLatch in = new CountDownLatch(1);
        Thread other = new Thread(() -> {
            if (g.enter()) {
                in.countDown();
                g.exit();
            }
        });
        other.start();
        assertFalse(in.await(200, TimeUnit.MILLISECONDS), "another thread got in while the owner was inside");
        g.exit();
        assertTrue(in.await(10, TimeUnit.SECONDS), "the other thread did not get in once the owner left");
        other.join();
        assertTrue(g.enter(), "the former owner takes the gate as everyone does now");
        g.exit();
    }

    @Test
    @Timeout(30)
    void shutTakesTheBiasAwayWaitsForTheOwnerAndRefusesIt() throws Exception {
        QueueGate g = new QueueGate();
        assertTrue(g.enter());
        g.exit();
        Assumptions.assumeTrue(Membarrier.AVAILABLE, "membarrier(2) is not available: the gate is never biased");
        assertTrue(g.enter()); // a post in flight on the biased path
        CountDownLatch shut = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            g.shut();
            shut.countDown();
        });
        closer.start();
        assertFalse(shut.await(200, TimeUnit.MILLISECONDS), "shut returned while the owner was inside");
        g.exit();
        assertTrue(shut.await(10, TimeUnit.SECONDS), "shut did not return once the owner left");
        assertFalse(g.enter(), "the owner got in after the gate was shut");
        closer.join();
    }
}
