package dev.jrdma.bench;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code jrdma perf compare [HOST]}: socket and RDMA side by side against one peer, the seed articles' table
 * (latency, throughput, message rate at 64 B, CPU of each side) with a gain column, and an HTML report with
 * latency and bandwidth against message size.
 *
 * <p>A control connection on -p carries "RUN test size iters seconds" / "READY" / "RESULT cpuNs wallNs" lines;
 * each run itself is an ordinary {@code jrdma perf} run on port -p + 1 (perftest's protocol for the RDMA tests).
 */
public final class Compare {
    public static final List<PerfTest> LAT_TESTS = List.of(PerfTest.TCP_LAT, PerfTest.SEND_LAT, PerfTest.WRITE_LAT);
    public static final List<PerfTest> BW_TESTS = List.of(PerfTest.TCP_BW, PerfTest.SEND_BW, PerfTest.WRITE_BW);
    public static final List<Integer> DEFAULT_SIZES = List.of(2, 64, 1024, 4096, 65536);

    /** One measured point: the client's figures and both sides' CPU. */
    public record Point(PerfTest test, int size, LatencyResult lat, BwResult bw, double clientCpu, double serverCpu) {}

    /** Everything a compare run measured. */
    public record Result(String device, String host, long iters, List<Integer> sizes, Map<PerfTest, List<Point>> points) {
        public Point point(PerfTest t, int size) {
            for (Point p : points.getOrDefault(t, List.of())) if (p.size() == size) return p;
            return null;
        }
    }

    private Compare() {}

    static List<Integer> sizes(PerfOptions o) {
        return o.sizes != null ? o.sizes : DEFAULT_SIZES;
    }

    static long iters(PerfOptions o) {
        return o.iters > 0 ? o.iters : 1000;
    }

    // ------------------------------------------------------------------ client

    public static Result client(PerfOptions o, PrintStream out) {
        List<Integer> sizes = sizes(o);
        long iters = iters(o);
        Progress progress = Progress.forTerminal(out, o.quiet);
        Map<PerfTest, List<Point>> points = new LinkedHashMap<>();
        String device = "?";
        int total = sizes.size() * (LAT_TESTS.size() + BW_TESTS.size()), done = 0;
        try (Socket ctl = PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec)) {
            ctl.setSoTimeout(o.timeoutSec * 1000);
            BufferedReader in = new BufferedReader(new InputStreamReader(ctl.getInputStream(), StandardCharsets.US_ASCII));
            OutputStream cout = ctl.getOutputStream();
            out.printf("compare with %s: %s and %s, sizes %s, %d iterations each%n", o.host, LAT_TESTS, BW_TESTS, sizes, iters);
            List<PerfTest> order = new ArrayList<>(LAT_TESTS);
            order.addAll(BW_TESTS);
            for (PerfTest t : order) {
                for (int size : sizes) {
                    progress.update(String.format(" compare: %s %d bytes (%d/%d)", t.id(), size, done + 1, total));
                    if (!progress.enabled()) out.printf(" %s %d bytes ...%n", t.id(), size);
                    send(cout, "RUN " + t.id() + " " + size + " " + iters + " " + o.durationSec);
                    String ready = readLine(in, ctl, o.timeoutSec * 1000 + 30_000, "READY");
                    if (!ready.startsWith("READY")) throw new BenchException("compare server: " + ready);
                    PerfOptions r = runOptions(o, t, size, iters);
                    r.host = o.host;
                    RunResult rr = runQuiet(r);
                    if (!t.isTcp()) device = rr.device();
                    String res = readLine(in, ctl, (int) Math.min(Integer.MAX_VALUE, o.timeoutSec * 1000L + 600_000L), "RESULT");
                    if (!res.startsWith("RESULT")) throw new BenchException("compare server, " + t.id() + " " + size + " bytes: " + res);
                    String[] f = res.split(" ");
                    double serverCpu = Long.parseLong(f[2]) <= 0 ? 0 : 100.0 * Long.parseLong(f[1]) / Long.parseLong(f[2]);
                    Point p = new Point(t, size, rr.latency().isEmpty() ? null : rr.latency().getFirst(),
                            rr.bandwidth().isEmpty() ? null : rr.bandwidth().getFirst(), rr.cpuPercent(), serverCpu);
                    points.computeIfAbsent(t, k -> new ArrayList<>()).add(p);
                    done++;
                }
            }
            send(cout, "BYE");
        } catch (IOException e) {
            throw new BenchException("compare with " + o.host + " failed: " + e.getMessage(), e);
        } finally {
            progress.clear();
        }
        return new Result(device, o.host, iters, sizes, points);
    }

    static PerfOptions runOptions(PerfOptions o, PerfTest t, int size, long iters) {
        PerfOptions r = new PerfOptions();
        r.test = t;
        r.device = o.device;
        r.ibPort = o.ibPort;
        r.gidIndex = o.gidIndex;
        r.size = size;
        r.iters = iters;
        r.durationSec = o.durationSec;
        r.tcpPort = o.tcpPort + 1;
        r.timeoutSec = o.timeoutSec;
        r.quiet = true;
        r.acceptTimeoutSec = o.timeoutSec + 30;
        if (t.latency && iters < 5) r.iters = 5;
        return r;
    }

    static RunResult runQuiet(PerfOptions r) {
        PrintStream sink = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        return r.test.isTcp() ? TcpBench.run(r, sink) : RdmaBench.run(r, sink);
    }

    private static void send(OutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    private static String readLine(BufferedReader in, Socket s, int timeoutMs, String what) throws IOException {
        s.setSoTimeout(timeoutMs);
        String l;
        try {
            l = in.readLine();
        } catch (java.net.SocketTimeoutException e) {
            throw new BenchException("compare: no " + what + " from the server within " + timeoutMs / 1000 + " s");
        }
        if (l == null) throw new BenchException("compare: the server closed the control connection (it failed? see its output)");
        return l;
    }

    // ------------------------------------------------------------------ server

    /** Serves one compare client: runs the server side of each test it asks for. */
    public static int server(PerfOptions o, PrintStream out) {
        out.printf("compare server: waiting on TCP port %d (runs use port %d)%n", o.tcpPort, o.tcpPort + 1);
        try (Socket ctl = PerftestWire.accept(o.tcpPort, 0)) {
            ctl.setSoTimeout(0);
            BufferedReader in = new BufferedReader(new InputStreamReader(ctl.getInputStream(), StandardCharsets.US_ASCII));
            OutputStream cout = ctl.getOutputStream();
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                if (f[0].equals("BYE")) break;
                if (!f[0].equals("RUN") || f.length < 5) {
                    send(cout, "ERROR unknown command '" + line + "'");
                    continue;
                }
                PerfTest t;
                PerfOptions r;
                try {
                    t = PerfTest.parse(f[1]);
                    r = runOptions(o, t, Integer.parseInt(f[2]), Long.parseLong(f[3]));
                    r.durationSec = Integer.parseInt(f[4]);
                } catch (RuntimeException e) {
                    send(cout, "ERROR " + e.getMessage());
                    continue;
                }
                AtomicReference<Object> outcome = new AtomicReference<>();
                PerfOptions rr = r;
                Thread th = Thread.ofPlatform().name("jrdma-compare-" + t.id()).start(() -> {
                    try {
                        outcome.set(runQuiet(rr));
                    } catch (Throwable e) {
                        outcome.set(e);
                    }
                });
                // the run listens on -p + 1 (the client retries until it does)
                send(cout, "READY " + r.tcpPort);
                try {
                    th.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return 1;
                }
                Object res = outcome.get();
                if (res instanceof RunResult rres) {
                    send(cout, "RESULT " + rres.cpuNs() + " " + rres.wallNs());
                    out.printf(" %-10s %8d bytes  done, server CPU %.0f%%%n", t.id(), r.size, rres.cpuPercent());
                } else {
                    String msg = res instanceof Throwable e ? e.getMessage() : "no result";
                    send(cout, "ERROR " + t.id() + " " + r.size + " bytes: " + msg);
                    out.printf(" %-10s %8d bytes  failed: %s%n", t.id(), r.size, msg);
                }
            }
            out.println("compare server: done");
            return 0;
        } catch (IOException e) {
            throw new BenchException("compare server: " + e.getMessage(), e);
        }
    }

    // ------------------------------------------------------------------ the table

    /** A table row: label, then TCP, RDMA send, RDMA write values (NaN = not measured) and which way is better. */
    public record Row(String label, double tcp, double send, double write, boolean lowerIsBetter) {
        /** Best RDMA against TCP, >1 = RDMA better; NaN when not measured. */
        public double gain() {
            double best = Double.isNaN(send) ? write : Double.isNaN(write) ? send : lowerIsBetter ? Math.min(send, write) : Math.max(send, write);
            if (Double.isNaN(best) || Double.isNaN(tcp)) return Double.NaN;
            if (lowerIsBetter && best == 0) return tcp == 0 ? 1 : Double.POSITIVE_INFINITY;   // e.g. a passive server's CPU
            if (tcp == 0) return lowerIsBetter ? 0 : Double.POSITIVE_INFINITY;
            return lowerIsBetter ? tcp / best : best / tcp;
        }
    }

    static int pick(List<Integer> sizes, int want, boolean largest) {
        if (sizes.contains(want)) return want;
        int best = sizes.getFirst();
        for (int s : sizes) if (largest ? s > best : s < best) best = s;
        return best;
    }

    public static List<Row> rows(Result r) {
        int small = pick(r.sizes(), 64, false), big = pick(r.sizes(), 65536, true);
        List<Row> rows = new ArrayList<>();
        rows.add(new Row("latency t_typical [usec], " + small + " B", lat(r, PerfTest.TCP_LAT, small, false), lat(r, PerfTest.SEND_LAT, small, false), lat(r, PerfTest.WRITE_LAT, small, false), true));
        rows.add(new Row("latency 99% [usec], " + small + " B", lat(r, PerfTest.TCP_LAT, small, true), lat(r, PerfTest.SEND_LAT, small, true), lat(r, PerfTest.WRITE_LAT, small, true), true));
        rows.add(new Row("throughput BW average [MB/sec], " + big + " B", bw(r, PerfTest.TCP_BW, big, false), bw(r, PerfTest.SEND_BW, big, false), bw(r, PerfTest.WRITE_BW, big, false), false));
        rows.add(new Row("message rate [Mpps], " + small + " B", bw(r, PerfTest.TCP_BW, small, true), bw(r, PerfTest.SEND_BW, small, true), bw(r, PerfTest.WRITE_BW, small, true), false));
        rows.add(new Row("CPU client [% of a core], bw " + big + " B", cpu(r, PerfTest.TCP_BW, big, false), cpu(r, PerfTest.SEND_BW, big, false), cpu(r, PerfTest.WRITE_BW, big, false), true));
        rows.add(new Row("CPU server [% of a core], bw " + big + " B", cpu(r, PerfTest.TCP_BW, big, true), cpu(r, PerfTest.SEND_BW, big, true), cpu(r, PerfTest.WRITE_BW, big, true), true));
        return rows;
    }

    private static double lat(Result r, PerfTest t, int size, boolean p99) {
        Point p = r.point(t, size);
        return p == null || p.lat() == null ? Double.NaN : p99 ? p.lat().p99() : p.lat().tTypical();
    }

    private static double bw(Result r, PerfTest t, int size, boolean rate) {
        Point p = r.point(t, size);
        return p == null || p.bw() == null ? Double.NaN : rate ? p.bw().msgRateMpps() : p.bw().bwAvgMBs();
    }

    private static double cpu(Result r, PerfTest t, int size, boolean server) {
        Point p = r.point(t, size);
        return p == null ? Double.NaN : server ? p.serverCpu() : p.clientCpu();
    }

    static String num(double v) {
        if (Double.isNaN(v)) return "-";
        if (Double.isInfinite(v)) return "inf";
        if (v == 0) return "0";
        if (Math.abs(v) >= 100) return String.format(Locale.ROOT, "%.0f", v);
        if (Math.abs(v) >= 1) return String.format(Locale.ROOT, "%.2f", v);
        return String.format(Locale.ROOT, "%.4f", v);
    }

    public static String table(Result r) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%-44s %12s %12s %12s %14s%n", "metric", "TCP socket", "RDMA send", "RDMA write", "RDMA gain (x)"));
        for (Row row : rows(r)) {
            double g = row.gain();
            sb.append(String.format(Locale.ROOT, "%-44s %12s %12s %12s %14s%n", row.label(), num(row.tcp()), num(row.send()), num(row.write()),
                    Double.isNaN(g) || Double.isInfinite(g) ? num(g) : String.format(Locale.ROOT, "%.2f", g)));
        }
        sb.append("RDMA gain: best RDMA column against TCP, >1 means RDMA is better (lower latency/CPU, higher throughput/rate).\n");
        sb.append("RDMA device: ").append(r.device()).append("; ").append(r.iters()).append(" iterations per point; latency is half a round trip.\n");
        return sb.toString();
    }

    /** Runs the client, prints the table, writes the HTML report; returns the report's path. */
    public static Path clientAndReport(PerfOptions o, PrintStream out) throws IOException {
        Result r = client(o, out);
        out.println(Report.RESULT_LINE);
        out.print(table(r));
        Path html = Path.of(o.html != null ? o.html : "jrdma-compare.html");
        Files.writeString(html, HtmlReport.render(r), StandardCharsets.UTF_8);
        out.println("HTML report: " + html.toAbsolutePath());
        return html;
    }
}
