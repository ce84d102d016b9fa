package dev.jrdma.soft;

import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.Resource;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** A completion channel: a queue of CQ events; {@link #awaitEvent} blocks on a condition (no spinning). */
final class SoftChannel extends Resource implements CompletionChannel {
    private final SoftContext ctx;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition ready = lock.newCondition();
    private final ArrayDeque<SoftCq> events = new ArrayDeque<>();
    private boolean woken;

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
            ready.signal();
        } finally {
            lock.unlock();
        }
    }

    void forget(SoftCq cq) {
        lock.lock();
        try {
            events.removeIf(e -> e == cq);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void wakeup() {
        lock.lock();
        try {
            woken = true;
            ready.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CompletionQueue awaitEvent(Duration timeout) {
        checkOpen("ibv_get_cq_event");
        long nanos = timeout == null ? Long.MAX_VALUE : timeout.toNanos();
        lock.lock();
        try {
            if (events.isEmpty()) ctx.transport.pollerWaits(); // the device's receive thread handles what comes now
            while (events.isEmpty()) {
                if (isClosed()) throw new ClosedException("ibv_get_cq_event", what());
                if (woken) {
                    woken = false;
                    return null;
                }
                if (nanos <= 0) return null;
                nanos = timeout == null
                        ? (ready.await(1, TimeUnit.SECONDS) ? Long.MAX_VALUE : Long.MAX_VALUE)
                        : ready.awaitNanos(nanos);
            }
            return events.pollFirst();
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
            ready.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
