package dev.jrdma.bench;

import java.util.Locale;

/** perftest's report text: the same header lines and the same printf formats, so the columns line up. */
public final class Report {
    private Report() {}

    public static final String RESULT_LINE = "---------------------------------------------------------------------------------------";
    public static final String LAT_HEADER = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
    public static final String BW_HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    public static final String BW_HEADER_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";

    public static String latHeader() {
        return RESULT_LINE + "\n" + LAT_HEADER;
    }

    public static String bwHeader(boolean gbits) {
        return RESULT_LINE + "\n" + (gbits ? BW_HEADER_G : BW_HEADER);
    }

    /** perftest's REPORT_FMT_LAT. */
    public static String latLine(LatencyResult r) {
        return String.format(Locale.ROOT, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
                r.size(), r.iters(), r.tMin(), r.tMax(), r.tTypical(), r.tAvg(), r.tStdev(), r.p99(), r.p999());
    }

    /** perftest's REPORT_FMT (REPORT_FMT_EXT when the Gb/sec figure is below 0.1, as perftest does). */
    public static String bwLine(BwResult r, boolean gbits) {
        double peak = r.bwPeak(gbits), avg = r.bwAvg(gbits);
        if (gbits && avg < 0.1)
            return String.format(Locale.ROOT, " %-7d    %d           %-7.6f            %-7.6f            %-7.6f", r.size(), r.iters(), peak, avg, r.msgRateMpps());
        return String.format(Locale.ROOT, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f", r.size(), r.iters(), peak, avg, r.msgRateMpps());
    }
}
