package dev.jrdma.bench;

/**
 * One bandwidth report line as perftest's {@code print_report_bw}: BW in MB/sec (2^20 bytes per second) unless
 * Gb/sec is asked for (10^9 bits per second), message rate in millions of messages per second.
 */
public record BwResult(long size, long iters, double bwPeakMBs, double bwAvgMBs, double msgRateMpps) {
    public static final double MB = 0x100000;
    public static final double GBIT = 125_000_000.0;

    /** From the time of the first post to the last completion (ns) and the best (shortest) time per message seen (ns). */
    public static BwResult of(long size, long iters, long totalNs, double bestNsPerMsg) {
        double secs = totalNs / 1e9;
        double avg = secs <= 0 ? 0 : size * (double) iters / secs / MB;
        double rate = secs <= 0 ? 0 : iters / secs / 1e6;
        double peak = bestNsPerMsg <= 0 ? avg : size / (bestNsPerMsg / 1e9) / MB;
        return new BwResult(size, iters, Math.max(peak, avg), avg, rate);
    }

    /**
     * perftest's peak: the smallest (completion[j] - post[i]) / (j - i + 1) over post i and completion j (j at the
     * signalled completions, every {@code cqMod}); {@code step} thins the i loop for long runs.
     */
    public static double bestNsPerMsg(long[] posted, long[] completed, int n, int cqMod) {
        if (n <= 0) return 0;
        double best = (completed[n - 1] - posted[0]) / (double) n;
        int step = Math.max(1, n / 2000);
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

    public double bwPeak(boolean gbits) {
        return gbits ? bwPeakMBs * MB / GBIT : bwPeakMBs;
    }

    public double bwAvg(boolean gbits) {
        return gbits ? bwAvgMBs * MB / GBIT : bwAvgMBs;
    }
}
