package dev.jrdma.bench;

/**
 * One bandwidth report line as perftest's {@code print_report_bw}: BW in MB/sec (2^20 bytes per second) unless
 * Gb/sec is asked for (10^9 bits per second), message rate in millions of messages per second.
 *
 * @param size        the message size in bytes
 * @param iters       the messages measured
 * @param bwPeakMBs   the peak bandwidth in MB/sec (never below the average)
 * @param bwAvgMBs    the average bandwidth in MB/sec
 * @param msgRateMpps the message rate in millions of messages per second
 */
public record BwResult(long size, long iters, double bwPeakMBs, double bwAvgMBs, double msgRateMpps) {
    /** Bytes in perftest's MB: 2^20. */
    public static final double MB = 0x100000;
    /** Bytes in a gigabit: 10^9 / 8. */
    public static final double GBIT = 125_000_000.0;

    /**
     * A report from the time of the first post to the last completion and the best time per message seen.
     *
     * @param size         the message size in bytes
     * @param iters        the messages measured
     * @param totalNs      nanoseconds from the first post to the last completion; 0 or less gives 0 bandwidth
     * @param bestNsPerMsg the shortest nanoseconds per message seen ({@link #bestNsPerMsg}); 0 or less: the peak is
     *                     the average
     * @return the report
     */
    public static BwResult of(long size, long iters, long totalNs, double bestNsPerMsg) {
        double secs = totalNs / 1e9;
        double avg = secs <= 0 ? 0 : size * (double) iters / secs / MB;
        double rate = secs <= 0 ? 0 : iters / secs / 1e6;
        double peak = bestNsPerMsg <= 0 ? avg : size / (bestNsPerMsg / 1e9) / MB;
        return new BwResult(size, iters, Math.max(peak, avg), avg, rate);
    }

    /**
     * {@return which post times {@link #bestNsPerMsg} reads: those of every {@code postStep}-th message from the first}
     * A loop stamps only those: in a guest without a usable TSC each clock read is a system call (1-2.5 us in the
     * Soft-RoCE guest, where the clocksource is the emulated HPET), where perftest reads the TSC.
     *
     * @param n the messages
     */
    public static int postStep(long n) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, n / 2000));
    }

    /**
     * perftest's peak: the smallest (completion[j] - post[i]) / (j - i + 1) over post i and completion j (j at the
     * signalled completions, every {@code cqMod}); {@code step} thins the i loop for long runs.
     *
     * @param posted    post times in nanoseconds, {@code n} of them
     * @param completed completion times in nanoseconds, {@code n} of them
     * @param n         the messages
     * @param cqMod     every how many messages a completion is signalled
     * @return the best nanoseconds per message, or 0 when {@code n} is 0
     */
    public static double bestNsPerMsg(long[] posted, long[] completed, int n, int cqMod) {
        if (n <= 0) return 0;
        double best = (completed[n - 1] - posted[0]) / (double) n;
        int step = postStep(n);
        int jstep = Math.max(cqMod, n / 2000);
        for (int i = 0; i < n; i += step) {
            for (int j = i + jstep - 1; j < n; j += jstep) {
                double t = (completed[j] - posted[i]) / (double) (j - i + 1);
                if (t < best) best = t;
            }
            double t = (completed[n - 1] - posted[i]) / (double) (n - i);
            if (t < best) best = t;
        }
        return best;
    }

    /**
     * {@return the peak bandwidth in the unit asked for}
     *
     * @param gbits true for Gb/sec (10^9 bits per second), false for MB/sec (2^20 bytes per second)
     */
    public double bwPeak(boolean gbits) {
        return gbits ? bwPeakMBs * MB / GBIT : bwPeakMBs;
    }

    /**
     * {@return the average bandwidth in the unit asked for}
     *
     * @param gbits true for Gb/sec (10^9 bits per second), false for MB/sec (2^20 bytes per second)
     */
    public double bwAvg(boolean gbits) {
        return gbits ? bwAvgMBs * MB / GBIT : bwAvgMBs;
    }

    /** {@return these figures with no peak (0), as perftest reports with -N} */
    public BwResult withoutPeak() {
        return new BwResult(size, iters, 0, bwAvgMBs, msgRateMpps);
    }
}
