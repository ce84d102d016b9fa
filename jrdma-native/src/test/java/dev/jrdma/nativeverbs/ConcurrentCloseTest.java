package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.ClosedException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Closing an object while other threads use it must end each of them in {@link ClosedException}, never in a native
 * fault: {@code checkOpen} alone is check-then-act, so a close on another thread could free the struct between the
 * check and the call ({@link NativeResource}). The first test needs no device; the second runs on rxe0 in the guest.
 */
class ConcurrentCloseTest {

    /** A NativeResource whose "native memory" is a flag: free() must never run while a use is in flight. */
    static final class Fake extends NativeResource {
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicBoolean freed = new AtomicBoolean();
        volatile boolean freedUnderUse;

        final CountDownLatch freeing = new CountDownLatch(1);
        final CountDownLatch mayFreeLatch;
        volatile boolean freedBeforeChild;
        volatile Fake kid;

        Fake() {
            this(null, null);
        }

        Fake(Fake parent, CountDownLatch mayFree) {
            super(parent, parent == null ? "fake parent" : "fake child");
            this.mayFreeLatch = mayFree;
        }

        void use() {
            enter("use");
            try {
                inFlight.incrementAndGet();
                if (freed.get()) freedUnderUse = true;
                Thread.onSpinWait();
                inFlight.decrementAndGet();
            } finally {
                exit();
            }
        }

        @Override
        protected void free() {
            if (inFlight.get() != 0) freedUnderUse = true;
            Fake k = kid;
            if (k != null && !k.freed.get()) freedBeforeChild = true;
            freeing.countDown();
            if (mayFreeLatch != null) {
                try {
                    mayFreeLatch.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            freed.set(true);
        }
    }

    @Test
    void closeWaitsForUsesInFlightAndLaterUsesThrow() throws Exception {
        for (int round = 0; round < 200; round++) {
            Fake f = new Fake();
            int n = 3;
            CountDownLatch started = new CountDownLatch(n);
            var endQ = new ConcurrentLinkedQueue<Throwable>();
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ts.add(Thread.ofPlatform().start(() -> {
                    started.countDown();
                    try {
                        while (true) f.use();
                    } catch (Throwable t) {
                        endQ.add(t);
                    }
                }));
            }
            started.await();
            f.close();
            for (Thread t : ts) t.join(10_000);
            assertEquals(n, endQ.size(), "every user ended");
            for (Throwable t : endQ) assertTrue(t instanceof ClosedException, () -> "not a ClosedException: " + t);
            assertFalse(f.freedUnderUse, "free() ran while a use was in flight (round " + round + ")");
            assertTrue(f.freed.get());
        }
        Fake f = new Fake();
        f.close();
        assertThrows(ClosedException.class, f::use);
        f.close(); // idempotent
    }

    /**
     * Closing a parent while another thread's close of its child is still freeing it: Resource.close returns at once
     * for the child (already closing), so the parent must wait for it before freeing itself (else ibv_dealloc_pd
     * fails with EBUSY under a deregistration in progress).
     */
    @Test
    void parentWaitsForAChildFreedByAnotherThread() throws Exception {
        Fake parent = new Fake();
        CountDownLatch release = new CountDownLatch(1);
        Fake child = new Fake(parent, release);
        parent.kid = child;
        Thread closer = Thread.ofPlatform().start(child::close);
        assertTrue(child.freeing.await(10, TimeUnit.SECONDS), "the child's free started");
        Thread parentCloser = Thread.ofPlatform().start(parent::close);
        Thread.sleep(100);
        assertFalse(parent.freed.get(), "the parent must not be freed while its child is still freeing");
        release.countDown();
        closer.join(10_000);
        parentCloser.join(10_000);
        assertTrue(child.freed.get() && parent.freed.get());
        assertFalse(parent.freedBeforeChild, "the parent was freed before its child");
    }

    // The same race on a real device, for every object type, is jrdma-conformance's ConcurrentCloseTest
    // (run on rxe0 in the Soft-RoCE guest and on the software device).
}
