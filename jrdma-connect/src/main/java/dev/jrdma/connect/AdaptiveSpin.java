package dev.jrdma.connect;

import java.util.Arrays;

/**
 * A busy-poll budget that follows how long an event loop's waits last (on by default since session 18;
 * {@code -Djrdma.connect.adaptiveSpin=off}: the fixed budget).
 * A wait runs from the owner's last work to the next work it finds, whether it spun or slept in between. The budget is
 * twice the longest of the last {@link #HISTORY} waits that ended within the full budget, at least the floor
 * ({@code -Djrdma.connect.adaptiveSpinFloorMicros}, 20 by default), at most the full budget.
 *
 * <p>Why: gRPC's rate phase is a ping-pong of whole batches, each side working ~0.45 ms while the other waits; the
 * waiting loop spun its full 100 us before every sleep, CPU that only stole the other process's core. Its short waits
 * (a send's completion, a few microseconds) set the budget to the floor. A Netty ping-pong's waits (a few us) keep
 * their spin. Unlike session 13's adaptive budget (dropped: a ping-pong under load whose both sides slept never spun
 * again), a wait that ended after a sleep counts with its whole length: a reply that came within the full budget,
 * even one that found the loop asleep, brings the spin back, and the floor never lets the spin stop.
 *
 * <p>Owner thread only (no synchronisation), and no allocation per wait.
 */
final class AdaptiveSpin {
    /** Whether event loops adapt their budget (on unless {@code -Djrdma.connect.adaptiveSpin=off}). */
    static final boolean ENABLED = !"off".equals(System.getProperty("jrdma.connect.adaptiveSpin", "on"));
    /** The least budget ({@code -Djrdma.connect.adaptiveSpinFloorMicros}). */
    static final long DEFAULT_FLOOR_NANOS = Long.getLong("jrdma.connect.adaptiveSpinFloorMicros", 20) * 1000;
    /** How many waits the budget remembers. */
    static final int HISTORY = 8;

    private static final long UNKNOWN = -1;
    private static final long NOT_WAITING = Long.MIN_VALUE;

    private final long floorNanos;
    /** The last waits' lengths, a ring ({@link #UNKNOWN} until filled: the full budget meanwhile). */
    private final long[] waits = new long[HISTORY];

    private int next;
    private long waitingSince = NOT_WAITING;

    AdaptiveSpin(long floorNanos) {
        if (floorNanos < 0) throw new IllegalArgumentException("the floor must not be negative, not " + floorNanos);
        this.floorNanos = floorNanos;
        Arrays.fill(waits, UNKNOWN);
    }

    /** The owner found nothing to do; its last work was at {@code lastWork} (the start of this wait, if it is new). */
    void idle(long lastWork) {
        if (waitingSince == NOT_WAITING) waitingSince = lastWork;
    }

    /** The owner found work at {@code now}: a wait in progress ends here. */
    void work(long now) {
        if (waitingSince == NOT_WAITING) return;
        waits[next] = now - waitingSince;
        next = (next + 1) % HISTORY;
        waitingSince = NOT_WAITING;
    }

    /**
     * The budget now.
     *
     * @param fullNanos the configured budget (the most this returns)
     * @return twice the longest recent wait that ended within {@code fullNanos}, within [floor, full]
     */
    long budget(long fullNanos) {
        long longest = -1;
        for (long w : waits) {
            if (w == UNKNOWN) return fullNanos;
            if (w < fullNanos && w > longest) longest = w;
        }
        long floor = Math.min(floorNanos, fullNanos);
        if (longest < 0) return floor;
        return Math.max(floor, Math.min(fullNanos, 2 * longest));
    }
}
