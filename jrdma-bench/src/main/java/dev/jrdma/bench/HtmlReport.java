package dev.jrdma.bench;

import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The compare report as one self-contained HTML page: the table and two inline SVG charts, no scripts, no links. */
public final class HtmlReport {
    private HtmlReport() {}

    static final String[] COLORS = {"#7f7f7f", "#d62728", "#ff7f0e", "#1f77b4", "#2ca02c"};

    /** One line of a chart: its id (data-name), its legend and its points. */
    record Series(String name, String legend, List<double[]> xy) {}

    /**
     * {@return a self-contained HTML page (two inline SVG charts, no scripts, no links): the comparison table and
     * latency and bandwidth against message size for every series}
     *
     * @param r a compare run's result
     */
    public static String render(Compare.Result r) {
        StringBuilder h = new StringBuilder();
        h.append(
                        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>jrdma compare: UDP floor, TCP socket, RDMA</title>\n<style>\n")
                .append(
                        "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1000px}table{border-collapse:collapse;margin:1em 0}")
                .append(
                        "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}th:first-child,td:first-child{text-align:left}")
                .append(
                        "th{background:#f3f3f3}.note{color:#555;font-size:90%}.ratio td{color:#555;font-style:italic}svg{background:#fff;border:1px solid #ddd;margin:0.5em 0}\n</style></head><body>\n");
        h.append("<h1>UDP floor, TCP socket, RDMA</h1>\n<p class=\"note\">jrdma perf compare against ")
                .append(esc(r.host()))
                .append(", RDMA device ")
                .append(esc(r.device()))
                .append(", ")
                .append(r.iters())
                .append(" iterations per point, generated ")
                .append(esc(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME)))
                .append(". Only what this run measured is shown.</p>\n");
        h.append("<table><tr><th>metric</th>");
        for (String c : Compare.COLUMNS) h.append("<th>").append(esc(c)).append("</th>");
        h.append("<th>RDMA gain (x)</th></tr>\n");
        for (Compare.Row row : Compare.rows(r)) {
            h.append("<tr><td>").append(esc(row.label())).append("</td>");
            for (double v : row.values())
                h.append("<td>").append(Compare.num(v)).append("</td>");
            h.append("<td>").append(Compare.ratio(row.gain())).append("</td></tr>\n");
            if (row.floorName() != null) {
                h.append("<tr class=\"ratio\"><td>&#215; ")
                        .append(esc(row.floorName()))
                        .append("</td>");
                for (double v : row.values())
                    h.append("<td>").append(Compare.ratio(row.overFloor(v))).append("</td>");
                h.append("<td></td></tr>\n");
            }
        }
        h.append(
                "</table>\n<p class=\"note\">&#215; udp_lat, &#215; udp_bw: the figure over the UDP floor measured in the same run (raw Java UDP "
                        + "datagrams, busy-polled): for latency 1 is as fast as the floor and lower is better, for throughput and message rate 1 is the "
                        + "floor's and higher is better. RDMA gain: the better RDMA column against the better TCP column; above 1 RDMA is better. "
                        + "Latency is half a round trip (perftest's convention); CPU is process CPU time over wall time during the run, 100% = one core. "
                        + "Reproduce with <code>jrdma perf compare</code> (server) and <code>jrdma perf compare HOST</code> (client).</p>\n");
        for (String m : r.notMeasured())
            h.append("<p class=\"note\">Not measured in this run: ")
                    .append(esc(m))
                    .append("</p>\n");
        h.append("<h2>Latency (t_typical) against message size</h2>\n");
        h.append(chart(latSeries(r), "message size [bytes]", "latency [usec]", true));
        h.append("<h2>Bandwidth (average) against message size</h2>\n");
        h.append(chart(bwSeries(r), "message size [bytes]", "bandwidth [MB/sec]", true));
        h.append(
                "<h2>Measured points</h2>\n<table><tr><th>test</th><th>#bytes</th><th>t_typical [usec]</th><th>99% [usec]</th>"
                        + "<th>BW average [MB/sec]</th><th>MsgRate [Mpps]</th><th>CPU client [%]</th><th>CPU server [%]</th></tr>\n");
        for (var e : r.points().entrySet()) {
            for (Compare.Point p : e.getValue()) {
                h.append("<tr><td>")
                        .append(esc(p.series().label()))
                        .append("</td><td>")
                        .append(p.size())
                        .append("</td><td>")
                        .append(p.lat() == null ? "-" : Compare.num(p.lat().tTypical()))
                        .append("</td><td>")
                        .append(p.lat() == null ? "-" : Compare.num(p.lat().p99()))
                        .append("</td><td>")
                        .append(p.bw() == null ? "-" : Compare.num(p.bw().bwAvgMBs()))
                        .append("</td><td>")
                        .append(p.bw() == null ? "-" : Compare.num(p.bw().msgRateMpps()))
                        .append("</td><td>")
                        .append(Compare.num(p.clientCpu()))
                        .append("</td><td>")
                        .append(Compare.num(p.serverCpu()))
                        .append("</td></tr>\n");
            }
        }
        h.append("</table>\n</body></html>\n");
        return h.toString();
    }

    static List<Series> latSeries(Compare.Result r) {
        List<Series> s = new ArrayList<>();
        for (Compare.Series t : Compare.LAT_SERIES) {
            List<double[]> xy = new ArrayList<>();
            for (Compare.Point p : r.points().getOrDefault(t, List.of()))
                if (p.lat() != null) xy.add(new double[] {p.size(), p.lat().tTypical()});
            if (!xy.isEmpty()) s.add(new Series(t.id(), t.label(), xy));
        }
        return s;
    }

    static List<Series> bwSeries(Compare.Result r) {
        List<Series> s = new ArrayList<>();
        for (Compare.Series t : Compare.BW_SERIES) {
            List<double[]> xy = new ArrayList<>();
            for (Compare.Point p : r.points().getOrDefault(t, List.of()))
                if (p.bw() != null) xy.add(new double[] {p.size(), p.bw().bwAvgMBs()});
            if (!xy.isEmpty()) s.add(new Series(t.id(), t.label(), xy));
        }
        return s;
    }

    /** A line chart, log2 x axis, log10 y axis, as inline SVG. */
    static String chart(List<Series> series, String xLabel, String yLabel, boolean logY) {
        int w = 800, hgt = 360, left = 70, right = 190, top = 20, bottom = 50;
        double xmin = Double.MAX_VALUE, xmax = -Double.MAX_VALUE, ymin = Double.MAX_VALUE, ymax = -Double.MAX_VALUE;
        for (Series s : series)
            for (double[] p : s.xy()) {
                if (p[1] <= 0 && logY) continue;
                xmin = Math.min(xmin, p[0]);
                xmax = Math.max(xmax, p[0]);
                ymin = Math.min(ymin, p[1]);
                ymax = Math.max(ymax, p[1]);
            }
        StringBuilder g = new StringBuilder();
        g.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-size=\"12\">%n",
                w,
                hgt,
                w,
                hgt));
        if (xmin > xmax) {
            g.append("<text x=\"20\" y=\"40\">no data measured</text></svg>\n");
            return g.toString();
        }
        double lx0 = log2(xmin), lx1 = Math.max(log2(xmax), lx0 + 1);
        double ly0 = Math.floor(Math.log10(ymin)), ly1 = Math.ceil(Math.log10(ymax));
        if (ly1 <= ly0) ly1 = ly0 + 1;
        int pw = w - left - right, ph = hgt - top - bottom;
        final double fx0 = lx0, fx1 = lx1, fy0 = ly0, fy1 = ly1;
        java.util.function.DoubleUnaryOperator X = x -> left + (log2(x) - fx0) / (fx1 - fx0) * pw;
        java.util.function.DoubleUnaryOperator Y = y -> top + ph - (Math.log10(y) - fy0) / (fy1 - fy0) * ph;
        g.append(String.format(
                Locale.ROOT,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>%n",
                left,
                top,
                pw,
                ph));
        for (int e = (int) Math.ceil(lx0); e <= (int) Math.floor(lx1); e++) {
            double x = left + (e - lx0) / (lx1 - lx0) * pw;
            g.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>",
                    x,
                    top,
                    x,
                    top + ph));
            if ((e % 2 == 0) || (lx1 - lx0) < 12)
                g.append(String.format(
                        Locale.ROOT,
                        "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                        x,
                        top + ph + 16,
                        sizeLabel(1L << e)));
        }
        for (int e = (int) ly0; e <= (int) ly1; e++) {
            double y = top + ph - (e - ly0) / (ly1 - ly0) * ph;
            g.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>",
                    left,
                    y,
                    left + pw,
                    y));
            g.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    left - 6,
                    y + 4,
                    Compare.num(Math.pow(10, e))));
        }
        g.append(String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                left + pw / 2,
                hgt - 10,
                esc(xLabel)));
        g.append(String.format(
                Locale.ROOT,
                "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">%s</text>%n",
                top + ph / 2,
                top + ph / 2,
                esc(yLabel)));
        int i = 0;
        for (Series s : series) {
            String c = COLORS[i % COLORS.length];
            StringBuilder pts = new StringBuilder();
            for (double[] p : s.xy()) {
                if (p[1] <= 0) continue;
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", X.applyAsDouble(p[0]), Y.applyAsDouble(p[1])));
            }
            g.append("<g class=\"series\" data-name=\"").append(esc(s.name())).append("\">");
            g.append("<polyline fill=\"none\" stroke=\"")
                    .append(c)
                    .append("\" stroke-width=\"2\" points=\"")
                    .append(pts.toString().trim())
                    .append("\"/>");
            for (double[] p : s.xy()) {
                if (p[1] <= 0) continue;
                g.append(String.format(
                        Locale.ROOT,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s %s B: %s</title></circle>",
                        X.applyAsDouble(p[0]),
                        Y.applyAsDouble(p[1]),
                        c,
                        esc(s.legend()),
                        sizeLabel((long) p[0]),
                        Compare.num(p[1])));
            }
            g.append("</g>\n");
            int ly = top + 14 + i * 18;
            g.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">%s</text>%n",
                    left + pw + 12,
                    ly - 4,
                    left + pw + 36,
                    ly - 4,
                    c,
                    left + pw + 42,
                    ly,
                    esc(s.legend())));
            i++;
        }
        g.append("</svg>\n");
        return g.toString();
    }

    static double log2(double x) {
        return Math.log(x) / Math.log(2);
    }

    static String sizeLabel(long b) {
        if (b >= 1 << 20 && b % (1 << 20) == 0) return (b >> 20) + "M";
        if (b >= 1 << 10 && b % (1 << 10) == 0) return (b >> 10) + "K";
        return Long.toString(b);
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
