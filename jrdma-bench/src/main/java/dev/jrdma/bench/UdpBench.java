package dev.jrdma.bench;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.PortUnreachableException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The floor under the software device: raw UDP datagrams between two processes, busy-polled (a connected,
 * non-blocking {@link DatagramChannel} spun on; no selector, no blocking call, no wakeup). The software device
 * carries RoCEv2 in UDP datagrams, so this is the least it can cost on the machine. {@code udp_lat}: ping-pong of
 * SIZE-byte datagrams, half a round trip reported (as send_lat and tcp_lat). {@code udp_bw}: a stream of SIZE-byte
 * datagrams (default 4096), BW and MsgRate of the datagrams that arrived (UDP has no flow control: what the receiver
 * could not take is dropped by the kernel, counted and reported as lost).
 *
 * <p>Protocol (jrdma's own): a TCP control connection on -p. The client sends "JRDMAUDP", the mode (0 latency,
 * 1 bandwidth) and its UDP port; the server answers with its UDP port (both on the control connection's addresses)
 * and both connect their datagram channels to each other. Per size the client sends a run header (size, iterations,
 * duration in ms) and waits for one ready byte; the datagrams flow; the client sends END (datagrams sent) on the
 * control connection, and the server, once its socket is drained, answers with its figures (datagrams received,
 * first-to-last ns, peak bytes/s, CPU ns, wall ns). A run header with size 0 ends the session. udp_bw's first run is
 * a warm-up of {@link PerfOptions#BW_WARMUP_NS}, marked by {@link PerfOptions#WARM_UP_RUN} in place of the iterations, that nobody
 * reports.
 *
 * <p>Each datagram carries its sequence number in its first min(8, SIZE) bytes (the low bytes of it when SIZE &lt; 8)
 * and a fixed pattern after that. The latency client matches every echo's sequence number; both sides compare the
 * whole payload against the pattern for the first datagram of a run and every 64th after it (a full compare of
 * every datagram would slow the floor down at large sizes), and a mismatch fails the run.
 */
public final class UdpBench {
    static final byte[] MAGIC = "JRDMAUDP".getBytes(StandardCharsets.US_ASCII);
    static final int MODE_LAT = 0, MODE_BW = 1;
    /** A ping whose echo has not come back in this time is sent again (loopback loses a datagram only under overload). */
    static final long RESEND_NS = 200_000_000L;
    /** Socket buffers asked for (the kernel caps them at net.core.rmem_max / wmem_max). */
    static final int SOCKET_BUFFER = 4 << 20;
    /** Payloads compared in full: the first of a run and every SAMPLE-th after it. */
    static final int SAMPLE = 64;

    private UdpBench() {}

    /** The server's view of one run, sent back to the client. */
    record ServerFigures(long received, long elapsedNs, double peakBytesPerSec, long cpuNs, long wallNs) {}

    /**
     * Runs the raw UDP floor ({@code udp_lat} or {@code udp_bw}), server or client as the options say; prints a
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
        try (Socket ctl = PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec);
                DatagramChannel udp = DatagramChannel.open()) {
            ctl.setTcpNoDelay(true);
            ctl.setSoTimeout(o.timeoutSec * 1000);
            DataInputStream in = new DataInputStream(ctl.getInputStream());
            DataOutputStream cout = new DataOutputStream(ctl.getOutputStream());
            openDatagrams(udp, ctl);
            cout.write(MAGIC);
            cout.writeInt(o.test.latency ? MODE_LAT : MODE_BW);
            cout.writeInt(((InetSocketAddress) udp.getLocalAddress()).getPort());
            cout.flush();
            udp.connect(new InetSocketAddress(ctl.getInetAddress(), in.readInt()));
            udp.configureBlocking(false);
            return clientRuns(o, out, udp, in, cout);
        } catch (SocketTimeoutException e) {
            throw new BenchException(
                    "no answer from the server for " + o.timeoutSec
                            + " s on the control connection: it stopped, or it is not a '" + o.test.id()
                            + "' server (run the same test on both sides)",
                    e);
        } catch (PortUnreachableException e) {
            throw new BenchException("the server's UDP port is closed (it stopped? see its output)", e);
        } catch (java.io.EOFException e) {
            throw new BenchException(
                    "the server closed the control connection (it failed, or runs another test: see its output)", e);
        } catch (IOException e) {
            throw new BenchException("UDP test with " + o.host + ":" + o.tcpPort + " failed: " + e.getMessage(), e);
        }
    }

    private static RunResult clientRuns(
            PerfOptions o, PrintStream out, DatagramChannel udp, DataInputStream in, DataOutputStream cout)
            throws IOException {
        PerfTest test = o.test;
        Progress progress = Progress.forTerminal(out, o.quiet);
        printHeader(out, o, "client");
        List<LatencyResult> lat = new ArrayList<>();
        List<BwResult> bw = new ArrayList<>();
        long cpuNs = 0, wallNs = 0;
        if (!test.latency && PerfOptions.warmUps()) {
            int size = o.runSizes().getFirst();
            startRun(in, cout, size, PerfOptions.WARM_UP_RUN, PerfOptions.BW_WARMUP_NS / 1_000_000);
            Datagrams d = new Datagrams(size);
            drain(udp, d.rx);
            ServerFigures w = endRun(in, cout, stream(udp, d, Long.MAX_VALUE, PerfOptions.BW_WARMUP_NS, o, progress));
            progress.clear();
            if (!o.quiet)
                out.printf(
                        " Warm-up         : %d datagrams arrived, %.1f ms%n",
                        w.received(), PerfOptions.BW_WARMUP_NS / 1e6);
        }
        out.println(test.latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
        for (int size : o.runSizes()) {
            startRun(in, cout, size, o.durationSec > 0 ? -1 : o.effectiveIters(), o.durationSec * 1000L);
            Datagrams d = new Datagrams(size);
            drain(udp, d.rx); // late echoes of an earlier run
            CpuMeter cpu = new CpuMeter().start();
            long start = System.nanoTime();
            Sent sent = test.latency
                    ? pingPong(udp, d, o, progress)
                    : stream(
                            udp,
                            d,
                            o.durationSec > 0 ? Long.MAX_VALUE : o.effectiveIters(),
                            o.durationSec * 1_000_000_000L,
                            o,
                            progress);
            ServerFigures f = endRun(in, cout, sent);
            long elapsed = System.nanoTime() - start;
            cpu.stop();
            progress.clear();
            if (test.latency) {
                LatencyResult r = LatencyResult.fromPostTimes(size, sent.postTimes, (int) sent.count, 2);
                out.println(Report.latLine(r));
                if (sent.resent > 0)
                    out.printf(
                            " (%d pings resent after %d ms without an echo: the datagram or its echo was dropped; those samples include the wait)%n",
                            sent.resent, RESEND_NS / 1_000_000);
                lat.add(r);
            } else {
                double peak = Math.max(f.peakBytesPerSec(), f.received() * (double) size / (elapsed / 1e9));
                BwResult r = BwResult.of(size, f.received(), elapsed, peak > 0 ? size / peak * 1e9 : 0);
                out.println(Report.bwLine(r, o.reportGbits));
                if (f.received() < sent.count)
                    out.printf(
                            " (%d of %d datagrams sent arrived, %d were dropped: the receiver fell behind; #iterations, BW and MsgRate count what arrived)%n",
                            f.received(), sent.count, sent.count - f.received());
                bw.add(r);
            }
            cpuNs += cpu.cpuNs();
            wallNs += cpu.wallNs();
        }
        cout.writeInt(0);
        cout.writeLong(0);
        cout.writeLong(0);
        cout.flush();
        out.println(Report.RESULT_LINE);
        return new RunResult(test, "udp", lat, bw, null, cpuNs, wallNs, null);
    }

    /** Sends a run header and waits for the server's ready byte. */
    private static void startRun(DataInputStream in, DataOutputStream cout, int size, long iters, long durationMs)
            throws IOException {
        cout.writeInt(size);
        cout.writeLong(iters);
        cout.writeLong(durationMs);
        cout.flush();
        if (in.readByte() != 1) throw new BenchException("the server refused the run (see its output)");
    }

    /** Tells the server what was sent and reads its figures. */
    private static ServerFigures endRun(DataInputStream in, DataOutputStream cout, Sent sent) throws IOException {
        cout.writeLong(sent.count);
        cout.flush();
        return new ServerFigures(in.readLong(), in.readLong(), in.readDouble(), in.readLong(), in.readLong());
    }

    /** What the client sent in one run. */
    private record Sent(long count, long[] postTimes, long resent) {}

    /** udp_lat's client: one datagram out, spin until its echo is back, as tcp_lat; post times as perftest keeps them. */
    private static Sent pingPong(DatagramChannel udp, Datagrams d, PerfOptions o, Progress progress)
            throws IOException {
        boolean timed = o.durationSec > 0;
        long iters = timed ? Long.MAX_VALUE : o.effectiveIters();
        long end = timed ? System.nanoTime() + o.durationSec * 1_000_000_000L : Long.MAX_VALUE;
        long timeoutNs = o.timeoutSec * 1_000_000_000L;
        long[] t = new long[timed ? 1 << 16 : (int) Math.min(iters, 50_000_000L)];
        long count = 0, resent = 0;
        while (count < iters) {
            long now = System.nanoTime();
            if (timed && now >= end) break;
            if (count == t.length) {
                if (t.length >= 50_000_000) break;
                t = Arrays.copyOf(t, (int) Math.min(50_000_000L, t.length * 2L));
            }
            t[(int) count] = now;
            d.stamp(count);
            send(udp, d.tx, timeoutNs);
            long nextResend = now + RESEND_NS;
            int empty = 0;
            while (true) {
                d.rx.clear();
                int n = udp.read(d.rx);
                if (n > 0) {
                    if (n == d.size && d.seqOf(d.rx) == d.seqBits(count)) break;
                    continue; // the echo of a resent ping, or a stray datagram
                }
                if ((++empty & 0x3ff) == 0) {
                    long now2 = System.nanoTime();
                    if (now2 - now > timeoutNs)
                        throw new BenchException("no echo from the server for " + o.timeoutSec + " s (udp_lat " + d.size
                                + " bytes, ping " + count + ")");
                    if (now2 > nextResend) {
                        send(udp, d.tx, timeoutNs);
                        resent++;
                        nextResend = now2 + RESEND_NS;
                    }
                }
            }
            if (count % SAMPLE == 0) d.check("the echo of ping ", count);
            count++;
            if ((count & 0x3ff) == 0 && progress.enabled())
                progress.update(String.format(" udp_lat %d bytes: %d%s", d.size, count, timed ? "" : "/" + iters));
        }
        return new Sent(count, t, resent);
    }

    /** udp_bw's client: {@code iters} datagrams (or for {@code durationNs} when above 0) as fast as the socket takes them. */
    private static Sent stream(
            DatagramChannel udp, Datagrams d, long iters, long durationNs, PerfOptions o, Progress progress)
            throws IOException {
        boolean timed = durationNs > 0;
        long end = timed ? System.nanoTime() + durationNs : Long.MAX_VALUE;
        long timeoutNs = o.timeoutSec * 1_000_000_000L;
        long count = 0;
        while (count < iters) {
            if (timed && (count & 0xff) == 0 && System.nanoTime() >= end) break;
            d.stamp(count);
            send(udp, d.tx, timeoutNs);
            count++;
            if ((count & 0xfff) == 0 && progress.enabled())
                progress.update(String.format(" udp_bw %d bytes: %d%s", d.size, count, timed ? "" : "/" + iters));
        }
        return new Sent(count, null, 0);
    }

    /** Sends {@code b} from 0 to its limit as one datagram, spinning while the socket's send buffer is full. */
    private static void send(DatagramChannel udp, ByteBuffer b, long timeoutNs) throws IOException {
        b.position(0);
        int empty = 0;
        long since = 0;
        while (udp.write(b) == 0) {
            if ((++empty & 0x3ff) == 0) {
                long now = System.nanoTime();
                if (since == 0) since = now;
                else if (now - since > timeoutNs)
                    throw new BenchException(
                            "the UDP socket took no datagram for " + timeoutNs / 1_000_000_000L + " s");
            }
        }
    }

    private static void drain(DatagramChannel udp, ByteBuffer rx) throws IOException {
        do rx.clear();
        while (udp.read(rx) > 0);
    }

    // ------------------------------------------------------------------ server

    static RunResult server(PerfOptions o, PrintStream out) {
        printHeader(out, o, "server");
        out.println(
                "\n************************************\n* Waiting for client to connect... *\n************************************");
        try (Socket ctl = PerftestWire.accept(o.tcpPort, o.acceptTimeoutSec, true);
                DatagramChannel udp = DatagramChannel.open()) {
            ctl.setTcpNoDelay(true);
            ctl.setSoTimeout(o.timeoutSec * 1000);
            DataInputStream in = new DataInputStream(ctl.getInputStream());
            DataOutputStream cout = new DataOutputStream(ctl.getOutputStream());
            byte[] magic = new byte[MAGIC.length];
            in.readFully(magic);
            if (!Arrays.equals(magic, MAGIC))
                throw new BenchException(
                        "the client is not a 'jrdma perf udp_*' client (is it another test? run the same test on both sides)");
            int mode = in.readInt();
            int clientPort = in.readInt();
            PerfTest test = mode == MODE_LAT ? PerfTest.UDP_LAT : PerfTest.UDP_BW;
            if (o.test != test)
                throw new BenchException("the client runs " + test.id() + ", this server " + o.test.id()
                        + ": run the same test on both sides");
            openDatagrams(udp, ctl);
            udp.connect(new InetSocketAddress(ctl.getInetAddress(), clientPort));
            udp.configureBlocking(false);
            cout.writeInt(((InetSocketAddress) udp.getLocalAddress()).getPort());
            cout.flush();
            return serverRuns(o, out, test, udp, ctl, in, cout);
        } catch (SocketTimeoutException e) {
            throw new BenchException(
                    "no data from the client for too long on the control connection: it stopped or the network dropped",
                    e);
        } catch (PortUnreachableException e) {
            throw new BenchException("the client's UDP port is closed (it stopped? see its output)", e);
        } catch (java.io.EOFException e) {
            throw new BenchException(
                    "the client closed the control connection in the middle of a run (it failed? see its output)", e);
        } catch (IOException e) {
            throw new BenchException("UDP server on port " + o.tcpPort + " failed: " + e.getMessage(), e);
        }
    }

    private static RunResult serverRuns(
            PerfOptions o,
            PrintStream out,
            PerfTest test,
            DatagramChannel udp,
            Socket ctl,
            DataInputStream in,
            DataOutputStream cout)
            throws IOException {
        out.println(test.latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
        List<LatencyResult> lat = new ArrayList<>();
        List<BwResult> bw = new ArrayList<>();
        long cpuNs = 0, wallNs = 0;
        SocketChannel control = ctl.getChannel();
        ByteBuffer endMsg = ByteBuffer.allocate(8);
        while (true) {
            ctl.setSoTimeout(Math.max(o.timeoutSec * 1000, 600_000)); // between runs the client may take its time
            int size = in.readInt();
            boolean warmUp = in.readLong() == PerfOptions.WARM_UP_RUN;
            in.readLong();
            if (size <= 0) break;
            if (size > PerfOptions.MAX_UDP_SIZE)
                throw new BenchException("client asked for " + size + " bytes, more than a UDP datagram holds");
            ctl.setSoTimeout(o.timeoutSec * 1000);
            Datagrams d = new Datagrams(size);
            drain(udp, d.rx);
            CpuMeter cpu = new CpuMeter().start();
            cout.writeByte(1);
            cout.flush();
            control.configureBlocking(false);
            endMsg.clear();
            long[] t = new long[1 << 12];
            int n = 0;
            long count = 0, first = 0, last = System.nanoTime(), winStart = 0, winBytes = 0, idleSince = last;
            long timeoutNs = o.timeoutSec * 1_000_000_000L;
            double peak = 0;
            boolean ended = false;
            int empty = 0;
            while (true) {
                d.rx.clear();
                int got = udp.read(d.rx);
                if (got <= 0) {
                    if (ended) break; // END came and the socket is drained
                    if ((++empty & 0xff) == 0) {
                        if (control.read(endMsg) < 0) throw new java.io.EOFException();
                        ended = !endMsg.hasRemaining();
                        if (System.nanoTime() - idleSince > timeoutNs)
                            throw new BenchException("no datagram from the client for " + o.timeoutSec + " s ("
                                    + test.id() + " " + size + " bytes)");
                    }
                    continue;
                }
                long now = System.nanoTime();
                idleSince = now;
                if (got != size) continue; // a late datagram of an earlier run
                if (count % SAMPLE == 0) d.check("datagram ", count);
                if (count == 0) {
                    first = now;
                    winStart = now;
                }
                if (test.latency) {
                    d.rx.flip();
                    send(udp, d.rx, timeoutNs);
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
            control.configureBlocking(true);
            cpu.stop();
            long sent = endMsg.flip().getLong();
            cout.writeLong(count);
            cout.writeLong(last - first);
            cout.writeDouble(peak);
            cout.writeLong(cpu.cpuNs());
            cout.writeLong(cpu.wallNs());
            cout.flush();
            if (warmUp) continue;
            cpuNs += cpu.cpuNs();
            wallNs += cpu.wallNs();
            if (test.latency) {
                if (n >= 4) {
                    LatencyResult r = LatencyResult.fromDeltas(size, count, t, n, 2);
                    out.println(Report.latLine(r));
                    lat.add(r);
                }
            } else {
                BwResult r = BwResult.of(size, count, last - first, peak > 0 ? size / peak * 1e9 : 0);
                out.println(Report.bwLine(r, o.reportGbits));
                if (count < sent)
                    out.printf(
                            " (%d of %d datagrams arrived, %d were dropped: this side fell behind)%n",
                            count, sent, sent - count);
                bw.add(r);
            }
        }
        out.println(Report.RESULT_LINE);
        return new RunResult(test, "udp", lat, bw, null, cpuNs, wallNs, null);
    }

    // ------------------------------------------------------------------ plumbing

    /** Binds the datagram channel to the control connection's local address (the path the peer reaches) and sizes its buffers. */
    private static void openDatagrams(DatagramChannel udp, Socket ctl) throws IOException {
        udp.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER);
        udp.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER);
        udp.bind(new InetSocketAddress(ctl.getLocalAddress(), 0));
    }

    static void printHeader(PrintStream out, PerfOptions o, String side) {
        out.println(Report.RESULT_LINE);
        out.println("                    " + o.test.title() + " (" + side + ")");
        out.printf(" TCP port        : %d (control; datagrams on a UDP port of the same address)%n", o.tcpPort);
        out.println(" Polling         : busy (non-blocking DatagramChannel, no selector)");
        if (o.isServer()) out.println(" Sizes and iterations: as the client asks");
        else if (o.durationSec > 0) out.printf(" Duration        : %d[s]%n", o.durationSec);
        else out.printf(" Iterations      : %d%n", o.effectiveIters());
        out.println(Report.RESULT_LINE);
    }

    /**
     * One run's datagram buffers (direct, so the channel copies nothing): {@code tx} holds the pattern with the
     * sequence number stamped in front; {@code rx} is one byte larger, so a datagram of another size shows as one.
     */
    static final class Datagrams {
        final int size;
        /** How many leading bytes carry the sequence number. */
        final int seqBytes;

        final ByteBuffer tx, rx;
        private final ByteBuffer txPattern, rxPattern;

        Datagrams(int size) {
            this.size = size;
            this.seqBytes = Math.min(8, size);
            tx = ByteBuffer.allocateDirect(size);
            rx = ByteBuffer.allocateDirect(size + 1);
            for (int k = 0; k < size; k++) tx.put(k, pattern(k));
            txPattern = tx.slice(seqBytes, size - seqBytes);
            rxPattern = rx.slice(seqBytes, size - seqBytes);
        }

        static byte pattern(int k) {
            return (byte) (k * 131 + 17);
        }

        /** The sequence number as the datagram can carry it (its low seqBytes bytes). */
        long seqBits(long seq) {
            return seqBytes == 8 ? seq : seq & ((1L << (8 * seqBytes)) - 1);
        }

        void stamp(long seq) {
            for (int k = 0; k < seqBytes; k++) tx.put(k, (byte) (seq >>> (8 * (seqBytes - 1 - k))));
        }

        long seqOf(ByteBuffer b) {
            long v = 0;
            for (int k = 0; k < seqBytes; k++) v = v << 8 | (b.get(k) & 0xff);
            return v;
        }

        /** Compares the received payload after the sequence number with the pattern; a difference fails the run (no allocation otherwise). */
        void check(String what, long n) {
            int at = rxPattern.mismatch(txPattern);
            if (at >= 0)
                throw new BenchException(what + n + " differs from what was sent at byte " + (seqBytes + at) + " of "
                        + size + ": 0x" + Integer.toHexString(rx.get(seqBytes + at) & 0xff) + " instead of 0x"
                        + Integer.toHexString(pattern(seqBytes + at) & 0xff));
        }
    }
}
