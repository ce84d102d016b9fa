package dev.jrdma.bench;

import java.io.PrintStream;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Arrays;

/**
 * perftest's -U and -H: every latency sample (the interval between successive posts, divided by the round-trip
 * factor) in usec, one {@code "N, VALUE"} line each under a {@code "#, usec"} line: -U in the order measured, -H sorted
 * with the 2 largest dropped, as perftest's print_report_lat.
 */
final class LatencySamples {
    private LatencySamples() {}

    static void print(PrintStream out, long[] postTimes, int n, int rttFactor, boolean unsorted, boolean histogram) {
        double[] usec = new double[n - 1];
        for (int i = 0; i < n - 1; i++) usec[i] = (postTimes[i + 1] - postTimes[i]) / (1000.0 * rttFactor);
        if (unsorted) lines(out, usec, usec.length);
        if (histogram) {
            double[] sorted = usec.clone();
            Arrays.sort(sorted);
            lines(out, sorted, sorted.length - LatencyResult.LAT_MEASURE_TAIL);
        }
        out.println(Report.RESULT_LINE);
    }

    private static void lines(PrintStream out, double[] v, int count) {
        StringBuilder sb = new StringBuilder("#, usec\n");
        for (int i = 0; i < count; i++)
            sb.append(i + 1).append(", ").append(cG(v[i])).append('\n');
        out.print(sb);
    }

    /** C's {@code %g}: 6 significant digits, trailing zeros dropped, exponent form below 1e-4 and from 1e6. */
    static String cG(double d) {
        if (d == 0) return "0";
        BigDecimal b = new BigDecimal(d).round(new MathContext(6));
        int exp = b.precision() - b.scale() - 1;
        if (exp < -4 || exp >= 6) {
            String m = b.movePointLeft(exp).stripTrailingZeros().toPlainString();
            return m + (exp < 0 ? "e-" : "e+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
        }
        return b.stripTrailingZeros().toPlainString();
    }
}
