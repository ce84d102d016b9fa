package dev.jrdma.bench.netty;

import dev.jrdma.bench.CpuMeter;
import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.ServerEndpoint;
import dev.jrdma.netty.RdmaChannel;
import dev.jrdma.netty.RdmaChannelConfig;
import dev.jrdma.netty.RdmaChannelOption;
import dev.jrdma.netty.RdmaEventLoopGroup;
import dev.jrdma.netty.RdmaServerChannel;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One echo workload over several Netty transports in one run: Netty NIO and native epoll over loopback TCP, and
 * jrdma-netty over the RDMA device; plus jrdma-connect's bare {@link Endpoint} (the same ping-pong without Netty)
 * as the RDMA floor. A request is {@code size} bytes, the server's handler writes back what it reads (Netty's
 * EchoServerHandler), a request is done when {@code size} bytes are back.
 * <ul>
 *   <li>latency: one connection, one request at a time; p50 and p99 of {@code iterations} round trips after a warm-up</li>
 *   <li>rate: {@code connections} connections with {@code depth} requests outstanding each, for {@code seconds}:
 *       requests per second, and the process's CPU over that time (both sides are in this process)</li>
 * </ul>
 */
public final class NettyBench {
    /**
     * What one run measures.
     *
     * @param size        the request (and echo) size in bytes
     * @param iterations  round trips measured for the latency figures
     * @param warmup      round trips before those, not measured
     * @param connections connections of the rate phase
     * @param depth       requests outstanding per connection in the rate phase
     * @param seconds     how long the rate phase runs
     * @param serverHost  the address the servers bind
     * @param clientHost  the address the RDMA clients bind (their own soft device), or null
     * @param transports  which to run, in order: {@code udp}, {@code nio}, {@code epoll}, {@code jrdma}, {@code endpoint},
     *                    {@code send_lat}
     */
    public record Options(
            int size,
            int iterations,
            int warmup,
            int connections,
            int depth,
            double seconds,
            String serverHost,
            String clientHost,
            List<String> transports) {
        /**
         * {@return 64-byte requests, 5000 round trips after 1000 of warm-up, 4 connections x 8 in flight for 5 s, server
         * on 127.0.0.1 and RDMA clients on 127.0.0.2, every transport}
         */
        public static Options defaults() {
            return new Options(
                    64,
                    5000,
                    1000,
                    4,
                    8,
                    5,
                    "127.0.0.1",
                    "127.0.0.2",
                    List.of("udp", "nio", "epoll", "jrdma", "endpoint", "send_lat"));
        }
    }

    /**
     * One transport's figures; a NaN is a figure that transport does not measure.
     *
     * @param transport       what ran, e.g. {@code Netty NIO, TCP loopback}
     * @param p50Us           the median round trip, in microseconds
     * @param p99Us           the 99th-percentile round trip, in microseconds
     * @param rate            requests per second of the rate phase
     * @param cpuPercent      the process's CPU in the rate phase, in percent of one core (client and server together)
     * @param cpuUsPerRequest CPU microseconds per request in the rate phase
     * @param note            why figures are missing (e.g. {@code latency only}), or empty
     */
    public record Row(
            String transport,
            double p50Us,
            double p99Us,
            double rate,
            double cpuPercent,
            double cpuUsPerRequest,
            String note) {}

    private final Options o;
    private final PrintStream log;

    /**
     * A benchmark with its options.
     *
     * @param o   what to measure
     * @param log where progress lines are printed
     */
    public NettyBench(Options o, PrintStream log) {
        this.o = o;
        this.log = log;
    }

    /**
     * Runs every transport of the options in turn, server and client in this process.
     *
     * @return a row per transport, in order (a row with a note for epoll when it is not available)
     * @throws IllegalArgumentException when a transport's name is unknown
     * @throws Exception                when a run fails (a Netty bind or connect, a jrdma connection, a timeout)
     */
    public List<Row> run() throws Exception {
        List<Row> rows = new ArrayList<>();
        for (String t : o.transports()) {
            log.printf("-- %s%n", t);
            rows.add(
                    switch (t) {
                        case "nio" ->
                            nettyRun(
                                    "Netty NIO, TCP loopback",
                                    () -> new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory()),
                                    NioServerSocketChannel.class,
                                    NioSocketChannel.class,
                                    false);
                        case "epoll" ->
                            Epoll.isAvailable()
                                    ? nettyRun(
                                            "Netty epoll, TCP loopback",
                                            () -> new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory()),
                                            EpollServerSocketChannel.class,
                                            EpollSocketChannel.class,
                                            false)
                                    : new Row(
                                            "Netty epoll",
                                            Double.NaN,
                                            Double.NaN,
                                            Double.NaN,
                                            Double.NaN,
                                            Double.NaN,
                                            "not available: " + Epoll.unavailabilityCause());
                        case "jrdma" ->
                            nettyRun(
                                    "Netty jrdma (RdmaChannel)",
                                    () -> new RdmaEventLoopGroup(1),
                                    RdmaServerChannel.class,
                                    RdmaChannel.class,
                                    true);
                        case "endpoint" -> endpointRun();
                        case "send_lat" -> sendLatRun();
                        case "udp" -> udpRun();
                        default ->
                            throw new IllegalArgumentException(
                                    "unknown transport '" + t + "': use udp, nio, epoll, jrdma, endpoint, send_lat");
                    });
        }
        return rows;
    }

    // ---- Netty ----------------------------------------------------------------------------------------------

    @ChannelHandler.Sharable
    static final class EchoServerHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /**
     * Keeps {@code depth} requests in flight (1: ping-pong), counts completed requests, and records round-trip
     * times into a preallocated array while {@code record} is set. Event loop only, except the volatile counters.
     */
    static final class EchoClient extends ChannelInboundHandlerAdapter {
        private final int size, depth;
        private final long[] sendTimes;
        final long[] rtts;
        private int rttCount, head, tail;
        private long pendingBytes;
        volatile boolean record, stop;
        final AtomicLong completed = new AtomicLong();
        final CompletableFuture<Void> active = new CompletableFuture<>();
        final CompletableFuture<Void> recorded = new CompletableFuture<>();
        private ChannelHandlerContext ctx;

        EchoClient(int size, int depth, int maxRtts) {
            this.size = size;
            this.depth = depth;
            this.sendTimes = new long[Math.max(depth, 1) + 1];
            this.rtts = new long[maxRtts];
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            this.ctx = ctx;
            for (int i = 0; i < depth; i++) send();
            ctx.flush();
            active.complete(null);
        }

        private void send() {
            ByteBuf b = ctx.alloc().directBuffer(size);
            b.writerIndex(size); // the content does not matter to an echo; its length does
            sendTimes[tail] = System.nanoTime();
            tail = (tail + 1) % sendTimes.length;
            ctx.write(b);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            pendingBytes += b.readableBytes();
            b.release();
            boolean sent = false;
            while (pendingBytes >= size) {
                pendingBytes -= size;
                long rtt = System.nanoTime() - sendTimes[head];
                head = (head + 1) % sendTimes.length;
                completed.incrementAndGet();
                if (record && rttCount < rtts.length) {
                    rtts[rttCount++] = rtt;
                    if (rttCount == rtts.length) recorded.complete(null);
                }
                if (!stop) {
                    send();
                    sent = true;
                }
            }
            if (sent) ctx.flush();
        }

        int rttCount() {
            return rttCount;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            active.completeExceptionally(cause);
            recorded.completeExceptionally(cause);
            ctx.close();
        }
    }

    private Row nettyRun(
            String name,
            java.util.function.Supplier<EventLoopGroup> groups,
            Class<? extends ServerChannel> serverClass,
            Class<? extends Channel> clientClass,
            boolean rdma)
            throws Exception {
        EventLoopGroup serverGroup = groups.get(), clientGroup = groups.get();
        EndpointConfig cfg = RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder()
                .timeout(Duration.ofSeconds(30))
                .build();
        try {
            ServerBootstrap sb = new ServerBootstrap()
                    .group(serverGroup)
                    .channel(serverClass)
                    .childHandler(new EchoServerHandler());
            Bootstrap cb = new Bootstrap().group(clientGroup).channel(clientClass);
            if (rdma) {
                sb.option(RdmaChannelOption.ENDPOINT_CONFIG, cfg);
                cb.option(RdmaChannelOption.ENDPOINT_CONFIG, cfg);
            } else {
                sb.childOption(ChannelOption.TCP_NODELAY, true);
                cb.option(ChannelOption.TCP_NODELAY, true);
            }
            Channel server = sb.bind(o.serverHost(), 0).sync().channel();
            int port = ((InetSocketAddress) server.localAddress()).getPort();
            InetSocketAddress remote = new InetSocketAddress(o.serverHost(), port);
            // on the software device each side uses its own address (its own device), as two hosts would
            InetSocketAddress local = rdma && o.clientHost() != null ? new InetSocketAddress(o.clientHost(), 0) : null;
            try {
                // latency: one connection, ping-pong
                EchoClient ping = new EchoClient(o.size(), 1, o.iterations());
                Channel c = connect(cb, ping, remote, local);
                ping.active.get(30, TimeUnit.SECONDS);
                waitFor(() -> ping.completed.get() >= o.warmup(), 60);
                ping.record = true;
                ping.recorded.get(120, TimeUnit.SECONDS);
                ping.stop = true;
                c.close().sync();
                long[] rtt = Arrays.copyOf(ping.rtts, ping.rttCount());
                Arrays.sort(rtt);
                // rate: several connections, several requests in flight each
                List<EchoClient> clients = new ArrayList<>();
                List<Channel> channels = new ArrayList<>();
                for (int i = 0; i < o.connections(); i++) {
                    EchoClient h = new EchoClient(o.size(), o.depth(), 1);
                    channels.add(connect(cb, h, remote, local));
                    h.active.get(30, TimeUnit.SECONDS);
                    clients.add(h);
                }
                Thread.sleep(300); // warm
                long before = sum(clients);
                CpuMeter cpu = new CpuMeter().start();
                Thread.sleep((long) (o.seconds() * 1000));
                long done = sum(clients) - before;
                cpu.stop();
                for (EchoClient h : clients) h.stop = true;
                for (Channel ch : channels) ch.close().sync();
                double rate = done / (cpu.wallNs() / 1e9);
                Row r = new Row(
                        name,
                        pct(rtt, 50),
                        pct(rtt, 99),
                        rate,
                        cpu.percent(),
                        done == 0 ? Double.NaN : cpu.cpuNs() / 1e3 / done,
                        "");
                log.printf(
                        Locale.ROOT,
                        "   p50 %.1f us, p99 %.1f us, %.0f req/s, CPU %.0f%%%n",
                        r.p50Us(),
                        r.p99Us(),
                        r.rate(),
                        r.cpuPercent());
                return r;
            } finally {
                server.close().sync();
            }
        } finally {
            clientGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
            serverGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static Channel connect(Bootstrap cb, EchoClient h, InetSocketAddress remote, InetSocketAddress local)
            throws InterruptedException {
        Bootstrap b = cb.clone().handler(h);
        return (local != null ? b.connect(remote, local) : b.connect(remote))
                .sync()
                .channel();
    }

    private static long sum(List<EchoClient> clients) {
        long s = 0;
        for (EchoClient c : clients) s += c.completed.get();
        return s;
    }

    private static void waitFor(java.util.function.BooleanSupplier cond, int seconds) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end)
                throw new IllegalStateException("the warm-up did not finish within " + seconds + " s");
            Thread.sleep(5);
        }
    }

    // ---- the floor: jrdma-connect without Netty --------------------------------------------------------------

    private Row endpointRun() throws Exception {
        EndpointConfig cfg = RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder()
                .timeout(Duration.ofSeconds(30))
                .build();
        try (ServerEndpoint server = ServerEndpoint.bind(new InetSocketAddress(o.serverHost(), 0), cfg)) {
            CompletableFuture<Endpoint> accepted = new CompletableFuture<>();
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    Endpoint ep = server.accept();
                    ep.onReceive(m -> ep.send(m.bytes())); // echo on the completion thread
                    accepted.complete(ep);
                } catch (Exception e) {
                    accepted.completeExceptionally(e);
                }
            });
            EndpointConfig clientCfg = o.clientHost() != null
                    ? cfg.toBuilder().localAddress(o.clientHost()).build()
                    : cfg;
            try (Endpoint ep = Endpoint.connect(o.serverHost(), server.port(), clientCfg)) {
                accepted.get(30, TimeUnit.SECONDS);
                byte[] msg = new byte[o.size()];
                for (int i = 0; i < o.warmup(); i++) {
                    ep.send(msg);
                    ep.receive(Duration.ofSeconds(30));
                }
                long[] rtt = new long[o.iterations()];
                for (int i = 0; i < rtt.length; i++) {
                    long t0 = System.nanoTime();
                    ep.send(msg);
                    ep.receive(Duration.ofSeconds(30));
                    rtt[i] = System.nanoTime() - t0;
                }
                Arrays.sort(rtt);
                Row r = new Row(
                        "jrdma-connect Endpoint, no Netty",
                        pct(rtt, 50),
                        pct(rtt, 99),
                        Double.NaN,
                        Double.NaN,
                        Double.NaN,
                        "latency only");
                log.printf(Locale.ROOT, "   p50 %.1f us, p99 %.1f us%n", r.p50Us(), r.p99Us());
                return r;
            } finally {
                if (accepted.isDone() && !accepted.isCompletedExceptionally())
                    accepted.join().close();
            }
        }
    }

    // ---- the verbs beneath: jrdma perf send_lat on the same devices ----------------------------------------------

    /**
     * {@code jrdma perf send_lat} of the same size between the same two addresses' devices, server and client in this
     * process: the verbs under the Endpoint. Its figures are perftest's, one way (half a round trip): t_typical as p50,
     * and the 99th percentile.
     */
    private Row sendLatRun() throws Exception {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String client = o.clientHost() != null ? o.clientHost() : o.serverHost();
        String n = Integer.toString(Math.max(5, o.iterations())), size = Integer.toString(o.size());
        dev.jrdma.bench.PerfOptions server = dev.jrdma.bench.PerfOptions.parse(
                "send_lat", "-d", "soft@" + o.serverHost(), "-p", "" + port, "-s", size, "-n", n, "--timeout", "30");
        dev.jrdma.bench.PerfOptions clientSide = dev.jrdma.bench.PerfOptions.parse(
                "send_lat",
                "-d",
                "soft@" + client,
                "-p",
                "" + port,
                "-s",
                size,
                "-n",
                n,
                "--timeout",
                "30",
                o.serverHost());
        PrintStream sink = new PrintStream(java.io.OutputStream.nullOutputStream());
        CompletableFuture<dev.jrdma.bench.RunResult> serverRun =
                CompletableFuture.supplyAsync(() -> dev.jrdma.bench.RdmaBench.run(server, sink));
        dev.jrdma.bench.RunResult r = null;
        for (int attempt = 0; r == null; attempt++) {
            try {
                r = dev.jrdma.bench.RdmaBench.run(clientSide, sink);
            } catch (RuntimeException e) {
                if (attempt >= 50 || serverRun.isDone()) throw e; // the server is not listening yet: again
                Thread.sleep(100);
            }
        }
        serverRun.get(60, TimeUnit.SECONDS);
        dev.jrdma.bench.LatencyResult lat = r.latency().get(0);
        Row row = new Row(
                "jrdma perf send_lat (one way)",
                lat.tTypical(),
                lat.p99(),
                Double.NaN,
                Double.NaN,
                Double.NaN,
                "latency only");
        log.printf(Locale.ROOT, "   t_typical %.2f us, p99 %.2f us%n", row.p50Us(), row.p99Us());
        return row;
    }

    // ---- the software device's floor: raw UDP datagrams --------------------------------------------------------

    /** The same ping-pong as datagrams between the two addresses: what the software device's packets cost at least. */
    private Row udpRun() throws Exception {
        try (java.nio.channels.DatagramChannel server = java.nio.channels.DatagramChannel.open();
                java.nio.channels.DatagramChannel client = java.nio.channels.DatagramChannel.open()) {
            server.bind(new InetSocketAddress(o.serverHost(), 0));
            client.bind(new InetSocketAddress(o.clientHost() != null ? o.clientHost() : o.serverHost(), 0));
            client.connect(server.getLocalAddress());
            Thread echo = Thread.ofPlatform().daemon().name("udp-echo").start(() -> {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(65536);
                try {
                    while (true) {
                        b.clear();
                        java.net.SocketAddress from = server.receive(b);
                        b.flip();
                        server.send(b, from);
                    }
                } catch (java.io.IOException e) {
                    // closed: the run is over
                }
            });
            java.nio.ByteBuffer tx = java.nio.ByteBuffer.allocateDirect(o.size()),
                    rx = java.nio.ByteBuffer.allocateDirect(65536);
            long[] rtt = new long[o.iterations()];
            for (int i = -o.warmup(); i < rtt.length; i++) {
                long t0 = System.nanoTime();
                tx.clear();
                client.write(tx);
                rx.clear();
                client.read(rx); // loopback drops nothing at one datagram in flight
                if (i >= 0) rtt[i] = System.nanoTime() - t0;
            }
            server.close();
            echo.join(1000);
            Arrays.sort(rtt);
            Row r = new Row(
                    "raw UDP datagrams (soft floor)",
                    pct(rtt, 50),
                    pct(rtt, 99),
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    "latency only");
            log.printf(Locale.ROOT, "   p50 %.1f us, p99 %.1f us%n", r.p50Us(), r.p99Us());
            return r;
        }
    }

    static double pct(long[] sorted, int p) {
        if (sorted.length == 0) return Double.NaN;
        return sorted[Math.min(sorted.length - 1, (int) ((long) sorted.length * p / 100))] / 1e3;
    }

    // ---- the table ------------------------------------------------------------------------------------------

    /**
     * The table, with latency also divided by the raw UDP floor and by NIO's (the TCP floor) and the rate by NIO's,
     * each measured in the same run ("-" when that floor was not measured).
     *
     * @param rows the rows of {@link #run()}
     * @param o    the options they were measured with (for the header line)
     * @return the table, a header line and a line per row
     */
    public static String table(List<Row> rows, Options o) {
        Row nio = rows.stream()
                .filter(r -> r.transport().startsWith("Netty NIO"))
                .findFirst()
                .orElse(null);
        Row udp = rows.stream()
                .filter(r -> r.transport().startsWith("raw UDP"))
                .findFirst()
                .orElse(null);
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(
                Locale.ROOT,
                "echo of %d B; latency: 1 connection, %d round trips; rate: %d connections x %d in flight, %.0f s%n",
                o.size(),
                o.iterations(),
                o.connections(),
                o.depth(),
                o.seconds()));
        sb.append(String.format(
                Locale.ROOT,
                "%-34s %9s %9s %10s %8s %11s %9s %9s %9s%n",
                "transport",
                "p50 [us]",
                "p99 [us]",
                "req/s",
                "CPU [%]",
                "CPU/req[us]",
                "p50 xUDP",
                "p50 xNIO",
                "req xNIO"));
        for (Row r : rows) {
            sb.append(String.format(
                    Locale.ROOT,
                    "%-34s %9s %9s %10s %8s %11s %9s %9s %9s%s%n",
                    r.transport(),
                    f(r.p50Us(), 1),
                    f(r.p99Us(), 1),
                    f(r.rate(), 0),
                    f(r.cpuPercent(), 0),
                    f(r.cpuUsPerRequest(), 1),
                    udp == null ? "-" : f(r.p50Us() / udp.p50Us(), 2),
                    nio == null ? "-" : f(r.p50Us() / nio.p50Us(), 2),
                    nio == null ? "-" : f(r.rate() / nio.rate(), 3),
                    r.note().isEmpty() ? "" : "  (" + r.note() + ")"));
        }
        return sb.toString();
    }

    static String f(double v, int decimals) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
