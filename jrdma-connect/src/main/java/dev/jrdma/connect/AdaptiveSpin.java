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
 * <p>Every {@link #PROBE_EVERY}th wait spins the full budget whatever the history says (a probe). Without it the
 * budget could stay at the floor for good once long waits had put it there (gRPC's rate phase, then one call at a
 * time): a reply that comes 45 us after the last work finds a loop that spun 20 us asleep, and the wait it ends counts
 * with the loop's wake-up in it; where that passes the full budget (a wake-up of 55 us or more) the wait is forgotten,
 * and every later reply finds the loop asleep too (a way into grpc-bench's slow p50 mode: jrdma-netty's README,
 * session 20). The probe meets such a reply spinning and records its true wait; where waits really are long it costs
 * one spin of the full budget in {@link #PROBE_EVERY} waits.
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
    /** Every this many waits one spins the full budget (a probe: see the class comment). */
    static final int PROBE_EVERY = HISTORY;
    /** Whether probes run ({@code -Djrdma.connect.adaptiveSpinProbe=off}: never, session 18's budget). */
    static final boolean PROBES = !"off".equals(System.getProperty("jrdma.connect.adaptiveSpinProbe", "on"));

    private static final long UNKNOWN = -1;
    private static final long NOT_WAITING = Long.MIN_VALUE;

    private final long floorNanos;
    private final boolean probes;
    /** The last waits' lengths, a ring ({@link #UNKNOWN} until filled: the full budget meanwhile). */
    private final long[] waits = new long[HISTORY];

    private int next;
    private long waitingSince = NOT_WAITING;
    /** Waits begun since the last probe; the wait in progress is a probe when this reached {@link #PROBE_EVERY}. */
    private int sinceProbe;

    // diagnostics (-Djrdma.connect.spinStats=on): the waits by length, spun or slept, printed every second
    private static final boolean STATS = "on".equals(System.getProperty("jrdma.connect.spinStats"));
    private static final long[] BUCKETS_US = {10, 20, 50, 100, 200, 500, Long.MAX_VALUE};
    private final int[][] stats = new int[2][BUCKETS_US.length];
    private long statsSince = System.nanoTime();
    private long lastBudget;
    /** The wait in progress went to sleep. */
    private boolean slept;

    AdaptiveSpin(long floorNanos) {
        this(floorNanos, PROBES);
    }

    /** Tests: with or without probes, whatever the property says. */
    AdaptiveSpin(long floorNanos, boolean probes) {
        if (floorNanos < 0) throw new IllegalArgumentException("the floor must not be negative, not " + floorNanos);
        this.floorNanos = floorNanos;
        this.probes = probes;
        Arrays.fill(waits, UNKNOWN);
    }

    /** The owner found nothing to do; its last work was at {@code lastWork} (the start of this wait, if it is new). */
    void idle(long lastWork) {
        if (waitingSince != NOT_WAITING) return;
        waitingSince = lastWork;
        if (sinceProbe >= PROBE_EVERY) sinceProbe = 0;
        sinceProbe++;
    }

    /** The owner found work at {@code now}: a wait in progress ends here. */
    void work(long now) {
        if (waitingSince == NOT_WAITING) return;
        long wait = now - waitingSince;
        waits[next] = wait;
        next = (next + 1) % HISTORY;
        waitingSince = NOT_WAITING;
        if (STATS) count(wait);
        slept = false;
    }

    /** The wait in progress goes to sleep now (for the diagnostics). */
    void slept() {
        slept = true;
    }

    private void count(long wait) {
        int b = 0;
        while (wait / 1000 >= BUCKETS_US[b]) b++;
        stats[slept ? 1 : 0][b]++;
        long t = System.nanoTime();
        if (t - statsSince < 1_000_000_000L) return;
        System.err.printf(
                "spin %s %tT.%<tL budget %d us: waits <10/20/50/100/200/500/more us spun %s slept %s%n",
                Thread.currentThread().getName(),
                System.currentTimeMillis(),
                lastBudget / 1000,
                Arrays.toString(stats[0]),
                Arrays.toString(stats[1]));
        for (int[] row : stats) Arrays.fill(row, 0);
        statsSince = t;
    }

    /**
     * The budget now.
     *
     * @param fullNanos the configured budget (the most this returns)
     * @return twice the longest recent wait that ended within {@code fullNanos}, within [floor, full]; during a probe
     *     wait, {@code fullNanos}
     */
    long budget(long fullNanos) {
        if (probes && sinceProbe == PROBE_EVERY && waitingSince != NOT_WAITING) return fullNanos;
        long longest = -1;
        for (long w : waits) {
            if (w == UNKNOWN) return fullNanos;
            if (w < fullNanos && w > longest) longest = w;
        }
        long floor = Math.min(floorNanos, fullNanos);
        if (longest < 0) return lastBudget = floor;
        return lastBudget = Math.max(floor, Math.min(fullNanos, 2 * longest));
    }
}
