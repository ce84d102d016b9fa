package dev.jrdma.bench;

import java.util.Arrays;

/**
 * One latency report line, computed as perftest's {@code print_report_lat} does: the deltas between successive
 * posts, sorted, the 2 largest dropped; t_typical is the median; t_max is the first dropped sample... exactly
 * perftest's indices. Times in microseconds, divided by the round-trip factor (2 for send/write, 1 for read/atomic).
 *
 * @param size     the message size in bytes
 * @param iters    the iterations, as the report's #iterations column says
 * @param tMin     the smallest sample, in microseconds
 * @param tMax     the largest sample kept (the 2 largest are dropped), in microseconds
 * @param tTypical the median of the kept samples, in microseconds
 * @param tAvg     the mean of the kept samples, in microseconds
 * @param tStdev   their standard deviation, in microseconds
 * @param p99      the 99th percentile, in microseconds
 * @param p999     the 99.9th percentile, in microseconds
 */
public record LatencyResult(
        long size,
        long iters,
        double tMin,
        double tMax,
        double tTypical,
        double tAvg,
        double tStdev,
        double p99,
        double p999) {
    static final int LAT_MEASURE_TAIL = 2;

    /**
     * A report from post timestamps, perftest style: the n-1 deltas between successive posts.
     *
     * @param size      the message size in bytes
     * @param tposted   the post times in nanoseconds, at least {@code n} of them
     * @param n         the iterations, at least 5
     * @param rttFactor 2 when one iteration is a round trip of two messages (send, write), else 1
     * @return the report
     * @throws IllegalArgumentException when {@code n} is below 5
     */
    public static LatencyResult fromPostTimes(long size, long[] tposted, int n, int rttFactor) {
        if (n < 2 + LAT_MEASURE_TAIL + 1)
            throw new IllegalArgumentException("need at least 5 iterations for a latency report, got " + n);
        long[] delta = new long[n - 1];
        for (int i = 0; i < n - 1; i++) delta[i] = tposted[i + 1] - tposted[i];
        return fromDeltas(size, n, delta, delta.length, rttFactor);
    }

    /**
     * A report from measured intervals.
     *
     * @param size      the message size in bytes
     * @param iters     what the report's #iterations column says
     * @param deltas    the intervals in nanoseconds (not changed)
     * @param count     how many of {@code deltas} to use, at least 4
     * @param rttFactor 2 when one interval is a round trip of two messages (send, write), else 1
     * @return the report
     * @throws IllegalArgumentException when {@code count} is below 4
     */
    public static LatencyResult fromDeltas(long size, long iters, long[] deltas, int count, int rttFactor) {
        if (count < LAT_MEASURE_TAIL + 2)
            throw new IllegalArgumentException("need at least " + (LAT_MEASURE_TAIL + 2) + " samples, got " + count);
        long[] delta = Arrays.copyOf(deltas, count);
        Arrays.sort(delta);
        int m = count - LAT_MEASURE_TAIL;
        double q = 1000.0 * rttFactor; // ns -> usec, and the half round trip
        double median = ((m - 1) % 2 != 0) ? (delta[m / 2] + delta[m / 2 - 1]) / 2.0 : delta[m / 2];
        double sum = 0;
        for (int i = 0; i < m; i++) sum += delta[i] / q;
        double avg = sum / m;
        double var = 0;
        for (int i = 0; i < m; i++) {
            double d = avg - delta[i] / q;
            var += d * d;
        }
        int i99 = (int) Math.ceil(m * 0.99), i999 = (int) Math.ceil(m * 0.999);
        return new LatencyResult(
                size,
                iters,
                delta[0] / q,
                delta[m] / q,
                median / q,
                avg,
                Math.sqrt(var / m),
                delta[Math.min(i99, count - 1)] / q,
                delta[Math.min(i999, count - 1)] / q);
    }
}
