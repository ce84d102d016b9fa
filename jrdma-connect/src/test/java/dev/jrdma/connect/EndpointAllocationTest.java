package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The steady-state send path of an {@link Endpoint} allocates only the future that {@code send} returns (the public
 * API gives one per operation): no operation object (they are reused), no description string (built only for a
 * failure's message), no task or list per completion. Measured per thread with the JDK's per-thread allocation
 * counter: the sending thread; the completion thread of the sender's group, which completes the sends and takes the
 * peer's credit updates; the receiver's completion thread, which delivers the messages.
 */
// a guard against a hang, not a speed bound: each test's work is fixed (50,000 and 25,000 messages); at load 15 on
// 2 cores (eight busy loops beside the suite) they took 141 s and 207 s, and failed the 120 s this was before
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EndpointAllocationTest {
    static {
        TestSupport.init();
    }

    private static long allocated(Thread t) {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
                .getThreadAllocatedBytes(t.threadId());
    }

    /**
     * Sends {@code n} messages with up to {@link #WINDOW} in flight, waiting for the oldest by spinning (a blocking
     * join would allocate a waiter).
     */
    private static void sends(Endpoint ep, RegisteredBuffer buf, int n, CompletableFuture<?>[] window) {
        for (int i = 0; i < n + WINDOW; i++) {
            int slot = i % WINDOW;
            CompletableFuture<?> oldest = window[slot];
            if (oldest != null) {
                while (!oldest.isDone()) Thread.yield();
                if (oldest.isCompletedExceptionally()) oldest.join(); // throws: the test fails with the send's failure
                window[slot] = null;
            }
            if (i < n) window[slot] = ep.send(buf, 0, 256);
        }
    }

    /**
     * Waits (at most 10 s) until the peer's handler has counted {@code total} messages: it may still be behind the last
     * sends the sender saw acknowledged. Every message arrives once: no fewer, no more.
     */
    private static void awaitReceived(AtomicLong received, long total) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (received.get() < total && System.nanoTime() < deadline) Thread.onSpinWait();
        assertEquals(total, received.get(), "every message arrived, once");
    }

    /** Sends in flight at once: below the peer's credits (8), so the sender never waits for a credit update. */
    private static final int WINDOW = 4;

    @Test
    void aSendAllocatesOnlyTheFutureItReturns() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            AtomicLong received = new AtomicLong();
            p.serverSide().onReceive(m -> received.incrementAndGet());
            Endpoint sender = p.clientSide();
            RegisteredBuffer buf = sender.pool().allocate(256);
            CompletableFuture<?>[] inFlight = new CompletableFuture<?>[WINDOW];
            sends(sender, buf, 10_000, inFlight); // warm up (JIT, spare operations, the pools' free lists)
            // the handler may still be behind the last acknowledged sends: each window starts once every earlier
            // message
            // arrived, so that it counts its own (else up to the peer's credits of the warm-up count in the first
            // window)
            awaitReceived(received, 10_000);
            Thread completions = sender.group().completionThread();
            Thread peerCompletions = p.serverSide().group().completionThread();
            int n = 10_000;
            // the best of a few windows: interpreted or freshly compiled code allocates on a loaded machine
            long best = Long.MAX_VALUE, bestCompletions = Long.MAX_VALUE, bestPeer = Long.MAX_VALUE;
            for (int window = 0; window < 4; window++) {
                long me0 = allocated(Thread.currentThread()),
                        c0 = allocated(completions),
                        r0 = allocated(peerCompletions);
                long got0 = received.get();
                sends(sender, buf, n, inFlight);
                long me = allocated(Thread.currentThread()) - me0, c = allocated(completions) - c0;
                awaitReceived(received, got0 + n);
                long r = allocated(peerCompletions) - r0;
                System.out.printf(
                        "window %d: %d sends of 256 B: sending thread %.1f B/send, sender's completion thread %.1f B/send,"
                                + " receiver's completion thread %.1f B/message%n",
                        window, n, (double) me / n, (double) c / n, (double) r / n);
                best = Math.min(best, me);
                bestCompletions = Math.min(bestCompletions, c);
                bestPeer = Math.min(bestPeer, r);
            }
            // measured on this machine, 256-byte sends 4 in flight, best of 5 windows of 20,000 (the test takes 4 of
            // 10,000): before the ops were
            // reused and described lazily, 224 B per send on the sending thread (an Op, its description "send of 256
            // bytes" built per send, the future), 80-92 B on the sender's completion thread (a task and a list per
            // completion, plus its waits), 409-421 B per message on the receiver's; after, 24 B (the future alone: a
            // CompletableFuture is 24 bytes with compressed references), 30-48 B and 350-368 B
            assertTrue(
                    best <= 40L * n,
                    "the sending thread allocated " + (double) best / n
                            + " bytes per send (more than the future it returns)");
            // what is left on the completion thread is its wait for the next completion event (the event channel's
            // condition wait, per wake-up, not per operation): nothing per completion
            assertTrue(
                    bestCompletions <= 64L * n,
                    "the sender's completion thread allocated " + (double) bestCompletions / n + " bytes per send");
            // the receiver allocates what the API hands out per message, its bytes (256 + 16) and the Message, and the
            // task that runs the handler; its credit updates back to the sender reuse their operations
            assertTrue(
                    bestPeer <= (256 + 16 + 112L) * n,
                    "the receiver's completion thread allocated " + (double) bestPeer / n + " bytes per message");
            buf.close();
        }
    }

    /**
     * The allocation-free data path: sends told to a {@link SendListener} (no future) and messages lent in their
     * receive buffers ({@link Endpoint#onReceiveLent}, no copy, no {@link Message}). The groups busy-poll
     * ({@link PollMode#BUSY}), so that what is measured is the data path, not the owners' sleeps on the completion
     * channel (a condition wait per wake-up). The sending thread, the sender's owner (send completions, the peer's
     * credits) and the receiver's owner (deliveries, releases, credit updates) allocate nothing per message. The bound,
     * 4 bytes a message on average over a window, is for what the owners allocate per unit of time, not per message
     * (measured at a load of 15 to 20 on 2 cores: 0.2 to 3 bytes a message, less the faster the window ran; before
     * the lent receives and listened sends 24 B a send on the sending thread, 27 to 43 B on the sender's owner and
     * 348 to 365 B a message on the receiver's, and 20 B a completion on both owners before the QP lookup stopped
     * boxing the QP number).
     */
    @Test
    void listenedSendsAndLentReceivesAllocateNothingPerMessage() throws Exception {
        EndpointConfig cfg = TestSupport.config().pollMode(PollMode.BUSY).build();
        try (TestSupport.Pair p = TestSupport.pair(cfg)) {
            AtomicLong received = new AtomicLong(), bytes = new AtomicLong();
            p.serverSide().onReceiveLent(new LentMessageHandler() {
                @Override
                public void onMessage(LentMessage m) {
                    bytes.addAndGet(
                            m.slotMemory().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) == 7 ? m.length() : 0);
                    received.incrementAndGet();
                    m.release();
                }

                @Override
                public void onEnd(RdmaException cause) {}
            });
            Endpoint sender = p.clientSide();
            RegisteredBuffer buf = sender.pool().allocate(256);
            buf.segment().fill((byte) 7);
            AtomicLong sent = new AtomicLong(), failed = new AtomicLong();
            SendListener listener = failure -> {
                if (failure != null) failed.incrementAndGet();
                sent.incrementAndGet();
            };
            listenedSends(sender, buf, 10_000, sent, listener); // warm up
            awaitReceived(received, 10_000);
            Thread completions = sender.group().completionThread();
            Thread peerCompletions = p.serverSide().group().completionThread();
            int n = 5_000;
            long best = Long.MAX_VALUE, bestCompletions = Long.MAX_VALUE, bestPeer = Long.MAX_VALUE;
            for (int window = 0; window < 3; window++) {
                long me0 = allocated(Thread.currentThread()),
                        c0 = allocated(completions),
                        r0 = allocated(peerCompletions);
                long got0 = received.get(), t0 = System.nanoTime();
                listenedSends(sender, buf, n, sent, listener);
                long me = allocated(Thread.currentThread()) - me0, c = allocated(completions) - c0;
                awaitReceived(received, got0 + n);
                long r = allocated(peerCompletions) - r0;
                System.out.printf(
                        "window %d: %d listened sends of 256 B, lent receives, %.0f ms: sending thread %d B, sender's"
                                + " owner %d B, receiver's owner %d B in all%n",
                        window, n, (System.nanoTime() - t0) / 1e6, me, c, r);
                best = Math.min(best, me);
                bestCompletions = Math.min(bestCompletions, c);
                bestPeer = Math.min(bestPeer, r);
            }
            assertEquals(0, failed.get(), "no send failed");
            assertEquals(256L * received.get(), bytes.get(), "every message arrived whole, in its receive buffer");
            long bound = 4L * n;
            assertTrue(best < bound, "the sending thread allocated " + best + " bytes for " + n + " sends");
            assertTrue(
                    bestCompletions < bound,
                    "the sender's owner allocated " + bestCompletions + " bytes for " + n + " sends");
            assertTrue(
                    bestPeer < bound, "the receiver's owner allocated " + bestPeer + " bytes for " + n + " messages");
            buf.close();
        }
    }

    /** Sends {@code n} messages with up to {@link #WINDOW} in flight, told to {@code listener} (counting into sent). */
    private static void listenedSends(
            Endpoint ep, RegisteredBuffer buf, int n, AtomicLong sent, SendListener listener) {
        long first = sent.get();
        // the waits yield: the two owners poll busily, and a loaded 2-core machine has them share its cores
        for (int i = 0; i < n; i++) {
            while (first + i - sent.get() >= WINDOW) Thread.yield();
            assertTrue(ep.send(buf, 0, 256, listener), "the endpoint took the send");
        }
        while (sent.get() < first + n) Thread.yield();
    }
}
