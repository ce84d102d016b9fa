package dev.jrdma.soft;

import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.Resource;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A completion channel: a queue of CQ events. {@link #awaitEvent} stands in for the device's receive thread while it
 * waits ({@link Transport#standIn}): it sleeps in the device's link (the UDP socket, the same-host rings' doorbell)
 * and handles what wakes it there, so a message wakes the waiting thread once, not the receive thread first. When
 * another thread stands in already, it blocks on a condition (no spinning) and the event comes from whoever drives.
 */
final class SoftChannel extends Resource implements CompletionChannel {
    /**
     * A waiting thread stands in for the receive thread (one wake-up per message); {@code -Djrdma.soft.standIn=off}
     * turns it off. It was off for a while: netty-bench's ping-pong sat at ~211 us p50 with it in some runs. That mode
     * is not the stand-in's: two busy-polling threads sharing one core of a busy machine each wait for the other's
     * whole busy-poll budget, with or without it ({@link ProgressEngine#pollYield} trades it for a steady 15-23 us).
     * Tests set it (package-private).
     */
    static volatile boolean standIn = !"off".equals(System.getProperty("jrdma.soft.standIn", "on"));

    private final SoftContext ctx;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition ready = lock.newCondition();
    private final ArrayDeque<SoftCq> events = new ArrayDeque<>();
    private boolean woken;
    /** The thread waiting on this channel while it stands in for the receive thread (one at a time), or null. */
    private final AtomicReference<Thread> standingIn = new AtomicReference<>();
    /** Whether an event, a wake-up or the close is waiting (what a thread standing in looks at after each pass). */
    private volatile boolean signalled;
    /** {@link #signalled} or closed: made once, so that a wait allocates nothing. */
    private final BooleanSupplier over = () -> signalled || isClosed();

    SoftChannel(SoftContext ctx) {
        super(ctx, "completion channel");
        this.ctx = ctx;
    }

    @Override
    public SoftContext context() {
        return ctx;
    }

    void deliver(SoftCq cq) {
        lock.lock();
        try {
            events.addLast(cq);
            signalled = true;
            ready.signal();
        } finally {
            lock.unlock();
        }
        wakeStandIn();
    }

    /** Ends the wait of the thread standing in, unless the caller is that thread (it looks itself after its pass). */
    private void wakeStandIn() {
        Thread t = standingIn.get();
        if (t != null && t != Thread.currentThread()) ctx.transport.wakeStandIn(t);
    }

    void forget(SoftCq cq) {
        lock.lock();
        try {
            events.removeIf(e -> e == cq);
            signalled = !events.isEmpty() || woken;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void wakeup() {
        lock.lock();
        try {
            woken = true;
            signalled = true;
            ready.signalAll();
        } finally {
            lock.unlock();
        }
        wakeStandIn();
    }

    @Override
    public CompletionQueue awaitEvent(Duration timeout) {
        checkOpen("ibv_get_cq_event");
        long nanos = timeout == null ? Long.MAX_VALUE : timeout.toNanos();
        Thread me = Thread.currentThread();
        if (standIn && !signalled && nanos > 0 && !me.isInterrupted() && standingIn.compareAndSet(null, me)) {
            long start = System.nanoTime();
            try {
                // the device's receive path runs on this thread until something is signalled
                if (!signalled && ctx.transport.standIn(over, nanos))
                    nanos = timeout == null ? Long.MAX_VALUE : Math.max(0, nanos - (System.nanoTime() - start));
            } finally {
                standingIn.set(null);
            }
        }
        lock.lock();
        try {
            if (events.isEmpty()) ctx.transport.pollerWaits(); // the device's receive thread handles what comes now
            while (events.isEmpty()) {
                if (isClosed()) throw new ClosedException("ibv_get_cq_event", what());
                if (woken) {
                    woken = false;
                    signalled = false;
                    return null;
                }
                if (nanos <= 0) return null;
                nanos = timeout == null
                        ? (ready.await(1, TimeUnit.SECONDS) ? Long.MAX_VALUE : Long.MAX_VALUE)
                        : ready.awaitNanos(nanos);
            }
            SoftCq cq = events.pollFirst();
            signalled = !events.isEmpty() || woken;
            return cq;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerbsException("ibv_get_cq_event", 4, "interrupted while waiting for a completion event");
        } finally {
            lock.unlock();
        }
    }

    @Override
    protected void destroy() {
        lock.lock();
        try {
            events.clear();
            signalled = true;
            ready.signalAll();
        } finally {
            lock.unlock();
        }
        wakeStandIn();
    }
}
