package dev.jrdma.bench;

/**
 * perftest's software rate limiter ({@code --rate_limit_type=SW}): a bandwidth sender posts at most
 * {@code --burst_size} requests (default: the send queue depth) per gap, the gap being the time one burst may take at
 * the limit; each gap's deadline follows the previous one, so the requests posted by any time stay under the limit
 * line from the start (a late burst catches up, but never beyond it).
 */
final class SoftwareRateLimiter {
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
    static double pps(double limit, PerfOptions.RateUnits units, int size) {
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

    /**
     * perftest's rate limiter dependencies: the software limiter paces a bandwidth sender (not atomics, not send -b).
     *
     * @param o the parsed options
     * @throws IllegalArgumentException naming the flag that does not fit
     */
    static void validate(PerfOptions o) {
        if (o.burstSize > 0 && o.rateLimit == 0)
            throw new IllegalArgumentException("--burst_size: can't enable burst mode when rate limiter is off"
                    + " (as perftest): add --rate_limit");
        if (o.rateLimit == 0 && o.rateLimitType != null)
            throw new IllegalArgumentException("--rate_limit_type needs --rate_limit=<rate>");
        if (o.rateLimit == 0) return;
        if (o.test != null
                && (o.test.latency
                        || o.test.isSocket()
                        || o.test.verb == PerfTest.Verb.ATOMIC
                        || (o.test.verb == PerfTest.Verb.SEND && o.bidirectional)))
            throw new IllegalArgumentException("--rate_limit: the software rate limiter can't be executed on non-BW,"
                    + " atomic or bidirectional send tests (as perftest), not " + o.test.id()
                    + (o.bidirectional ? " -b" : ""));
        if (o.runInfinitely)
            throw new IllegalArgumentException("--run_infinitely does not support the rate limiter (as perftest)");
        if (o.events)
            throw new IllegalArgumentException(
                    "--rate_limit with -e: jrdma perf's software limiter waits for its next burst by spinning");
    }
}
