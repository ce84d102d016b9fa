package dev.jrdma.bench.netty;

import dev.jrdma.bench.CpuMeter;
import dev.jrdma.bench.JavaCommand;
import dev.jrdma.netty.RdmaChannel;
import dev.jrdma.netty.RdmaChannelOption;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollSocketChannel;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.DatagramSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * gRPC-java's unary call between two processes, over grpc-netty on epoll (loopback TCP) and on jrdma-netty, in one
 * run: the layer most Java services adopt. The server is a child JVM ({@link GrpcBenchServer}: an echo of the
 * request's bytes, one event loop, {@code directExecutor}); this process is the client, one event loop,
 * {@code directExecutor}.
 * <ul>
 *   <li>latency: one call at a time, p50 and p99 of {@code iterations} calls after a warm-up</li>
 *   <li>rate: {@code inFlight} calls outstanding on one channel for {@code seconds}: calls per second, and the CPU of
 *       both processes per call</li>
 * </ul>
 */
public final class GrpcBench {
    /**
     * What one run measures.
     *
     * @param size       the request (and answer) size in bytes
     * @param iterations calls measured for the latency figures
     * @param warmup     calls before those, not measured (from 1,000: then more until the JIT is quiet)
     * @param inFlight   calls outstanding in the rate phase
     * @param seconds    how long the rate phase runs
     * @param serverHost the address the server binds (its own software device)
     * @param clientHost the address the RDMA client binds (its own software device), or null
     * @param transports which to run, in order: {@code epoll}, {@code jrdma}
     * @param verbose    print the p50 of every warm-up round and of every 1,000 timed calls (the slow mode's onset)
     */
    public record Options(
            int size,
            int iterations,
            int warmup,
            int inFlight,
            double seconds,
            String serverHost,
            String clientHost,
            List<String> transports,
            boolean verbose) {
        /** {@return 64-byte calls, 20,000 after 5,000 of warm-up, 32 in flight for 5 s, epoll then jrdma} */
        public static Options defaults() {
            return new Options(64, 20_000, 5_000, 32, 5, "127.0.0.1", "127.0.0.2", List.of("epoll", "jrdma"), false);
        }
    }

    /**
     * One transport's figures; a NaN is a figure that was not measured.
     *
     * @param transport    what ran
     * @param p50Us        the median call, in microseconds
     * @param p99Us        the 99th-percentile call, in microseconds
     * @param callsPerSec  calls per second of the rate phase
     * @param cpuUsPerCall CPU microseconds per call in the rate phase, client and server process together
     * @param note         why figures are missing, or empty
     */
    public record Row(
            String transport, double p50Us, double p99Us, double callsPerSec, double cpuUsPerCall, String note) {}

    private static final String SOFT_PORT = "jrdma.soft.port";
    private static final Duration SERVER_START = Duration.ofSeconds(60);
    /** The longest warm-up after the warm-up calls ({@link #warmUp}). */
    private static final Duration WARM_UP_LIMIT = Duration.ofSeconds(30);
    /** Calls in a round of the warm-up that waits for the JIT. */
    private static final int JIT_ROUND_CALLS = 1_000;
    /** A round in which the JIT compiled for less than this many milliseconds: it is done. */
    private static final long JIT_QUIET_MILLIS = 5;

    private final Options o;
    private final PrintStream log;

    /**
     * A benchmark that prints its progress to {@code log}.
     *
     * @param o   what to measure
     * @param log where progress lines are printed
     */
    public GrpcBench(Options o, PrintStream log) {
        this.o = o;
        this.log = log;
    }

    /**
     * Runs every transport of the options, each against its own server process: all connect and warm up first, then
     * the latency phase takes turns (a round of {@link #JIT_ROUND_CALLS} calls of each transport, then the next), then
     * each transport's rate phase in order.
     *
     * <p>Why the turns (grpc21): both transports' latency still fell during their timed calls after the warm-up (epoll
     * from 138 to 45 us over 20,000 calls, jrdma from 146 to 29 us in one run at load 3-4), because the server
     * processes were still compiling, and the machine's own state (its virtual CPUs' wake-ups) moves from one minute to
     * the next. Timed one after the other, each transport's p50 depended on where in that drift its calls fell; in
     * turns, both are timed over the same stretch of time, after the same warm-up, with every process's JIT quiet.
     *
     * @return a row per transport, in order (a row with a note for epoll when it is not available)
     * @throws IllegalArgumentException when a transport's name is unknown
     * @throws Exception                when a run fails (the server process, a call, a timeout)
     */
    public List<Row> run() throws Exception {
        Row[] rows = new Row[o.transports().size()];
        List<Side> sides = new ArrayList<>();
        List<Integer> sideRow = new ArrayList<>();
        try {
            for (int i = 0; i < rows.length; i++) {
                String t = o.transports().get(i);
                switch (t) {
                    case "epoll" -> {
                        if (!Epoll.isAvailable()) {
                            rows[i] = new Row(
                                    "gRPC over Netty epoll",
                                    Double.NaN,
                                    Double.NaN,
                                    Double.NaN,
                                    Double.NaN,
                                    "not available: " + Epoll.unavailabilityCause());
                            continue;
                        }
                    }
                    case "jrdma" -> {}
                    default -> throw new IllegalArgumentException("unknown transport '" + t + "': use epoll or jrdma");
                }
                log.printf("-- gRPC over %s: connecting, warm-up%n", t);
                Side side = new Side(t);
                sides.add(side);
                sideRow.add(i);
                side.open();
                side.warmUpCalls();
            }
            jitRounds(sides);
            timedInTurns(sides);
            for (int k = 0; k < sides.size(); k++) {
                Side side = sides.get(k);
                log.printf("-- gRPC over %s: rate phase, %d in flight%n", side.transport, o.inFlight());
                rows[sideRow.get(k)] = side.ratePhase();
                side.close(); // the next transport's rate phase runs without this one's processes and loops
            }
        } finally {
            for (Side side : sides) side.close();
        }
        return Arrays.asList(rows);
    }

    /**
     * Rounds of {@link #JIT_ROUND_CALLS} calls of every transport in turn until, in one round, neither this process
     * nor any server process compiled for more than {@link #JIT_QUIET_MILLIS}: a call takes a hundred microseconds or
     * more, so the warm-up calls alone end while C2 still compiles, on one of the two cores the calls run on. At most
     * {@link #WARM_UP_LIMIT}; none for a smoke run (warm-up calls under a round: the tests').
     */
    private void jitRounds(List<Side> sides) throws Exception {
        if (o.warmup() < JIT_ROUND_CALLS || sides.isEmpty()) return;
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) return;
        long end = System.nanoTime() + WARM_UP_LIMIT.toNanos();
        int rounds = 0;
        long[] round = new long[JIT_ROUND_CALLS];
        long[] before = new long[sides.size() + 1];
        boolean quiet;
        do {
            before[0] = jit.getTotalCompilationTime();
            for (int k = 0; k < sides.size(); k++) before[k + 1] = sides.get(k).serverJitMillis();
            for (Side side : sides) {
                side.calls(round, 0, round.length);
                if (o.verbose())
                    side.warmUpP50s.append(side.warmUpP50s.isEmpty() ? "" : " ").append(blockP50s(round));
            }
            rounds++;
            quiet = jit.getTotalCompilationTime() - before[0] <= JIT_QUIET_MILLIS;
            for (int k = 0; k < sides.size(); k++) {
                long compiled = sides.get(k).serverJitMillis() - before[k + 1];
                if (compiled > JIT_QUIET_MILLIS) quiet = false;
            }
        } while (!quiet && System.nanoTime() - end < 0);
        log.printf(
                "   warmed up (%d more rounds of %d calls of each transport until every process's JIT was quiet%s)%n",
                rounds, JIT_ROUND_CALLS, quiet ? "" : ": not within " + WARM_UP_LIMIT.toSeconds() + " s");
        if (o.verbose()) {
            for (Side side : sides)
                log.printf("   %s warm-up rounds, p50 of each [us]: %s%n", side.transport, side.warmUpP50s);
        }
    }

    /** The latency phase: {@link #JIT_ROUND_CALLS} calls of each transport in turn, the order reversed every round. */
    private void timedInTurns(List<Side> sides) {
        for (Side side : sides) side.rtt = new long[o.iterations()];
        int round = 0;
        for (int from = 0; from < o.iterations(); from += JIT_ROUND_CALLS, round++) {
            int n = Math.min(JIT_ROUND_CALLS, o.iterations() - from);
            for (int k = 0; k < sides.size(); k++) {
                Side side = sides.get(round % 2 == 0 ? k : sides.size() - 1 - k);
                side.calls(side.rtt, from, n);
            }
        }
        for (Side side : sides) {
            if (o.verbose()) {
                log.printf(
                        "   %s timed calls, p50 of each %d [us]: %s%n",
                        side.transport, JIT_ROUND_CALLS, blockP50s(side.rtt));
            }
            Arrays.sort(side.rtt);
            log.printf("   %s latency done (p50 %.1f us)%n", side.transport, NettyBench.pct(side.rtt, 50));
        }
    }

    /** One transport: its server process, the client's event loop and channel, its timed calls. */
    private final class Side implements AutoCloseable {
        final String transport;
        final byte[] msg = new byte[o.size()];
        final StringBuilder warmUpP50s = new StringBuilder();
        Process server;
        EventLoopGroup group;
        ManagedChannel channel;
        long[] rtt;
        boolean closed;

        Side(String transport) {
            this.transport = transport;
            Arrays.fill(msg, (byte) 'g');
        }

        String name() {
            return transport.equals("jrdma") ? "gRPC over jrdma-netty" : "gRPC over Netty epoll, TCP";
        }

        void open() throws Exception {
            agreeOnSoftPort();
            List<String> cmd = JavaCommand.withJrdmaProperties(GrpcBenchServer.class);
            cmd.addAll(List.of(transport, o.serverHost()));
            server = new ProcessBuilder(cmd)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            group = GrpcBenchServer.eventLoops(transport);
            int port = awaitPort(server);
            NettyChannelBuilder b = NettyChannelBuilder.forAddress(o.serverHost(), port)
                    .eventLoopGroup(group)
                    .directExecutor()
                    .usePlaintext();
            if (transport.equals("jrdma")) {
                if (GrpcTrace.PREFIX != null) b.channelFactory(() -> GrpcTrace.onChannel(new RdmaChannel(), "client"));
                else b.channelType(RdmaChannel.class);
                b.withOption(RdmaChannelOption.ENDPOINT_CONFIG, GrpcBenchServer.endpointConfig(o.clientHost()));
            } else {
                if (GrpcTrace.PREFIX != null) {
                    b.channelFactory(() -> GrpcTrace.onChannel(new EpollSocketChannel(), "client"));
                } else {
                    b.channelType(EpollSocketChannel.class);
                }
            }
            channel = b.build();
        }

        /**
         * The warm-up calls, then (from a round of warm-up calls up) a second of the rate phase: its paths differ
         * (batches, several streams).
         */
        void warmUpCalls() throws Exception {
            for (int i = 0; i < o.warmup(); i++) call(channel, msg);
            if (o.warmup() >= JIT_ROUND_CALLS) rate(channel, msg, Math.min(1, o.seconds()));
        }

        /** {@code n} calls one at a time, their round trips into {@code rtt} from {@code from}. */
        void calls(long[] into, int from, int n) {
            for (int i = from; i < from + n; i++) {
                long t0 = System.nanoTime();
                call(channel, msg);
                into[i] = System.nanoTime() - t0;
            }
        }

        long serverJitMillis() {
            byte[] answer =
                    ClientCalls.blockingUnaryCall(channel, GrpcBenchServer.JIT_MILLIS, callOptions(), new byte[0]);
            return Long.parseLong(new String(answer, StandardCharsets.US_ASCII));
        }

        Row ratePhase() throws Exception {
            long serverCpu0 = cpuNanos(server);
            CpuMeter cpu = new CpuMeter().start();
            long calls = rate(channel, msg, o.seconds());
            cpu.stop();
            long serverCpu = cpuNanos(server) - serverCpu0;
            double perSec = calls / (cpu.wallNs() / 1e9);
            double cpuPerCall = calls == 0 ? Double.NaN : (cpu.cpuNs() + serverCpu) / 1e3 / calls;
            return new Row(name(), NettyBench.pct(rtt, 50), NettyBench.pct(rtt, 99), perSec, cpuPerCall, "");
        }

        @Override
        public void close() throws Exception {
            if (closed) return;
            closed = true;
            try {
                if (channel != null) {
                    channel.shutdownNow();
                    channel.awaitTermination(5, TimeUnit.SECONDS);
                }
            } finally {
                if (group != null)
                    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
                if (server != null) {
                    server.getOutputStream().close(); // the server's cue to stop
                    if (!server.waitFor(10, TimeUnit.SECONDS)) server.destroyForcibly();
                }
            }
        }
    }

    /** The p50 of each {@link #JIT_ROUND_CALLS} calls of {@code rtt} (in call order), in microseconds. */
    private static String blockP50s(long[] rtt) {
        StringBuilder sb = new StringBuilder();
        for (int from = 0; from < rtt.length; from += JIT_ROUND_CALLS) {
            long[] block = Arrays.copyOfRange(rtt, from, Math.min(rtt.length, from + JIT_ROUND_CALLS));
            Arrays.sort(block);
            sb.append(sb.isEmpty() ? "" : " ").append(Math.round(NettyBench.pct(block, 50)));
        }
        return sb.toString();
    }

    /**
     * The two processes' software devices must use one UDP port. Port 0 (what tests set) lets each JVM pick its own:
     * pick it here before either opens a device, as the provider would (a free port on the wildcard address), so the
     * server process is given the same one. Once this JVM's provider has picked, it has written its port back.
     */
    private static void agreeOnSoftPort() throws IOException {
        if (!"0".equals(System.getProperty(SOFT_PORT))) return;
        try (DatagramSocket probe = new DatagramSocket(0)) {
            System.setProperty(SOFT_PORT, Integer.toString(probe.getLocalPort()));
        }
    }

    private static void call(ManagedChannel channel, byte[] msg) {
        byte[] answer = ClientCalls.blockingUnaryCall(channel, GrpcBenchServer.ECHO, callOptions(), msg);
        if (answer.length != msg.length) {
            throw new IllegalStateException("the echo came back with " + answer.length + " bytes, not " + msg.length);
        }
    }

    private static CallOptions callOptions() {
        return CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    /** {@code inFlight} chains of calls, each starting its next call when its answer is in, until the time is up. */
    private long rate(ManagedChannel channel, byte[] msg, double seconds) throws Exception {
        long end = System.nanoTime() + (long) (seconds * 1e9);
        AtomicLong done = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int i = 0; i < o.inFlight(); i++) {
            CompletableFuture<Void> chain = new CompletableFuture<>();
            chains.add(chain);
            next(channel, msg, end, done, failure, chain);
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new))
                .get((long) (seconds * 1000) + 60_000, TimeUnit.MILLISECONDS);
        if (failure.get() != null) throw new IllegalStateException("a call failed in the rate phase", failure.get());
        return done.get();
    }

    private static void next(
            ManagedChannel channel,
            byte[] msg,
            long end,
            AtomicLong done,
            AtomicReference<Throwable> failure,
            CompletableFuture<Void> chain) {
        ClientCall<byte[], byte[]> c = channel.newCall(GrpcBenchServer.ECHO, callOptions());
        ClientCalls.asyncUnaryCall(c, msg, new StreamObserver<>() {
            @Override
            public void onNext(byte[] answer) {
                done.incrementAndGet();
            }

            @Override
            public void onError(Throwable t) {
                failure.compareAndSet(null, t);
                chain.complete(null);
            }

            @Override
            public void onCompleted() {
                if (System.nanoTime() - end < 0) next(channel, msg, end, done, failure, chain);
                else chain.complete(null);
            }
        });
    }

    private static int awaitPort(Process server) throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith(GrpcBenchServer.READY) && !port.isDone()) {
                        port.complete(Integer.parseInt(
                                line.substring(GrpcBenchServer.READY.length()).trim()));
                    }
                }
                port.completeExceptionally(new IOException(
                        "the gRPC server process ended before it listened (exit " + server.waitFor() + ")"));
            } catch (IOException | InterruptedException | NumberFormatException e) {
                port.completeExceptionally(e);
            }
        });
        return port.get(SERVER_START.toSeconds(), TimeUnit.SECONDS);
    }

    private static long cpuNanos(Process p) {
        return p.toHandle().info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
    }

    /**
     * The table, with each row's latency, rate and CPU also divided by epoll's from the same run.
     *
     * @param rows the rows of {@link #run()}
     * @param o    the options they were measured with (for the header line)
     * @return the table, a header line and a line per row
     */
    public static String table(List<Row> rows, Options o) {
        Row epoll = rows.stream()
                .filter(r -> r.transport().contains("epoll") && r.note().isEmpty())
                .findFirst()
                .orElse(null);
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(
                Locale.ROOT,
                "gRPC unary echo of %d B between two processes; latency: %d calls one at a time; rate: %d in flight, %.0f s%n",
                o.size(),
                o.iterations(),
                o.inFlight(),
                o.seconds()));
        sb.append(String.format(
                Locale.ROOT,
                "%-28s %9s %9s %10s %12s %10s %10s %10s%n",
                "transport",
                "p50 [us]",
                "p99 [us]",
                "calls/s",
                "CPU/call[us]",
                "p50 xepoll",
                "rate xepoll",
                "CPU xepoll"));
        for (Row r : rows) {
            sb.append(String.format(
                    Locale.ROOT,
                    "%-28s %9s %9s %10s %12s %10s %10s %10s%s%n",
                    r.transport(),
                    NettyBench.f(r.p50Us(), 1),
                    NettyBench.f(r.p99Us(), 1),
                    NettyBench.f(r.callsPerSec(), 0),
                    NettyBench.f(r.cpuUsPerCall(), 1),
                    epoll == null ? "-" : NettyBench.f(r.p50Us() / epoll.p50Us(), 2),
                    epoll == null ? "-" : NettyBench.f(r.callsPerSec() / epoll.callsPerSec(), 2),
                    epoll == null ? "-" : NettyBench.f(r.cpuUsPerCall() / epoll.cpuUsPerCall(), 2),
                    r.note().isEmpty() ? "" : "  (" + r.note() + ")"));
        }
        return sb.toString();
    }
}
