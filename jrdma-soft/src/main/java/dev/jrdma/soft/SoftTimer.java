package dev.jrdma.soft;

import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * The one timer thread of the provider: retransmission timeouts and RNR waits of every QP. QPs publish their
 * deadlines in volatile fields; the thread scans them every half millisecond while any is armed and sleeps
 * otherwise (a QP that arms a deadline wakes it). No allocation per scan.
 */
final class SoftTimer {
    private static final long TICK_NANOS = 500_000;
    private static final long IDLE_NANOS = 50_000_000;

    private static volatile SoftQp[] qps = new SoftQp[0];
    private static Thread thread;
    private static volatile boolean idle;

    private SoftTimer() {}

    static synchronized void register(SoftQp qp) {
        SoftQp[] a = Arrays.copyOf(qps, qps.length + 1);
        a[a.length - 1] = qp;
        qps = a;
        if (thread == null) {
            thread = Thread.ofPlatform().daemon().name("jrdma-soft-timer").unstarted(SoftTimer::loop);
            thread.start();
        }
    }

    static synchronized void unregister(SoftQp qp) {
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
    static void wake() {
        if (idle) {
            Thread t = thread;
            if (t != null) LockSupport.unpark(t);
        }
    }

    private static boolean scan() {
        long now = System.nanoTime();
        boolean any = false;
        for (SoftQp q : qps) {
            long d1 = q.retryDeadline, d2 = q.rnrDeadline;
            if (d1 == 0 && d2 == 0) continue;
            any = true;
            if ((d1 != 0 && now - d1 >= 0) || (d2 != 0 && now - d2 >= 0)) {
                try {
                    q.onTimer(now);
                } catch (RuntimeException e) {
                    System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft QP timer failed", e);
                }
            }
        }
        return any;
    }

    private static void loop() {
        for (;;) {
            if (scan()) {
                LockSupport.parkNanos(TICK_NANOS);
            } else {
                idle = true;
                if (scan()) {
                    idle = false;
                    continue;
                }
                LockSupport.parkNanos(IDLE_NANOS);
                idle = false;
            }
        }
    }
}
