package dev.jrdma.soft;

import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * The timer of one software device (one per {@link Transport}): retransmission timeouts and RNR waits of its QPs.
 * QPs publish their deadlines in volatile fields (read through {@link SoftQp#nextDeadline()}); the timer thread
 * scans them every half millisecond while any is armed and sleeps otherwise (a QP that arms a deadline wakes it).
 * No allocation per scan.
 *
 * <p>A manual timer ({@link #manual}) has no thread: a test advances its {@link Clock} and calls {@link #runDue()}.
 */
final class SoftTimer {
    private static final long TICK_NANOS = 500_000;
    private static final long IDLE_NANOS = 50_000_000;
    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");

    private final Clock clock;
    private final String name;
    private final boolean threaded;
    private volatile SoftQp[] qps = new SoftQp[0];
    private Thread thread;
    private volatile boolean idle, closed;

    private SoftTimer(Clock clock, String name, boolean threaded) {
        this.clock = clock;
        this.name = name;
        this.threaded = threaded;
    }

    /** A timer with its own daemon thread, started when the first QP registers. */
    static SoftTimer threaded(Clock clock, String name) { return new SoftTimer(clock, name, true); }

    /** A timer without a thread: deadlines fire when the owner calls {@link #runDue()}. */
    static SoftTimer manual(Clock clock) { return new SoftTimer(clock, "manual", false); }

    Clock clock() { return clock; }

    synchronized void register(SoftQp qp) {
        SoftQp[] a = Arrays.copyOf(qps, qps.length + 1);
        a[a.length - 1] = qp;
        qps = a;
        if (threaded && thread == null && !closed) {
            thread = Thread.ofPlatform().daemon().name("jrdma-soft-timer-" + name).unstarted(this::loop);
            thread.start();
        }
    }

    synchronized void unregister(SoftQp qp) {
        SoftQp[] a = qps;
        for (int i = 0; i < a.length; i++) {
            if (a[i] == qp) {
                SoftQp[] b = new SoftQp[a.length - 1];
                System.arraycopy(a, 0, b, 0, i);
                System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                qps = b;
                return;
            }
        }
    }

    /** A QP armed a deadline: make sure the thread is not in its long sleep. */
    void wake() {
        if (idle) {
            Thread t = thread;
            if (t != null) LockSupport.unpark(t);
        }
    }

    /** Stops the thread (the device's socket was released). */
    void close() {
        Thread t;
        synchronized (this) {
            closed = true;
            t = thread;
        }
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Fires every deadline that has passed at the clock's present time.
     *
     * @return the number of armed deadlines seen (fired or not); 0 means nothing is armed
     */
    int runDue() {
        long now = clock.nanoTime();
        int armed = 0;
        for (SoftQp q : qps) {
            long d = q.nextDeadline();
            if (d == 0) continue;
            armed++;
            if (now - d >= 0) {
                try {
                    q.onTimer(now);
                } catch (RuntimeException | Error e) { // a bug in one QP must not stop the timer of every other
                    LOG.log(System.Logger.Level.WARNING, "soft QP timer failed (" + q + ")", e);
                }
            }
        }
        return armed;
    }

    private void loop() {
        while (!closed) {
            try {
                if (runDue() > 0) {
                    LockSupport.parkNanos(TICK_NANOS);
                } else {
                    idle = true;
                    if (runDue() > 0) {
                        idle = false;
                        continue;
                    }
                    LockSupport.parkNanos(IDLE_NANOS);
                    idle = false;
                }
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.WARNING, "soft device timer " + name + ": scan failed", e);
            }
        }
    }
}
