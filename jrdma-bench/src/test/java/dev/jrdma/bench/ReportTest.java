package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class ReportTest {
    /** 12 posts 2 us apart, 1 us apart...: deltas known, so every column is known. */
    @Test
    void latencyAsPerftestComputesIt() {
        // deltas (ns): 1000..10000 step 1000, then 50000 (n = 12 posts -> 11 deltas)
        long[] t = new long[12];
        long[] d = {3000, 1000, 2000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 50000};
        for (int i = 0; i < d.length; i++) t[i + 1] = t[i] + d[i];
        LatencyResult r = LatencyResult.fromPostTimes(2, t, 12, 2);
        // sorted: 1..10, 50 (us); 2 tail dropped -> m = 9: 1..9; median of 9 = 5th = 5; /2 (half round trip)
        assertEquals(0.5, r.tMin(), 1e-9);
        assertEquals(5.0, r.tMax(), 1e-9); // delta[m] = 10 us / 2
        assertEquals(2.5, r.tTypical(), 1e-9);
        assertEquals(2.5, r.tAvg(), 1e-9); // mean of 1..9 = 5, /2
        assertEquals(Math.sqrt(60.0 / 9) / 2, r.tStdev(), 1e-9);
        assertEquals(5.0, r.p99(), 1e-9); // ceil(9*0.99) = 9 -> 10 us
        assertEquals(5.0, r.p999(), 1e-9);
        assertEquals(12, r.iters());
        String line = Report.latLine(r);
        assertEquals(
                " 2       12          0.50           5.00         2.50     \t       2.50        \t1.29   \t\t5.00    \t\t5.00   ",
                line);
        // full round trip for read/atomic
        assertEquals(1.0, LatencyResult.fromPostTimes(2, t, 12, 1).tMin(), 1e-9);
    }

    @Test
    void evenCountMedianIsTheMeanOfTheMiddleTwo() {
        long[] d = {1000, 2000, 3000, 4000, 90000, 95000}; // m = 4 -> (2+3)/2
        LatencyResult r = LatencyResult.fromDeltas(64, 7, d, d.length, 1);
        assertEquals(2.5, r.tTypical(), 1e-9);
    }

    @Test
    void bandwidthLine() {
        // 1000 messages of 65536 bytes in 0.5 s: 125 MiB/s, 0.002 Mpps
        BwResult r = BwResult.of(65536, 1000, 500_000_000L, 0);
        assertEquals(125.0, r.bwAvgMBs(), 1e-9);
        assertEquals(0.002, r.msgRateMpps(), 1e-12);
        assertEquals(" 65536      1000             125.00             125.00 \t\t   0.002000", Report.bwLine(r, false));
        assertEquals(125.0 * 1048576 / 125e6, r.bwAvg(true), 1e-9);
        assertTrue(Report.bwHeader(true).contains("BW peak[Gb/sec]"));
        assertTrue(Report.latHeader().contains("t_typical[usec]"));
        assertTrue(Report.latHeader().contains("99.9% percentile[usec]"));
    }

    @Test
    void peakIsTheBestWindow() {
        long[] posted = new long[200], completed = new long[200];
        for (int i = 0; i < 200; i++) {
            posted[i] = i * 1000L;
            completed[i] = i < 100 ? 1000L + i * 1000L : 100_000L + (i - 99) * 2000L;
        }
        double best = BwResult.bestNsPerMsg(posted, completed, 200, 100);
        assertEquals(1000.0, best, 1e-9); // the first 100: 1 us per message
    }

    @Test
    void thePeakReadsOnlyThePostTimesOfEveryPostStepThMessage() {
        int n = 20_000, step = BwResult.postStep(n);
        assertEquals(10, step);
        long[] posted = new long[n], sparse = new long[n], completed = new long[n];
        java.util.Random rnd = new java.util.Random(1);
        long t = 0;
        for (int i = 0; i < n; i++) {
            t += 500 + rnd.nextInt(2000);
            posted[i] = t;
            if (i % step == 0) sparse[i] = t; // what bwClient stamps
            completed[i] = t + 3000 + rnd.nextInt(4000);
        }
        assertEquals(
                BwResult.bestNsPerMsg(posted, completed, n, 100), BwResult.bestNsPerMsg(sparse, completed, n, 100));
        assertEquals(1, BwResult.postStep(1999));
    }
}
