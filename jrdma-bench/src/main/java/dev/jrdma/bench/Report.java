package dev.jrdma.bench;

import java.util.Locale;

/** perftest's report text: the same header lines and the same printf formats, so the columns line up. */
public final class Report {
    private Report() {}

    /** The dashed line perftest prints above and below its report. */
    public static final String RESULT_LINE =
            "---------------------------------------------------------------------------------------";
    /** The column headers of a latency report (perftest's {@code RESULT_FMT_LAT}). */
    public static final String LAT_HEADER =
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
    /** The column headers of a latency report of a -D run (perftest's {@code RESULT_FMT_LAT_DUR}). */
    public static final String LAT_DUR_HEADER = " #bytes        #iterations       t_avg[usec]    tps average";
    /** The column headers of a bandwidth report in MB/sec (perftest's {@code RESULT_FMT}). */
    public static final String BW_HEADER =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    /** The column headers of a bandwidth report in Gb/sec (perftest's {@code RESULT_FMT_G}, for {@code --report_gbits}). */
    public static final String BW_HEADER_G =
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";

    /** {@return the dashed line and the latency column headers, on two lines} */
    public static String latHeader() {
        return RESULT_LINE + "\n" + LAT_HEADER;
    }

    /**
     * {@return the dashed line and the bandwidth column headers, on two lines}
     *
     * @param gbits true for Gb/sec columns, false for MB/sec
     */
    public static String bwHeader(boolean gbits) {
        return RESULT_LINE + "\n" + (gbits ? BW_HEADER_G : BW_HEADER);
    }

    /**
     * {@return one latency report line, formatted as perftest's {@code REPORT_FMT_LAT}}
     *
     * @param r the figures
     */
    public static String latLine(LatencyResult r) {
        return String.format(
                Locale.ROOT,
                " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
                r.size(),
                r.iters(),
                r.tMin(),
                r.tMax(),
                r.tTypical(),
                r.tAvg(),
                r.tStdev(),
                r.p99(),
                r.p999());
    }

    /**
     * {@return one bandwidth report line, formatted as perftest's {@code REPORT_FMT} ({@code REPORT_FMT_EXT} when the
     * Gb/sec figure is below 0.1, as perftest does)}
     *
     * @param r     the figures
     * @param gbits true for Gb/sec, false for MB/sec
     */
    public static String bwLine(BwResult r, boolean gbits) {
        double peak = r.bwPeak(gbits), avg = r.bwAvg(gbits);
        if (gbits && avg < 0.1)
            return String.format(
                    Locale.ROOT,
                    " %-7d    %d           %-7.6f            %-7.6f            %-7.6f",
                    r.size(),
                    r.iters(),
                    peak,
                    avg,
                    r.msgRateMpps());
        return String.format(
                Locale.ROOT,
                " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f",
                r.size(),
                r.iters(),
                peak,
                avg,
                r.msgRateMpps());
    }
}
