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
 * {@code jrdma perf compare [HOST]}: the UDP floor, TCP (blocking and busy-polled) and RDMA side by side against one
 * peer, in one run: the seed articles' table (latency, throughput, message rate at 64 B, CPU of each side) with each
 * figure's ratio to the UDP floor and a gain column (RDMA against TCP), and an HTML report with latency and bandwidth
 * against message size.
 *
 * <p>A control connection on -p carries "RUN series size iters seconds" / "READY" / "RESULT cpuNs wallNs" lines;
 * each run itself is an ordinary {@code jrdma perf} run on port -p + 1 (perftest's protocol for the RDMA tests).
 */
public final class Compare {
    /** The message sizes (bytes) measured when -s/--sizes is not given. */
    public static final List<Integer> DEFAULT_SIZES = List.of(2, 64, 1024, 4096, 65536);
    /**
     * Unreported iterations before each latency point's timed ones. Sockets: a run of the point first (at least -n).
     * RDMA: in the point's own loop, on the same QPs, right before the timed iterations ({@link PerfOptions#warmInIters}):
     * every point makes new devices and QPs, and an unreported run before it did not carry over: the first real round
     * trips of each point still made both JVMs compile and recompile the device's receive path (LinuxUdpLink.receive,
     * ShmReceiver.take: ~0.2 s of C2 per process), and a ping-pong whose two pollers share 2 CPUs with two compiler
     * threads took ~1 ms (a scheduler tick) per round trip until they were done: a 64 B same-host send_lat of 9-10 us
     * t_typical over the default 1000 iterations on a quiet machine, against ~1.2 us over 20,000. write_lat and
     * send_lat wait for the JIT after most of it (RdmaBench.pingPongPoint): 20,000 round trips take less time than
     * the compilations they set off.
     */
    static final long LATENCY_WARMUP_ITERS = 20_000;
    /**
     * The shortest timed loop of a {@code write_bw} or {@code read_bw} point: rounds of -n messages until this time has
     * passed ({@link PerfOptions#minTimedNs}). 1000 64-byte writes over the rings take 0.3 ms, and a single descheduling
     * of either side on a shared machine (1-5 ms) moved such a point 10x between runs.
     */
    static final long BW_MIN_TIMED_NS = 250_000_000L;
    /**
     * A {@code send_bw} point's poll budget on its server ({@link PerfOptions#pollBudgetMicros}; 0, the default: it
     * spins, as perftest's). With {@code -Djrdma.compare.sendBwPollBudget=N} on the server, the receive loop spins N us
     * after its last receive, then waits on a completion channel, standing in for the receive thread in the link, so
     * that the client's next packet wakes it. Meant to let the CPU change hands per burst rather than per time slice
     * when the two busy pollers of a send_bw pair share one CPU; measured at 100 and 20 us by sendbw19 (3 Dec 2026,
     * load 2.6-4.9) it did not lift the slow points (the server slept once per ~18 packets at 64 B), so it stays off.
     */
    static final int SEND_BW_POLL_BUDGET_MICROS = Integer.getInteger("jrdma.compare.sendBwPollBudget", 0);
    /**
     * The fewest messages of a {@code send_bw} point: its server counts the receives it reposts, so the client cannot
     * go on for a time; at the default -n 1000 a point took 0.1-0.5 s under load and 5-10 ms on a quiet machine. With
     * the warm-in the point also lasts about {@link #BW_MIN_TIMED_NS} (the count is sized by the warm-in's last round,
     * {@link Bandwidth#sendWarmIn}): 10,000 messages of 1 KiB took 4-12 ms, and a few time slices moved such a point
     * 2-3x between runs on a quiet machine.
     */
    static final long SEND_BW_MIN_ITERS = 10_000;
    /**
     * The most bytes of a {@code send_bw} point's warm-in ({@link #sendBwWarmIn}): 20,000 messages up to 4 KiB, 4,096
     * of 64 KiB.
     */
    static final long SEND_BW_WARMIN_BYTES = 256L << 20;
    /** The floor's bandwidth is measured with datagrams of this size (a page, the soft device's loopback MTU). */
    public static final int FLOOR_BW_SIZE = PerfOptions.DEFAULT_UDP_BW_SIZE;

    /** One line of the comparison: a test and how it is run. */
    public enum Series {
        /** The floor's latency: raw UDP datagrams ping-pong, busy-polled. */
        UDP_LAT(PerfTest.UDP_LAT, false),
        /** TCP ping-pong latency with blocking reads. */
        TCP_LAT(PerfTest.TCP_LAT, false),
        /** TCP ping-pong latency with busy-polled (non-blocking) reads. */
        TCP_LAT_BUSY_POLL(PerfTest.TCP_LAT, true),
        /** RDMA send latency, as {@code ib_send_lat}. */
        SEND_LAT(PerfTest.SEND_LAT, false),
        /** RDMA write latency, as {@code ib_write_lat}. */
        WRITE_LAT(PerfTest.WRITE_LAT, false),
        /** The floor's bandwidth and message rate: raw UDP datagrams one way. */
        UDP_BW(PerfTest.UDP_BW, false),
        /** TCP stream bandwidth. */
        TCP_BW(PerfTest.TCP_BW, false),
        /** RDMA send bandwidth, as {@code ib_send_bw}. */
        SEND_BW(PerfTest.SEND_BW, false),
        /** RDMA write bandwidth, as {@code ib_write_bw}. */
        WRITE_BW(PerfTest.WRITE_BW, false),
        /** RDMA read bandwidth, as {@code ib_read_bw} (in the HTML report and the point lines; not a table column). */
        READ_BW(PerfTest.READ_BW, false);

        /** The benchmark the series runs. */
        public final PerfTest test;
        /** Whether it runs with {@code --busy-poll} (TCP only). */
        public final boolean busyPoll;

        Series(PerfTest test, boolean busyPoll) {
            this.test = test;
            this.busyPoll = busyPoll;
        }

        /** {@return the name on the control connection and in the HTML report, e.g. {@code tcp_lat_busy_poll}} */
        public String id() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** {@return how a user runs it, e.g. {@code tcp_lat --busy-poll}} */
        public String label() {
            return busyPoll ? test.id() + " --busy-poll" : test.id();
        }

        /**
         * {@return whether this series runs at a message size (a UDP datagram holds at most 65507 bytes)}
         *
         * @param size the message size in bytes
         */
        public boolean runsAt(int size) {
            return !test.isUdp() || size <= PerfOptions.MAX_UDP_SIZE;
        }

        static Series parse(String id) {
            for (Series s : values()) if (s.id().equals(id)) return s;
            throw new IllegalArgumentException("unknown compare series '" + id + "'");
        }
    }

    /** The latency series, in the table's column order. */
    public static final List<Series> LAT_SERIES =
            List.of(Series.UDP_LAT, Series.TCP_LAT, Series.TCP_LAT_BUSY_POLL, Series.SEND_LAT, Series.WRITE_LAT);
    /** The bandwidth series, in the table's column order. */
    public static final List<Series> BW_SERIES =
            List.of(Series.UDP_BW, Series.TCP_BW, Series.SEND_BW, Series.WRITE_BW, Series.READ_BW);

    /**
     * One measured point: the client's figures and both sides' CPU.
     *
     * @param series    the series measured
     * @param size      the message size in bytes
     * @param lat       the latency line, or null for a bandwidth series
     * @param bw        the bandwidth line, or null for a latency series
     * @param clientCpu the client's CPU during the measured phase, in percent of one core
     * @param serverCpu the server's CPU during its run, in percent of one core
     */
    public record Point(Series series, int size, LatencyResult lat, BwResult bw, double clientCpu, double serverCpu) {}

    /**
     * Everything a compare run measured, and the points it could not measure (with the reason).
     *
     * @param device      the RDMA device the RDMA series ran on ({@code "?"} when none ran)
     * @param host        the server's host
     * @param iters       iterations per point
     * @param sizes       the message sizes asked for, in bytes
     * @param points      the measured points of each series, in size order
     * @param notMeasured one line per point that failed: series, size and why
     */
    public record Result(
            String device,
            String host,
            long iters,
            List<Integer> sizes,
            Map<Series, List<Point>> points,
            List<String> notMeasured) {
        /**
         * A result in which every point was measured.
         *
         * @param device the RDMA device
         * @param host   the server's host
         * @param iters  iterations per point
         * @param sizes  the message sizes in bytes
         * @param points the measured points of each series
         */
        public Result(String device, String host, long iters, List<Integer> sizes, Map<Series, List<Point>> points) {
            this(device, host, iters, sizes, points, List.of());
        }

        /**
         * {@return the point of series {@code t} at {@code size} bytes, or null when it was not measured}
         *
         * @param t    the series
         * @param size the message size in bytes
         */
        public Point point(Series t, int size) {
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

    /**
     * Runs the client: for every series and size, asks the server (control connection on -p) to start its side,
     * runs this side on -p + 1 and collects both sides' figures. A point that fails is reported and skipped.
     *
     * @param o   the options: host, sizes, iterations, duration, device, ports, timeout
     * @param out where progress and failures are printed
     * @return what was measured
     * @throws BenchException when the control connection fails, or no point at all could be measured
     */
    public static Result client(PerfOptions o, PrintStream out) {
        List<Integer> sizes = sizes(o);
        long iters = iters(o);
        Progress progress = Progress.forTerminal(out, o.quiet);
        Map<Series, List<Point>> points = new LinkedHashMap<>();
        List<String> notMeasured = new ArrayList<>();
        String device = "?";
        List<Series> order = new ArrayList<>(LAT_SERIES);
        order.addAll(BW_SERIES);
        if (o.compareTests != null) order.removeIf(t -> !o.compareTests.contains(t.id()));
        int total = 0, done = 0;
        for (Series t : order) for (int size : sizes) if (t.runsAt(size)) total++;
        try (Socket ctl = PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec)) {
            ctl.setSoTimeout(o.timeoutSec * 1000);
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(ctl.getInputStream(), StandardCharsets.US_ASCII));
            OutputStream cout = ctl.getOutputStream();
            out.printf(
                    "compare with %s: %s, sizes %s (UDP up to %d), %d iterations each%n",
                    o.host, order.stream().map(Series::label).toList(), sizes, PerfOptions.MAX_UDP_SIZE, iters);
            for (Series t : order) {
                for (int size : sizes) {
                    if (!t.runsAt(size)) continue;
                    progress.update(String.format(" compare: %s %d bytes (%d/%d)", t.label(), size, done + 1, total));
                    if (!progress.enabled()) out.printf(" %s %d bytes ...%n", t.label(), size);
                    // sockets: an unreported run of the point first; RDMA: the point's own warm-in (runOptions)
                    if (t.test.latency && t.test.isSocket() && PerfOptions.warmUps())
                        runPoint(in, ctl, cout, o, t, size, Math.max(iters, LATENCY_WARMUP_ITERS), 0);
                    long pointIters =
                            t == Series.SEND_BW && o.durationSec == 0 ? Math.max(iters, SEND_BW_MIN_ITERS) : iters;
                    PointRun run = runPoint(in, ctl, cout, o, t, size, pointIters, o.durationSec);
                    RunResult rr = run.result();
                    String failure = run.failure(), res = run.serverLine();
                    done++;
                    if (failure != null) {
                        progress.clear();
                        out.printf(" %s %d bytes: not measured (%s)%n", t.label(), size, failure);
                        notMeasured.add(t.label() + " " + size + " B (" + failure + ")");
                        continue;
                    }
                    if (!t.test.isSocket()) device = rr.device();
                    String[] f = res.split(" ");
                    double serverCpu =
                            Long.parseLong(f[2]) <= 0 ? 0 : 100.0 * Long.parseLong(f[1]) / Long.parseLong(f[2]);
                    Point p = new Point(
                            t,
                            size,
                            rr.latency().isEmpty() ? null : rr.latency().getFirst(),
                            rr.bandwidth().isEmpty() ? null : rr.bandwidth().getFirst(),
                            rr.cpuPercent(),
                            serverCpu);
                    points.computeIfAbsent(t, k -> new ArrayList<>()).add(p);
                    progress.clear();
                    out.println(pointLine(p));
                    if (rr.warmInNote() != null) out.println("   " + rr.warmInNote());
                }
            }
            send(cout, "BYE");
        } catch (IOException e) {
            throw new BenchException("compare with " + o.host + " failed: " + e.getMessage(), e);
        } finally {
            progress.clear();
        }
        if (points.isEmpty())
            throw new BenchException("compare with " + o.host + ": no point could be measured; the first failure: "
                    + notMeasured.getFirst());
        return new Result(device, o.host, iters, sizes, points, List.copyOf(notMeasured));
    }

    /** {@return one measured point as the client prints it when it is done (the steadiness runs read these lines)} */
    static String pointLine(Point p) {
        String figures = p.bw() != null
                ? String.format(Locale.ROOT, "%s MB/s, %s Mpps", num(p.bw().bwAvgMBs()), num(p.bw().msgRateMpps()))
                : String.format(
                        Locale.ROOT,
                        "t_typical %s us, 99%% %s us",
                        num(p.lat().tTypical()),
                        num(p.lat().p99()));
        return String.format(Locale.ROOT, " %s %d bytes: %s", p.series().label(), p.size(), figures);
    }

    /** One point's run: both sides' outcome (a failure, when there is one, says what went wrong). */
    private record PointRun(RunResult result, String failure, String serverLine) {}

    /** Asks the server to run its side of one point, runs this side, and reads the server's answer. */
    private static PointRun runPoint(
            BufferedReader in,
            Socket ctl,
            OutputStream cout,
            PerfOptions o,
            Series t,
            int size,
            long iters,
            int durationSec)
            throws IOException {
        send(cout, "RUN " + t.id() + " " + size + " " + iters + " " + durationSec);
        String ready = readLine(in, ctl, o.timeoutSec * 1000 + 30_000, "READY");
        if (!ready.startsWith("READY")) throw new BenchException("compare server: " + ready);
        PerfOptions r = runOptions(o, t, size, iters);
        r.durationSec = durationSec;
        r.host = o.host;
        RunResult rr = null;
        String failure = null;
        try {
            rr = runQuiet(r);
        } catch (BenchException | dev.jrdma.verbs.VerbsException e) {
            failure = e.getMessage(); // one point lost (a stalled peer, an overloaded machine): the others still count
        }
        String res = readLine(in, ctl, (int) Math.min(Integer.MAX_VALUE, o.timeoutSec * 1000L + 600_000L), "RESULT");
        if (failure == null && !res.startsWith("RESULT")) failure = "server: " + res;
        return new PointRun(rr, failure, res);
    }

    /**
     * The server's poll budget of a point: {@link #SEND_BW_POLL_BUDGET_MICROS} for send_bw with -n, else none (-D's
     * loops stop on the clock, which a blocked wait would not see).
     */
    static int serverPollBudget(Series s, int durationSec) {
        return s == Series.SEND_BW && durationSec == 0 ? SEND_BW_POLL_BUDGET_MICROS : 0;
    }

    static PerfOptions runOptions(PerfOptions o, Series s, int size, long iters) {
        PerfTest t = s.test;
        PerfOptions r = new PerfOptions();
        r.test = t;
        r.busyPoll = s.busyPoll;
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
        if (s == Series.WRITE_BW || s == Series.READ_BW || s == Series.SEND_BW) r.minTimedNs = BW_MIN_TIMED_NS;
        if (t.latency && !t.isSocket() && PerfOptions.warmUps()) r.warmInIters = LATENCY_WARMUP_ITERS;
        if (s == Series.SEND_BW && PerfOptions.warmUps()) r.warmInIters = sendBwWarmIn(size);
        return r;
    }

    /**
     * A {@code send_bw} point's warm-in: messages the client sends and the server receives in their own loops before
     * the timed ones ({@link Bandwidth#sendWarmIn}). Its server counts receives, so the warm-up against the peer that
     * write_bw and read_bw have cannot run before it, and without one each send_bw point's timed loop was where both
     * JVMs compiled the send and receive loops (0.1-0.5 s of C2 per process while the two busy pollers needed both
     * CPUs): the points moved 2-16x between runs on a quiet machine.
     *
     * @param size the message size
     * @return the warm-in's messages per QP
     */
    static long sendBwWarmIn(int size) {
        return Math.clamp(SEND_BW_WARMIN_BYTES / Math.max(1, size), 1_000L, LATENCY_WARMUP_ITERS);
    }

    static RunResult runQuiet(PerfOptions r) {
        PrintStream sink = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        if (r.test.isTcp()) return TcpBench.run(r, sink);
        if (r.test.isUdp()) return UdpBench.run(r, sink);
        return RdmaBench.run(r, sink);
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
        if (l == null)
            throw new BenchException("compare: the server closed the control connection (it failed? see its output)");
        return l;
    }

    // ------------------------------------------------------------------ server

    /**
     * Serves one compare client: waits for it on -p (no timeout), then runs the server side of each test it asks for
     * on -p + 1, answering each with its CPU time, until the client says BYE or disconnects.
     *
     * @param o   the options: port, device, timeout
     * @param out where each run's outcome is printed
     * @return 0 when the client finished, 1 when the thread was interrupted
     * @throws BenchException when the control connection fails
     */
    public static int server(PerfOptions o, PrintStream out) {
        out.printf("compare server: waiting on TCP port %d (runs use port %d)%n", o.tcpPort, o.tcpPort + 1);
        try (Socket ctl = PerftestWire.accept(o.tcpPort, 0)) {
            ctl.setSoTimeout(0);
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(ctl.getInputStream(), StandardCharsets.US_ASCII));
            OutputStream cout = ctl.getOutputStream();
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                if (f[0].equals("BYE")) break;
                if (!f[0].equals("RUN") || f.length < 5) {
                    send(cout, "ERROR unknown command '" + line + "'");
                    continue;
                }
                Series t;
                PerfOptions r;
                try {
                    t = Series.parse(f[1]);
                    r = runOptions(o, t, Integer.parseInt(f[2]), Long.parseLong(f[3]));
                    r.durationSec = Integer.parseInt(f[4]);
                    r.pollBudgetMicros = serverPollBudget(t, r.durationSec);
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
                    out.printf(" %-20s %8d bytes  done, server CPU %.0f%%%n", t.id(), r.size, rres.cpuPercent());
                } else {
                    String msg = res instanceof Throwable e ? e.getMessage() : "no result";
                    send(cout, "ERROR " + t.id() + " " + r.size + " bytes: " + msg);
                    out.printf(" %-20s %8d bytes  failed: %s%n", t.id(), r.size, msg);
                }
            }
            out.println("compare server: done");
            return 0;
        } catch (IOException e) {
            throw new BenchException("compare server: " + e.getMessage(), e);
        }
    }

    // ------------------------------------------------------------------ the table

    /** The table's value columns, in order. */
    public static final List<String> COLUMNS = List.of("UDP floor", "TCP", "TCP busy-poll", "RDMA send", "RDMA write");

    /**
     * A table row: label, then the UDP floor, TCP, TCP busy-poll, RDMA send and RDMA write values (NaN = not
     * measured), which way is better, and the name of the floor the ratio row divides by (null: no ratio row).
     *
     * @param label         the metric, its unit and message size
     * @param udp           the UDP floor's value
     * @param tcp           TCP's value
     * @param tcpBusy       busy-polled TCP's value
     * @param send          RDMA send's value
     * @param write         RDMA write's value
     * @param lowerIsBetter true for latency and CPU, false for throughput and rate
     * @param floorName     {@code udp_lat} or {@code udp_bw}, or null when the row has no ratio row
     */
    public record Row(
            String label,
            double udp,
            double tcp,
            double tcpBusy,
            double send,
            double write,
            boolean lowerIsBetter,
            String floorName) {
        /** {@return the five values in {@link Compare#COLUMNS} order} */
        public double[] values() {
            return new double[] {udp, tcp, tcpBusy, send, write};
        }

        /**
         * {@return a value over the UDP floor of the same run: "× udp_lat" (NaN when either is missing or the floor is 0)}
         *
         * @param v one of the row's values
         */
        public double overFloor(double v) {
            if (Double.isNaN(v) || Double.isNaN(udp) || udp == 0) return Double.NaN;
            return v / udp;
        }

        /** {@return the best RDMA value against the best TCP value, &gt;1 when RDMA is better; NaN when not measured} */
        public double gain() {
            double best = best(send, write), bestTcp = best(tcp, tcpBusy);
            if (Double.isNaN(best) || Double.isNaN(bestTcp)) return Double.NaN;
            if (lowerIsBetter && best == 0)
                return bestTcp == 0 ? 1 : Double.POSITIVE_INFINITY; // e.g. a passive server's CPU
            if (bestTcp == 0) return lowerIsBetter ? 0 : Double.POSITIVE_INFINITY;
            return lowerIsBetter ? bestTcp / best : best / bestTcp;
        }

        private double best(double a, double b) {
            if (Double.isNaN(a)) return b;
            if (Double.isNaN(b)) return a;
            return lowerIsBetter ? Math.min(a, b) : Math.max(a, b);
        }
    }

    static int pick(List<Integer> sizes, int want, boolean largest) {
        if (sizes.contains(want)) return want;
        int best = sizes.getFirst();
        for (int s : sizes) if (largest ? s > best : s < best) best = s;
        return best;
    }

    /** The datagram size of the floor's bandwidth: 4096 when measured, else the largest one a datagram holds. */
    static int floorBwSize(Result r) {
        List<Integer> udp = new ArrayList<>();
        for (int s : r.sizes()) if (s <= PerfOptions.MAX_UDP_SIZE) udp.add(s);
        return udp.isEmpty() ? FLOOR_BW_SIZE : pick(udp, FLOOR_BW_SIZE, true);
    }

    /**
     * {@return the table's rows: latency t_typical and 99th percentile at 64 B, throughput at 64 KiB, message rate at
     * 64 B, client and server CPU (the nearest measured sizes when those are missing)}
     *
     * @param r a compare run's result
     */
    public static List<Row> rows(Result r) {
        int small = pick(r.sizes(), 64, false), big = pick(r.sizes(), 65536, true), floorBw = floorBwSize(r);
        String bigLabel = big + " B" + (floorBw != big ? " (UDP: " + floorBw + " B)" : "");
        List<Row> rows = new ArrayList<>();
        rows.add(new Row(
                "latency t_typical [usec], " + small + " B",
                lat(r, Series.UDP_LAT, small, false),
                lat(r, Series.TCP_LAT, small, false),
                lat(r, Series.TCP_LAT_BUSY_POLL, small, false),
                lat(r, Series.SEND_LAT, small, false),
                lat(r, Series.WRITE_LAT, small, false),
                true,
                "udp_lat"));
        rows.add(new Row(
                "latency 99% [usec], " + small + " B",
                lat(r, Series.UDP_LAT, small, true),
                lat(r, Series.TCP_LAT, small, true),
                lat(r, Series.TCP_LAT_BUSY_POLL, small, true),
                lat(r, Series.SEND_LAT, small, true),
                lat(r, Series.WRITE_LAT, small, true),
                true,
                "udp_lat"));
        rows.add(new Row(
                "throughput BW average [MB/sec], " + bigLabel,
                bw(r, Series.UDP_BW, floorBw, false),
                bw(r, Series.TCP_BW, big, false),
                Double.NaN,
                bw(r, Series.SEND_BW, big, false),
                bw(r, Series.WRITE_BW, big, false),
                false,
                "udp_bw"));
        rows.add(new Row(
                "message rate [Mpps], " + small + " B",
                bw(r, Series.UDP_BW, small, true),
                bw(r, Series.TCP_BW, small, true),
                Double.NaN,
                bw(r, Series.SEND_BW, small, true),
                bw(r, Series.WRITE_BW, small, true),
                false,
                "udp_bw"));
        rows.add(new Row(
                "CPU client [% of a core], bw " + bigLabel,
                cpu(r, Series.UDP_BW, floorBw, false),
                cpu(r, Series.TCP_BW, big, false),
                Double.NaN,
                cpu(r, Series.SEND_BW, big, false),
                cpu(r, Series.WRITE_BW, big, false),
                true,
                null));
        rows.add(new Row(
                "CPU server [% of a core], bw " + bigLabel,
                cpu(r, Series.UDP_BW, floorBw, true),
                cpu(r, Series.TCP_BW, big, true),
                Double.NaN,
                cpu(r, Series.SEND_BW, big, true),
                cpu(r, Series.WRITE_BW, big, true),
                true,
                null));
        return rows;
    }

    private static double lat(Result r, Series t, int size, boolean p99) {
        Point p = r.point(t, size);
        return p == null || p.lat() == null
                ? Double.NaN
                : p99 ? p.lat().p99() : p.lat().tTypical();
    }

    private static double bw(Result r, Series t, int size, boolean rate) {
        Point p = r.point(t, size);
        return p == null || p.bw() == null ? Double.NaN : rate ? p.bw().msgRateMpps() : p.bw().bwAvgMBs();
    }

    private static double cpu(Result r, Series t, int size, boolean server) {
        Point p = r.point(t, size);
        return p == null ? Double.NaN : server ? p.serverCpu() : p.clientCpu();
    }

    /** A ratio as the table prints it: two decimals. */
    static String ratio(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? num(v) : String.format(Locale.ROOT, "%.2f", v);
    }

    static String num(double v) {
        if (Double.isNaN(v)) return "-";
        if (Double.isInfinite(v)) return "inf";
        if (v == 0) return "0";
        if (Math.abs(v) >= 100) return String.format(Locale.ROOT, "%.0f", v);
        if (Math.abs(v) >= 1) return String.format(Locale.ROOT, "%.2f", v);
        return String.format(Locale.ROOT, "%.4f", v);
    }

    /**
     * {@return the comparison as a text table: one line per row with the RDMA gain, its ratio line against the UDP
     * floor, the points not measured, and how to reproduce the run}
     *
     * @param r a compare run's result
     */
    public static String table(Result r) {
        StringBuilder sb = new StringBuilder();
        String fmt = "%-" + labelWidth(r) + "s %10s %10s %14s %10s %11s %11s%n";
        sb.append(String.format(
                Locale.ROOT,
                fmt,
                "metric",
                COLUMNS.get(0),
                COLUMNS.get(1),
                COLUMNS.get(2),
                COLUMNS.get(3),
                COLUMNS.get(4),
                "RDMA gain"));
        for (Row row : rows(r)) {
            double[] v = row.values();
            sb.append(String.format(
                    Locale.ROOT,
                    fmt,
                    row.label(),
                    num(v[0]),
                    num(v[1]),
                    num(v[2]),
                    num(v[3]),
                    num(v[4]),
                    ratio(row.gain())));
            if (row.floorName() != null)
                sb.append(String.format(
                        Locale.ROOT,
                        fmt,
                        "  × " + row.floorName(),
                        ratio(row.overFloor(v[0])),
                        ratio(row.overFloor(v[1])),
                        ratio(row.overFloor(v[2])),
                        ratio(row.overFloor(v[3])),
                        ratio(row.overFloor(v[4])),
                        ""));
        }
        sb.append(
                "× udp_lat, × udp_bw: the figure over the UDP floor of this run (raw Java UDP datagrams, busy-polled; latency: 1 = as\n"
                        + "fast as the floor, lower is better; throughput and rate: 1 = the floor's, higher is better).\n");
        sb.append(
                "RDMA gain: best RDMA column against the better TCP column, >1 means RDMA is better (lower latency/CPU, higher throughput/rate).\n");
        for (String m : r.notMeasured())
            sb.append("Not measured in this run: ").append(m).append('\n');
        sb.append("RDMA device: ")
                .append(r.device())
                .append("; ")
                .append(r.iters())
                .append(" iterations per point (write_bw, read_bw: rounds of them for at least ")
                .append(BW_MIN_TIMED_NS / 1_000_000)
                .append(" ms; send_bw: at least ")
                .append(SEND_BW_MIN_ITERS)
                .append(
                        ", and as many as its warm-in's last round sends in that time); latency is half a round trip.\n");
        if (PerfOptions.warmUps())
            sb.append(String.format(
                    Locale.ROOT,
                    "Warm-ups (not reported): at least %d iterations before each latency point (RDMA: in the point's own loop), %.0f s of the test's traffic before each bandwidth point (send_bw: up to %d messages, %d MiB, in the point's own loops, then rounds as long as the timed loop until one in which neither JVM compiled, at most %.0f s).%n",
                    LATENCY_WARMUP_ITERS,
                    PerfOptions.BW_WARMUP_NS / 1e9,
                    LATENCY_WARMUP_ITERS,
                    SEND_BW_WARMIN_BYTES >> 20,
                    Bandwidth.WARM_IN_BOUND_NS / 1e9));
        sb.append(
                "Reproduce: 'jrdma perf compare [-d DEV]' (server) and 'jrdma perf compare [-d DEV] [-n ITERS] HOST' (client).\n");
        return sb.toString();
    }

    private static int labelWidth(Result r) {
        int w = 44;
        for (Row row : rows(r)) w = Math.max(w, row.label().length());
        return w;
    }

    /**
     * Runs the client, prints the table, writes the HTML report.
     *
     * @param o   the options; {@code --html} names the report (default {@code jrdma-compare.html})
     * @param out where progress and the table are printed
     * @return the report's path
     * @throws IOException    when the report cannot be written
     * @throws BenchException as {@link #client} does
     */
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
