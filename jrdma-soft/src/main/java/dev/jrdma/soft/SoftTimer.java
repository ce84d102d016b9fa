package dev.jrdma.soft;

import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * The timer of one software device (one per {@link Transport}): retransmission timeouts and RNR waits of its QPs.
 * QPs publish their deadlines in volatile fields (read through {@link SoftQp#nextDeadline()}); the timer thread
 * sleeps until the earliest one (at most {@link #IDLE_NANOS} when none is armed), fires what is due and looks
 * again. A QP that arms a deadline earlier than the thread's next look wakes it ({@link #wake}); a deadline that
 * moves later (a timer restarted by an ACK) needs no wake-up: the thread finds it when it looks. So a busy QP
 * costs the timer no wake-up per packet. No allocation per scan.
 *
 * <p>A manual timer ({@link #manual}) has no thread: a test advances its {@link Clock} and calls {@link #runDue()}.
 */
final class SoftTimer {
    /** The shortest sleep between two looks: deadlines are honoured to about this (and the OS's timer slack). */
    private static final long MIN_SLEEP_NANOS = 100_000;

    private static final long IDLE_NANOS = 50_000_000;
    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");

    private final Clock clock;
    private final String name;
    private final boolean threaded;
    private volatile SoftQp[] qps = new SoftQp[0];
    private Thread thread;
    private volatile boolean closed;
    /** When the thread looks next ({@link Clock} time); a deadline before it must wake the thread. */
    private volatile long nextLook;
    /**
     * Drives the device's receive path ({@link ProgressEngine#driveForTimer}): run once per scan before the first
     * deadline that has passed fires, so that an ACK waiting in the socket or ring, which the receive thread has not
     * been scheduled to take, is handled before its request is timed out (on a loaded host the receive thread can be
     * off the CPU for hundreds of milliseconds).
     */
    private volatile Runnable beforeFiring = () -> {};
    /** The receive path was driven in this scan (the scanning thread's only). */
    private boolean drivenThisScan;

    private SoftTimer(Clock clock, String name, boolean threaded) {
        this.clock = clock;
        this.name = name;
        this.threaded = threaded;
    }

    /** A timer with its own daemon thread, started when the first QP registers. */
    static SoftTimer threaded(Clock clock, String name) {
        return new SoftTimer(clock, name, true);
    }

    /** A timer without a thread: deadlines fire when the owner calls {@link #runDue()}. */
    static SoftTimer manual(Clock clock) {
        return new SoftTimer(clock, "manual", false);
    }

    Clock clock() {
        return clock;
    }

    /** What to run before the first deadline of a scan fires (the transport: drive the receive path). */
    void beforeFiring(Runnable drive) {
        beforeFiring = drive;
    }

    synchronized void register(SoftQp qp) {
        SoftQp[] a = Arrays.copyOf(qps, qps.length + 1);
        a[a.length - 1] = qp;
        qps = a;
        if (threaded && thread == null && !closed) {
            thread = Thread.ofPlatform()
                    .daemon()
                    .name("jrdma-soft-timer-" + name)
                    .unstarted(this::loop);
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

    /** A QP armed {@code deadline}: wake the thread when it would look later than that. */
    void wake(long deadline) {
        if (deadline - nextLook < 0) {
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
        drivenThisScan = false;
        int armed = 0;
        for (SoftQp q : qps) if (fire(q, now) != 0) armed++;
        return armed;
    }

    /**
     * Fires {@code q}'s deadline if it has passed (after driving the receive path once per scan: what it handles may
     * move the deadline); returns the deadline it has afterwards (0 = none).
     */
    private long fire(SoftQp q, long now) {
        long d = q.nextDeadline();
        if (d == 0 || now - d < 0) return d;
        if (!drivenThisScan) {
            drivenThisScan = true;
            try {
                beforeFiring.run();
            } catch (RuntimeException | Error e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "soft device timer " + name + ": driving the receive path failed",
                        e);
            }
            d = q.nextDeadline();
            if (d == 0 || now - d < 0) return d;
        }
        try {
            q.onTimer(now);
        } catch (RuntimeException | Error e) { // a bug in one QP must not stop the timer of every other
            LOG.log(System.Logger.Level.WARNING, "soft QP timer failed (" + q + ")", e);
        }
        return q.nextDeadline();
    }

    /** Fires what is due and returns when to look next: the earliest armed deadline, or {@code now + IDLE_NANOS}. */
    private long fireDue(long now) {
        drivenThisScan = false;
        long next = now + IDLE_NANOS;
        for (SoftQp q : qps) {
            long d = fire(q, now);
            if (d != 0 && d - next < 0) next = d;
        }
        return next;
    }

    private void loop() {
        while (!closed) {
            try {
                long now = clock.nanoTime();
                long next = fireDue(now);
                nextLook = next;
                // a deadline armed during the scan may have read the old nextLook: look once more after publishing
                long again = fireDue(clock.nanoTime());
                if (again - next < 0) nextLook = next = again;
                long sleep = next - clock.nanoTime();
                LockSupport.parkNanos(this, Math.max(sleep, MIN_SLEEP_NANOS));
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.WARNING, "soft device timer " + name + ": scan failed", e);
            }
        }
    }
}
