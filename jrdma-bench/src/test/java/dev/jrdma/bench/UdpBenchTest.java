package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The UDP floor between two threads on loopback: real sockets, real datagrams, the payload checked on both sides. */
class UdpBenchTest {
    static Loopback.Outcome<RunResult> pair(String... flags) throws Exception {
        int port = Loopback.freePort();
        String[] s = SoftRdmaBenchTest.concat(flags, new String[] {"-p", "" + port, "--accept-timeout", "20"});
        String[] c = SoftRdmaBenchTest.concat(flags, new String[] {"-p", "" + port, "127.0.0.1"});
        PerfOptions so = PerfOptions.parse(s), co = PerfOptions.parse(c);
        return Loopback.run(out -> UdpBench.run(so, out), out -> UdpBench.run(co, out), 60);
    }

    @Test
    @Timeout(60)
    void latencyPingPongReportsPerftestColumns() throws Exception {
        var o = pair("udp_lat", "-n", "500", "-s", "64");
        LatencyResult r = o.client().latency().getFirst();
        assertEquals(64, r.size());
        assertEquals(500, r.iters());
        assertTrue(r.tMin() > 0 && r.tMin() <= r.tTypical() && r.tTypical() <= r.tMax(), r.toString());
        assertEquals("udp", o.client().device());
        assertTrue(o.clientOut().contains(Report.LAT_HEADER), o.clientOut());
        assertTrue(o.clientOut().contains(Report.latLine(r)), o.clientOut());
        assertTrue(o.clientOut().contains("UDP datagram Latency Test (client)"), o.clientOut());
        // the server echoed every ping (and any ping resent after a drop)
        assertTrue(o.server().latency().getFirst().iters() >= 500, o.serverOut());
    }

    @Test
    @Timeout(60)
    void allSizesStopAtTheLargestDatagram() throws Exception {
        var o = pair("udp_lat", "-a", "-n", "20");
        List<Long> sizes = new ArrayList<>();
        for (LatencyResult r : o.client().latency()) sizes.add(r.size());
        List<Long> want = new ArrayList<>();
        for (int i = 1; i <= 15; i++) want.add(1L << i); // 2 .. 32768: 65536 does not fit in a datagram
        assertEquals(want, sizes);
    }

    @Test
    @Timeout(60)
    void streamCountsWhatArrivedAt4KiBByDefault() throws Exception {
        var o = pair("udp_bw", "-n", "3000");
        BwResult c = o.client().bandwidth().getFirst(),
                s = o.server().bandwidth().getFirst();
        assertEquals(4096, c.size());
        assertEquals(s.iters(), c.iters(), "the client reports the datagrams the server received");
        assertTrue(c.iters() > 0 && c.iters() <= 3000, c.toString());
        if (c.iters() < 3000) assertTrue(o.clientOut().contains("were dropped"), o.clientOut());
        assertTrue(c.bwAvgMBs() > 0 && c.msgRateMpps() > 0, c.toString());
        assertTrue(o.clientOut().contains(Report.BW_HEADER), o.clientOut());
        assertTrue(o.clientOut().contains(Report.bwLine(c, false)), o.clientOut());
        // the 2 s warm-up ran first; only the timed run is reported, on both sides
        assertTrue(
                o.clientOut().matches("(?s).* Warm-up         : [0-9]+ datagrams arrived, 2000.0 ms\n.*"),
                o.clientOut());
        assertEquals(1, o.server().bandwidth().size(), o.serverOut());
        assertEquals(1, o.client().bandwidth().size(), o.clientOut());
    }

    @Test
    @Timeout(60)
    void durationModeAtMessageRateSize() throws Exception {
        var o = pair("udp_bw", "-D", "1", "-s", "64");
        BwResult c = o.client().bandwidth().getFirst();
        assertEquals(64, c.size());
        assertTrue(c.iters() > 0);
        assertEquals(c.iters(), o.server().bandwidth().getFirst().iters());
    }

    @Test
    @Timeout(30)
    void aCorruptedEchoFailsTheRun() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            // a server that speaks the protocol but flips the last byte of every echo
            CompletableFuture<Void> liar = CompletableFuture.runAsync(() -> {
                try (Socket ctl = ss.accept();
                        DatagramChannel udp = DatagramChannel.open()) {
                    DataInputStream in = new DataInputStream(ctl.getInputStream());
                    DataOutputStream out = new DataOutputStream(ctl.getOutputStream());
                    in.readFully(new byte[8]);
                    in.readInt();
                    int clientPort = in.readInt();
                    udp.bind(new InetSocketAddress(ctl.getLocalAddress(), 0));
                    udp.connect(new InetSocketAddress(ctl.getInetAddress(), clientPort));
                    out.writeInt(((InetSocketAddress) udp.getLocalAddress()).getPort());
                    in.readInt();
                    in.readLong();
                    in.readLong();
                    out.writeByte(1);
                    out.flush();
                    ByteBuffer b = ByteBuffer.allocate(100);
                    udp.configureBlocking(true);
                    udp.socket().setSoTimeout(5000);
                    b.clear();
                    int n = udp.read(b);
                    b.put(n - 1, (byte) (b.get(n - 1) ^ 0x40));
                    b.flip();
                    udp.write(b);
                    Thread.sleep(3000);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            PerfOptions co = PerfOptions.parse(
                    "udp_lat", "-s", "64", "-n", "100", "-p", "" + ss.getLocalPort(), "--timeout", "5", "127.0.0.1");
            BenchException e = assertThrows(
                    BenchException.class, () -> UdpBench.run(co, new PrintStream(new ByteArrayOutputStream())));
            assertTrue(e.getMessage().contains("differs from what was sent at byte 63"), e.getMessage());
            liar.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    @Timeout(30)
    void wrongTestOnTheServerIsAClearError() throws Exception {
        int port = Loopback.freePort();
        PerfOptions so = PerfOptions.parse("udp_bw", "-p", "" + port, "--accept-timeout", "10");
        PerfOptions co = PerfOptions.parse("udp_lat", "-p", "" + port, "--timeout", "3", "127.0.0.1");
        var s = CompletableFuture.supplyAsync(() -> {
            try {
                UdpBench.run(so, new PrintStream(new ByteArrayOutputStream()));
                return "ok";
            } catch (BenchException e) {
                return e.getMessage();
            }
        });
        assertThrows(BenchException.class, () -> UdpBench.run(co, new PrintStream(new ByteArrayOutputStream())));
        assertTrue(s.get(20, TimeUnit.SECONDS).contains("same test"));
    }
}
