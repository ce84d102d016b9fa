package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A thread that waits for a completion event stands in for the device's receive thread ({@link ProgressEngine#standIn}):
 * it sleeps in the link and handles the packet that wakes it, so its event costs one wake-up, not two. Liveness only
 * (each wait is bounded by the class timeout): no timed asserts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StandInTest {
    private static boolean standInBefore;

    @org.junit.jupiter.api.BeforeAll
    static void standInOn() {
        standInBefore = SoftChannel.standIn;
        SoftChannel.standIn = true; // off by default (see SoftChannel#standIn)
    }

    @org.junit.jupiter.api.AfterAll
    static void standInAsBefore() {
        SoftChannel.standIn = standInBefore;
    }

    private static Transport tr(Side s) {
        return ((SoftContext) s.ctx).transport;
    }

    private static long standIns(Side s) {
        return tr(s).counters.get(Counter.RX_STAND_INS);
    }

    /** Waits (no time limit: the class timeout bounds it) until {@code s}'s device counts a stand-in after {@code before}. */
    private static void awaitStandIn(Side s, long before) throws InterruptedException {
        while (standIns(s) == before) Thread.sleep(1);
    }

    /**
     * Starts a thread that waits for an event of {@code s}'s channel with no time limit, and returns once that thread
     * stands in. A waiter does not always: when the receive thread is driving at that moment (not asleep in the link)
     * it waits the plain way instead (ProgressEngine#takeDuty), which a loaded machine makes likely; such a wait is
     * woken and the start tried again.
     *
     * @return the waiting thread and what its wait returns
     */
    private static Waiter startStandingIn(Side s) throws Exception {
        for (int attempt = 0; attempt < 20; attempt++) {
            long before = standIns(s);
            s.cq.requestNotify(false);
            CompletableFuture<CompletionQueue> waited = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().start(() -> waited.complete(s.ch.awaitEvent(null)));
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (standIns(s) == before && System.nanoTime() - end < 0) Thread.sleep(1);
            if (standIns(s) != before) return new Waiter(t, waited);
            s.ch.wakeup(); // it waits the plain way: end that wait, try again
            t.join();
        }
        throw new AssertionError("no waiting thread stood in, in 20 attempts");
    }

    private record Waiter(Thread thread, CompletableFuture<CompletionQueue> result) {}

    /** Waits for {@code s}'s next receive completion as an event loop does: poll, else arm, poll again, wait. */
    private static void awaitReceive(Side s, WorkCompletion[] wc) {
        while (true) {
            for (int round = 0; round < 2; round++) {
                int n = s.cq.poll(wc);
                boolean got = false;
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.SUCCESS, wc[i].status, wc[i].toString());
                    got |= wc[i].opcode == WcOpcode.RECV;
                }
                if (got) return;
                if (n > 0) round = -1; // more may wait: poll again before arming
                else if (round == 0) s.cq.requestNotify(false);
            }
            CompletionQueue cq = s.ch.awaitEvent(Duration.ofSeconds(10));
            if (cq != null) cq.ackEvents(1);
        }
    }

    private static SendWorkRequest send(MemoryRegion mr, int off) {
        return new SendWorkRequest()
                .wrId(off)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(mr, off, 64);
    }

    @Test
    void aPingPongInEventModeIsHandledByTheWaitingThreads() throws Exception {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            int n = 2000;
            long standInsB = standIns(p.b), packetsB = tr(p.b).counters.get(Counter.RX_STAND_IN_PACKETS);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(b, 0, 64));
            Thread echo = Thread.ofPlatform().start(() -> {
                try {
                    WorkCompletion[] wc = WorkCompletion.array(8);
                    for (int i = 0; i < n; i++) {
                        awaitReceive(p.b, wc);
                        p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(b, 0, 64));
                        p.b.qp.postSend(send(b, 64));
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            p.a.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(a, 0, 64));
            WorkCompletion[] wc = WorkCompletion.array(8);
            for (int i = 0; i < n && failed.get() == null; i++) {
                p.a.qp.postSend(send(a, 64));
                awaitReceive(p.a, wc);
                p.a.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(a, 0, 64));
            }
            echo.join();
            if (failed.get() != null) fail(failed.get());
            assertTrue(standIns(p.b) > standInsB, "B's waiting thread stood in for its receive thread");
            assertTrue(
                    tr(p.b).counters.get(Counter.RX_STAND_IN_PACKETS) > packetsB,
                    "B's waiting thread handled packets itself");
        }
    }

    @Test
    void aWakeupEndsTheWaitOfAThreadStandingIn() throws Exception {
        try (RcPair p = pair()) {
            Waiter w = startStandingIn(p.b); // asleep in B's link, with no time limit
            p.b.ch.wakeup();
            w.thread().join();
            assertNull(w.result().get(), "woken, no event");
        }
    }

    /**
     * Two channels on one device: the thread that waits on the second cannot stand in too (one thread sleeps in the
     * link); the first one handles its packet and the second gets its event; then the first gets its own.
     */
    @Test
    void aSecondChannelOnTheDeviceGetsItsEventFromTheThreadStandingIn() throws Exception {
        try (RcPair p = pair();
                RcPair q = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096), qa = q.a.mrAll(4096), qb = q.b.mrAll(4096);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(b, 0, 64));
            q.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(qb, 0, 64));
            p.b.cq.requestNotify(false);
            q.b.cq.requestNotify(false);
            long before = standIns(p.b);
            CompletableFuture<CompletionQueue> first = new CompletableFuture<>(), second = new CompletableFuture<>();
            Thread t1 = Thread.ofPlatform().start(() -> first.complete(p.b.ch.awaitEvent(Duration.ofSeconds(30))));
            awaitStandIn(p.b, before);
            Thread t2 = Thread.ofPlatform().start(() -> second.complete(q.b.ch.awaitEvent(Duration.ofSeconds(30))));
            q.a.qp.postSend(send(qa, 0));
            assertSame(q.b.cq, second.get(), "the second channel's event");
            assertFalse(first.isDone(), "the thread standing in still waits for its own event");
            p.a.qp.postSend(send(a, 0));
            assertSame(p.b.cq, first.get(), "the first channel's event");
            t1.join();
            t2.join();
            assertEquals(WcStatus.SUCCESS, poll(q.b.cq).status);
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status);
        }
    }

    /**
     * When the waiting thread leaves (woken) and never polls again, the receive thread takes the device back: a passive
     * RDMA WRITE target still answers. Fifty times, each after the receive thread has gone back to sleep in the link
     * (the waiter then takes the duty from it there: the receive thread must leave the link before the waiter sleeps in
     * it, or one of them can take the other's wake-up and the device stops receiving).
     */
    @Test
    void theReceiveThreadTakesOverWhenTheWaitingThreadLeaves() throws Exception {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            long byThread = tr(p.b).rxByThread();
            for (int i = 0; i < 50; i++) {
                Thread.sleep(2); // past the 1 ms the receive thread stays off the link after a waiter leaves
                Waiter w = startStandingIn(p.b);
                p.b.ch.wakeup();
                w.thread().join();
                RcPair.fill(a.segment(), 256, i);
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(7)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(a, 0, 256)
                        .remote(b.address(), b.rkey()));
                assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status, "WRITE " + i);
                RcPair.assertFilled(b.segment(), 0, 256, i);
            }
            assertTrue(tr(p.b).rxByThread() > byThread, "B's receive thread handled the WRITEs");
        }
    }
}
