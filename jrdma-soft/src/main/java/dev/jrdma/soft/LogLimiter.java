package dev.jrdma.soft;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Lets a repeated warning into the log at most once per interval and says how many were held back since: a failure that
 * repeats on every packet (a spoilt ring, a peer that floods) must show in the log, not fill it.
 */
final class LogLimiter {
    private final System.Logger log;
    private final Clock clock;
    private final long intervalNanos;
    private final AtomicLong nextAt;
    private final AtomicLong held = new AtomicLong();

    LogLimiter(System.Logger log, Clock clock, long intervalNanos) {
        this.log = log;
        this.clock = clock;
        this.intervalNanos = intervalNanos;
        this.nextAt = new AtomicLong(clock.nanoTime());
    }

    /** Logs {@code message} as a warning, unless one went out less than an interval ago (then it is only counted). */
    void warn(String message) {
        warn(message, null);
    }

    /** {@link #warn(String)} with the failure that caused it (its stack trace goes out with the message). */
    void warn(String message, Throwable cause) {
        if (!due()) return;
        long n = held.getAndSet(0);
        String m = n == 0 ? message : message + " (" + n + " more like it held back)";
        if (cause == null) log.log(System.Logger.Level.WARNING, m);
        else log.log(System.Logger.Level.WARNING, m, cause);
    }

    /** Whether a message may go out now; counts it as held back when not. */
    boolean due() {
        long now = clock.nanoTime(), at = nextAt.get();
        if (now - at >= 0 && nextAt.compareAndSet(at, now + intervalNanos)) return true;
        held.incrementAndGet();
        return false;
    }

    /** Messages held back since the last that went out. */
    long held() {
        return held.get();
    }
}
