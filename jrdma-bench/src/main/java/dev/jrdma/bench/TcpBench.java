package dev.jrdma.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The socket baseline: {@code tcp_lat} is a ping-pong of SIZE bytes (half round trip reported, as send_lat),
 * {@code tcp_bw} streams SIZE-byte messages and counts what arrived. Same flags, same report columns.
 * {@code tcp_lat --busy-poll} spins on a non-blocking socket channel instead of blocking in read (no wakeups).
 *
 * <p>Protocol (jrdma's own, the TCP tests have no perftest counterpart): the client sends "JRDMATCP", the test
 * (0 latency, 1 bandwidth, 2 latency busy-polled) and, per size, a run header (size, iterations, duration in ms); a message whose first
 * byte is {@link #END} ends a run; the server answers it with its figures (messages, first-to-last ns, peak bytes/s,
 * CPU ns, wall ns). A run header with size 0 ends the session. tcp_bw's first run is a warm-up of
 * {@link PerfOptions#BW_WARMUP_NS}, marked by {@link PerfOptions#WARM_UP_RUN} in place of the iterations, that nobody reports.
 */
public final class TcpBench {
    static final byte[] MAGIC = "JRDMATCP".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    static final byte END = (byte) 0xE5;
    static final int MODE_LAT = 0, MODE_BW = 1, MODE_LAT_BUSY_POLL = 2;

    private TcpBench() {}

    /** The server's view of one run, sent back to the client. */
    record ServerFigures(long messages, long elapsedNs, double peakBytesPerSec, long cpuNs, long wallNs) {}

    /**
     * Runs the TCP baseline ({@code tcp_lat} or {@code tcp_bw}), server or client as the options say; prints a
     * perftest-style report to {@code out}.
     *
     * @param o   the options (a host: client; none: server)
     * @param out where the report goes
     * @return what was measured
     * @throws BenchException when the peer cannot be reached, fails or stalls beyond the timeout
     */
    public static RunResult run(PerfOptions o, PrintStream out) {
        return o.isServer() ? server(o, out) : client(o, out);
    }

    // ------------------------------------------------------------------ client

    static RunResult client(PerfOptions o, PrintStream out) {
        try (Socket s = PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec, o.busyPoll)) {
            s.setTcpNoDelay(true);
            s.setSoTimeout(o.timeoutSec * 1000 + o.durationSec * 1000);
            return clientOn(new StreamChan(s), o, out);
        } catch (SocketTimeoutException e) {
            throw new BenchException(
                    "no data from the server for " + o.timeoutSec
                            + " s: it stopped or the network dropped (tcp test with " + o.host + ")",
                    e);
        } catch (IOException e) {
            throw new BenchException("TCP test with " + o.host + ":" + o.tcpPort + " failed: " + e.getMessage(), e);
        }
    }

    private static RunResult clientOn(Chan ch, PerfOptions o, PrintStream out) throws IOException {
        Progress progress = Progress.forTerminal(out, o.quiet);
        PerfTest test = o.test;
        printHeader(out, o, "client");
        int mode = !test.latency ? MODE_BW : o.busyPoll ? MODE_LAT_BUSY_POLL : MODE_LAT;
        ByteBuffer hdr = ByteBuffer.allocate(12).put(MAGIC).putInt(mode).flip();
        writeFully(ch, hdr);
        if (o.busyPoll) ch = new SpinChan(ch.socket, o.timeoutSec * 1000 + o.durationSec * 1000);
        List<LatencyResult> lat = new ArrayList<>();
        List<BwResult> bw = new ArrayList<>();
        long cpuNs = 0, wallNs = 0;
        Watchdog dog = new Watchdog(ch, o.timeoutSec);
        try {
            if (!test.latency && PerfOptions.warmUps()) {
                int size = o.runSizes().getFirst();
                writeFully(
                        ch,
                        ByteBuffer.allocate(20)
                                .putInt(size)
                                .putLong(PerfOptions.WARM_UP_RUN)
                                .putLong(PerfOptions.BW_WARMUP_NS / 1_000_000)
                                .flip());
                BwResult w =
                        bwClient(ch, ch.allocate(size), size, Long.MAX_VALUE, PerfOptions.BW_WARMUP_NS, dog, progress);
                progress.clear();
                if (!o.quiet)
                    out.printf(" Warm-up         : %d messages, %.1f ms%n", w.iters(), PerfOptions.BW_WARMUP_NS / 1e6);
            }
            out.println(test.latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
            for (int size : o.runSizes()) {
                long iters = o.durationSec > 0 ? -1 : o.effectiveIters();
                writeFully(
                        ch,
                        ByteBuffer.allocate(20)
                                .putInt(size)
                                .putLong(iters)
                                .putLong(o.durationSec * 1000L)
                                .flip());
                ByteBuffer msg = ch.allocate(size);
                CpuMeter cpu = new CpuMeter().start();
                if (test.latency) {
                    LatencyResult r = latClient(ch, msg, size, o, dog, progress);
                    progress.clear();
                    out.println(Report.latLine(r));
                    lat.add(r);
                } else {
                    BwResult r = bwClient(
                            ch,
                            msg,
                            size,
                            o.durationSec > 0 ? Long.MAX_VALUE : o.effectiveIters(),
                            o.durationSec * 1_000_000_000L,
                            dog,
                            progress);
                    progress.clear();
                    out.println(Report.bwLine(r, o.reportGbits));
                    bw.add(r);
                }
                cpu.stop();
                cpuNs += cpu.cpuNs();
                wallNs += cpu.wallNs();
            }
            writeFully(
                    ch, ByteBuffer.allocate(20).putInt(0).putLong(0).putLong(0).flip());
        } finally {
            dog.close();
        }
        out.println(Report.RESULT_LINE);
        return new RunResult(test, o.busyPoll ? "tcp busy-poll" : "tcp", lat, bw, null, cpuNs, wallNs, null);
    }

    private static LatencyResult latClient(
            Chan ch, ByteBuffer msg, int size, PerfOptions o, Watchdog dog, Progress progress) throws IOException {
        boolean timed = o.durationSec > 0;
        long iters = timed ? Long.MAX_VALUE : o.effectiveIters();
        long end = timed ? System.nanoTime() + o.durationSec * 1_000_000_000L : Long.MAX_VALUE;
        long[] t = new long[timed ? 1 << 16 : (int) Math.min(iters, 50_000_000L)];
        long[] deltas = timed ? t : null;
        int n = 0;
        long count = 0, prev = 0;
        while (count < iters) {
            long now = System.nanoTime();
            if (timed) {
                if (now >= end) break;
                if (count > 0) {
                    if (n == t.length && t.length < 50_000_000) {
                        t = Arrays.copyOf(t, t.length * 2);
                        deltas = t;
                    }
                    if (n < t.length) t[n++] = now - prev;
                }
                prev = now;
            } else {
                t[(int) count] = now;
            }
            msg.clear();
            msg.put(0, (byte) 0);
            byte stamp = (byte) count;
            if (size > 1) msg.put(size - 1, stamp); // the echo must bring it back: the server returns the bytes it read
            writeFully(ch, msg);
            msg.clear();
            readFully(ch, msg);
            if (size > 1 && msg.get(size - 1) != stamp)
                throw new BenchException("tcp_lat: the echo of message " + count + " ends with 0x"
                        + Integer.toHexString(msg.get(size - 1) & 0xff) + ", not the 0x"
                        + Integer.toHexString(stamp & 0xff) + " sent");
            dog.progress();
            count++;
            if ((count & 0x3ff) == 0 && progress.enabled())
                progress.update(String.format(" tcp_lat %d bytes: %d%s", size, count, timed ? "" : "/" + iters));
        }
        finishRun(ch, msg);
        if (timed) return LatencyResult.fromDeltas(size, count, deltas, n, 2);
        return LatencyResult.fromPostTimes(size, t, (int) count, 2);
    }

    /** Streams {@code iters} messages, or for {@code durationNs} when that is above 0. */
    private static BwResult bwClient(
            Chan ch, ByteBuffer msg, int size, long iters, long durationNs, Watchdog dog, Progress progress)
            throws IOException {
        boolean timed = durationNs > 0;
        long start = System.nanoTime(), end = timed ? start + durationNs : Long.MAX_VALUE;
        long count = 0;
        while (count < iters) {
            if (timed && (count & 0xff) == 0 && System.nanoTime() >= end) break;
            msg.clear();
            msg.put(0, (byte) 0);
            writeFully(ch, msg);
            dog.progress();
            count++;
            if ((count & 0xfff) == 0)
                progress.update(String.format(" tcp_bw %d bytes: %d%s", size, count, timed ? "" : "/" + iters));
        }
        ServerFigures f = finishRun(ch, msg);
        long elapsed = System.nanoTime() - start;
        if (f.messages() != count)
            throw new BenchException(
                    "tcp_bw: the server counted " + f.messages() + " messages, the client sent " + count);
        double avgBps = size * (double) count / (elapsed / 1e9);
        double peak = Math.max(avgBps, f.peakBytesPerSec());
        double bestNsPerMsg = peak <= 0 ? 0 : size / peak * 1e9;
        return BwResult.of(size, count, elapsed, bestNsPerMsg);
    }

    /** Sends the end-of-run message and reads the server's figures. */
    private static ServerFigures finishRun(Chan ch, ByteBuffer msg) throws IOException {
        msg.clear();
        msg.put(0, END);
        writeFully(ch, msg);
        ByteBuffer f = ByteBuffer.allocate(40);
        readFully(ch, f);
        f.flip();
        return new ServerFigures(f.getLong(), f.getLong(), f.getDouble(), f.getLong(), f.getLong());
    }

    // ------------------------------------------------------------------ server

    static RunResult server(PerfOptions o, PrintStream out) {
        printHeader(out, o, "server");
        out.println(
                "\n************************************\n* Waiting for client to connect... *\n************************************");
        try (Socket s = PerftestWire.accept(o.tcpPort, o.acceptTimeoutSec, o.busyPoll)) {
            s.setTcpNoDelay(true);
            s.setSoTimeout(o.timeoutSec * 1000);
            return serverOn(new StreamChan(s), o, out);
        } catch (SocketTimeoutException e) {
            throw new BenchException("no data from the client for too long: it stopped or the network dropped", e);
        } catch (IOException e) {
            throw new BenchException("TCP server on port " + o.tcpPort + " failed: " + e.getMessage(), e);
        }
    }

    private static RunResult serverOn(Chan ch, PerfOptions o, PrintStream out) throws IOException {
        ByteBuffer hdr = ByteBuffer.allocate(12);
        Watchdog dog = new Watchdog(ch, o.timeoutSec);
        try {
            readFully(ch, hdr);
            hdr.flip();
            byte[] magic = new byte[8];
            hdr.get(magic);
            if (!Arrays.equals(magic, MAGIC))
                throw new BenchException(
                        "the client is not a 'jrdma perf tcp_*' client (is it an RDMA test? run the same test on both sides)");
            int mode = hdr.getInt();
            boolean latency = mode != MODE_BW, busyPoll = mode == MODE_LAT_BUSY_POLL;
            PerfTest test = latency ? PerfTest.TCP_LAT : PerfTest.TCP_BW;
            if (o.test != test)
                throw new BenchException("the client runs " + test.id() + ", this server " + o.test.id()
                        + ": run the same test on both sides");
            if (o.busyPoll != busyPoll)
                throw new BenchException(
                        "the client runs tcp_lat " + (busyPoll ? "with" : "without") + " --busy-poll, this server "
                                + (o.busyPoll ? "with" : "without") + ": give both sides the same flags");
            if (busyPoll) {
                ch = new SpinChan(ch.socket, o.timeoutSec * 1000);
                dog.close();
                dog = new Watchdog(ch, o.timeoutSec);
            }
            out.println(latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
            List<LatencyResult> lat = new ArrayList<>();
            List<BwResult> bw = new ArrayList<>();
            long cpuNs = 0, wallNs = 0;
            while (true) {
                ByteBuffer run = ByteBuffer.allocate(20);
                dog.idle(); // between runs the client may take its time
                readFully(ch, run);
                run.flip();
                int size = run.getInt();
                boolean warmUp = run.getLong() == PerfOptions.WARM_UP_RUN;
                long durMs = run.getLong();
                if (size <= 0) break;
                if (size > PerfOptions.MAX_SIZE)
                    throw new BenchException("client asked for " + size + " bytes, more than " + PerfOptions.MAX_SIZE);
                dog.armed(durMs);
                ByteBuffer msg = ch.allocate(size);
                CpuMeter cpu = new CpuMeter().start();
                long[] t = new long[1 << 12];
                int n = 0;
                long count = 0, first = 0, last = 0, winStart = 0, winBytes = 0;
                double peak = 0;
                while (true) {
                    msg.clear();
                    readFully(ch, msg);
                    long now = System.nanoTime();
                    dog.progress();
                    if (msg.get(0) == END) break;
                    if (count == 0) {
                        first = now;
                        winStart = now;
                    }
                    if (latency) {
                        msg.flip();
                        writeFully(ch, msg);
                        if (n == t.length && t.length < 50_000_000) t = Arrays.copyOf(t, t.length * 2);
                        if (count > 0 && n < t.length) t[n++] = now - last;
                    } else {
                        winBytes += size;
                        if (now - winStart >= 10_000_000L) {
                            peak = Math.max(peak, winBytes / ((now - winStart) / 1e9));
                            winStart = now;
                            winBytes = 0;
                        }
                    }
                    last = now;
                    count++;
                }
                cpu.stop();
                ByteBuffer f = ByteBuffer.allocate(40)
                        .putLong(count)
                        .putLong(last - first)
                        .putDouble(peak)
                        .putLong(cpu.cpuNs())
                        .putLong(cpu.wallNs())
                        .flip();
                writeFully(ch, f);
                if (warmUp) continue;
                cpuNs += cpu.cpuNs();
                wallNs += cpu.wallNs();
                if (latency) {
                    if (n >= 4) {
                        LatencyResult r = LatencyResult.fromDeltas(size, count, t, n, 2);
                        out.println(Report.latLine(r));
                        lat.add(r);
                    }
                } else {
                    BwResult r = BwResult.of(size, count, last - first, peak > 0 ? size / peak * 1e9 : 0);
                    out.println(Report.bwLine(r, o.reportGbits));
                    bw.add(r);
                }
            }
            out.println(Report.RESULT_LINE);
            return new RunResult(test, busyPoll ? "tcp busy-poll" : "tcp", lat, bw, null, cpuNs, wallNs, null);
        } finally {
            dog.close();
        }
    }

    // ------------------------------------------------------------------ plumbing

    static void printHeader(PrintStream out, PerfOptions o, String side) {
        out.println(Report.RESULT_LINE);
        out.println("                    " + o.test.title() + " (" + side + ")");
        out.printf(" TCP port        : %d%n", o.tcpPort);
        if (o.isServer()) out.println(" Sizes and iterations: as the client asks");
        else if (o.durationSec > 0) out.printf(" Duration        : %d[s]%n", o.durationSec);
        else out.printf(" Iterations      : %d%n", o.effectiveIters());
        out.println(Report.RESULT_LINE);
    }

    /** The connection a run uses: blocking streams, or (tcp_lat --busy-poll) a non-blocking channel spun on. */
    abstract static sealed class Chan permits StreamChan, SpinChan {
        final Socket socket;

        Chan(Socket socket) {
            this.socket = socket;
        }

        /** Writes all remaining bytes of {@code b}. */
        abstract void writeFully(ByteBuffer b) throws IOException;

        /** Fills {@code b}; a closed connection is a BenchException. */
        abstract void readFully(ByteBuffer b) throws IOException;

        /** The longest wait without progress. */
        abstract void timeout(int ms);

        /** A message buffer of the kind this connection moves without copying. */
        abstract ByteBuffer allocate(int size);

        static BenchException closedMidRun() {
            return new BenchException(
                    "the peer closed the TCP connection in the middle of a run (it failed? see its output)");
        }
    }

    /** The classic socket: blocking streams with SO_TIMEOUT, reusable byte arrays behind direct ByteBuffers. */
    static final class StreamChan extends Chan {
        final java.io.DataInputStream in;
        final java.io.OutputStream out;
        private byte[] scratch = new byte[64];

        StreamChan(Socket s) throws IOException {
            super(s);
            in = new java.io.DataInputStream(s.getInputStream());
            out = s.getOutputStream();
        }

        private byte[] scratch(int n) {
            if (scratch.length < n) scratch = new byte[n];
            return scratch;
        }

        @Override
        void writeFully(ByteBuffer b) throws IOException {
            int n = b.remaining();
            if (b.hasArray()) {
                out.write(b.array(), b.arrayOffset() + b.position(), n);
            } else {
                byte[] a = scratch(n);
                b.get(b.position(), a, 0, n);
                out.write(a, 0, n);
            }
            b.position(b.limit());
        }

        @Override
        void readFully(ByteBuffer b) throws IOException {
            int n = b.remaining();
            try {
                if (b.hasArray()) {
                    in.readFully(b.array(), b.arrayOffset() + b.position(), n);
                } else {
                    byte[] a = scratch(n);
                    in.readFully(a, 0, n);
                    b.put(b.position(), a, 0, n);
                }
            } catch (java.io.EOFException e) {
                throw closedMidRun();
            }
            b.position(b.limit());
        }

        @Override
        void timeout(int ms) {
            try {
                socket.setSoTimeout(ms);
            } catch (IOException ignored) {
            }
        }

        @Override
        ByteBuffer allocate(int size) {
            return ByteBuffer.allocate(size);
        }
    }

    /**
     * Busy-polling: the socket's channel in non-blocking mode, read and written in a spin loop (no blocking read,
     * no selector, no wakeup); the clock is read only every 1024 empty polls, for the timeout.
     */
    static final class SpinChan extends Chan {
        private final java.nio.channels.SocketChannel sc;
        private long timeoutNs;

        SpinChan(Socket s, int timeoutMs) throws IOException {
            super(s);
            sc = s.getChannel();
            if (sc == null)
                throw new IllegalStateException(
                        "busy-poll needs a channel socket (PerftestWire.connect/accept withChannel)");
            sc.configureBlocking(false);
            timeout(timeoutMs);
        }

        @Override
        void writeFully(ByteBuffer b) throws IOException {
            long idleSince = 0;
            int empty = 0;
            while (b.hasRemaining()) {
                if (sc.write(b) > 0) {
                    empty = 0;
                    idleSince = 0;
                } else if ((++empty & 0x3ff) == 0) {
                    idleSince = checkIdle(idleSince, "write");
                }
            }
        }

        @Override
        void readFully(ByteBuffer b) throws IOException {
            long idleSince = 0;
            int empty = 0;
            while (b.hasRemaining()) {
                int n = sc.read(b);
                if (n > 0) {
                    empty = 0;
                    idleSince = 0;
                } else if (n < 0) {
                    throw closedMidRun();
                } else if ((++empty & 0x3ff) == 0) {
                    idleSince = checkIdle(idleSince, "read");
                }
            }
        }

        private long checkIdle(long idleSince, String what) throws SocketTimeoutException {
            long now = System.nanoTime();
            if (idleSince == 0) return now;
            if (now - idleSince > timeoutNs)
                throw new SocketTimeoutException(
                        "busy-poll " + what + ": no progress for " + timeoutNs / 1_000_000 + " ms");
            return idleSince;
        }

        @Override
        void timeout(int ms) {
            timeoutNs = ms * 1_000_000L;
        }

        @Override
        ByteBuffer allocate(int size) {
            return ByteBuffer.allocateDirect(size);
        }
    }

    static void writeFully(Chan ch, ByteBuffer b) throws IOException {
        ch.writeFully(b);
    }

    static void readFully(Chan ch, ByteBuffer b) throws IOException {
        ch.readFully(b);
    }

    /** Read timeouts: normal during a run, long while the server waits for the client's next run. */
    static final class Watchdog implements AutoCloseable {
        private final Chan ch;
        private final int timeoutMs;

        Watchdog(Chan ch, int timeoutSec) {
            this.ch = ch;
            this.timeoutMs = timeoutSec * 1000;
        }

        void progress() {}

        void idle() {
            set(Math.max(timeoutMs, 600_000));
        }

        void armed(long durationMs) {
            set((int) Math.min(Integer.MAX_VALUE, timeoutMs + durationMs));
        }

        private void set(int ms) {
            ch.timeout(ms);
        }

        @Override
        public void close() {}
    }
}
