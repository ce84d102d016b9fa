package dev.jrdma.bench;

/**
 * perftest's software rate limiter ({@code --rate_limit_type=SW}): a bandwidth sender posts at most
 * {@code --burst_size} requests (default: the send queue depth) per gap, the gap being the time one burst may take at
 * the limit; each gap's deadline follows the previous one, so the requests posted by any time stay under the limit
 * line from the start (a late burst catches up, but never beyond it).
 */
final class SoftwareRateLimiter {
    /** perftest's --rate_units. */
    enum Units {
        /** MiB per second ({@code M}). */
        MEGABYTES,
        /** Gb per second ({@code g}, perftest's default). */
        GIGABITS,
        /** Messages (packets) per second ({@code p}). */
        PACKETS
    }

    private final long gapNs;
    private final int burst;
    private long deadline;
    private boolean inBurst;
    private int burstPosted;

    /**
     * @param pps     the limit in messages per second
     * @param burst   the requests of one burst
     * @param startNs the loop's start: the first burst may go at once
     */
    SoftwareRateLimiter(double pps, int burst, long startNs) {
        this.burst = burst;
        this.gapNs = Math.max(1, Math.round(1e9 * burst / pps));
        this.deadline = startNs;
    }

    /**
     * perftest's conversion of a limit to messages per second: MiB/s over the size, Gb/s over the size in bits.
     *
     * @param limit the --rate_limit value
     * @param units its --rate_units
     * @param size  the message size in bytes
     * @return messages per second
     */
    static double pps(double limit, Units units, int size) {
        return switch (units) {
            case MEGABYTES -> limit / size * 1048576;
            case GIGABITS -> limit / (size * 8.0) * 1e9;
            case PACKETS -> limit;
        };
    }

    /**
     * {@return whether a request may be posted now: inside a burst, or a new burst whose deadline has come (which
     * then moves the deadline one gap on)}
     *
     * @param now the time, System.nanoTime()
     */
    boolean mayPost(long now) {
        if (inBurst) return true;
        if (now - deadline < 0) return false;
        deadline += gapNs;
        inBurst = true;
        burstPosted = 0;
        return true;
    }

    /**
     * Counts posted requests; the burst ends when it holds {@code --burst_size} of them.
     *
     * @param n requests just posted
     */
    void posted(int n) {
        burstPosted += n;
        if (burstPosted >= burst) inBurst = false;
    }
}
