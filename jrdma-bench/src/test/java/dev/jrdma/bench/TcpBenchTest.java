package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class TcpBenchTest {
    static Loopback.Outcome<RunResult> pair(String... flags) throws Exception {
        int port = Loopback.freePort();
        String[] s = SoftRdmaBenchTest.concat(flags, new String[] {"-p", "" + port, "--accept-timeout", "20"});
        String[] c = SoftRdmaBenchTest.concat(flags, new String[] {"-p", "" + port, "127.0.0.1"});
        PerfOptions so = PerfOptions.parse(s), co = PerfOptions.parse(c);
        return Loopback.run(out -> TcpBench.run(so, out), out -> TcpBench.run(co, out), 60);
    }

    @Test
    @Timeout(60)
    void tcpLatency() throws Exception {
        var o = pair("tcp_lat", "-n", "500", "-s", "64");
        LatencyResult r = o.client().latency().getFirst();
        assertEquals(64, r.size());
        assertEquals(500, r.iters());
        assertTrue(r.tTypical() > 0 && r.tTypical() < 10_000, r.toString());
        assertTrue(o.clientOut().contains(Report.LAT_HEADER));
        assertEquals(1, o.server().latency().size(), o.serverOut());
    }

    @Test
    @Timeout(60)
    void tcpLatencyBusyPoll() throws Exception {
        // 100 round trips, not 500: both sides spin, and on 2 busy cores each round trip can wait for a time slice
        // (500 took 18 s of the 60 in the module run with 4 CPU hogs)
        var o = pair("tcp_lat", "--busy-poll", "-n", "100", "-s", "64");
        LatencyResult r = o.client().latency().getFirst();
        assertEquals(64, r.size());
        assertEquals(100, r.iters());
        assertEquals("tcp busy-poll", o.client().device());
        assertEquals("tcp busy-poll", o.server().device());
        assertTrue(o.clientOut().contains(Report.latLine(r)), o.clientOut());
        assertEquals(1, o.server().latency().size(), o.serverOut());
        var all = pair("tcp_lat", "--busy-poll", "-s", "4096", "-D", "1");
        assertTrue(all.client().latency().getFirst().iters() > 5);
    }

    @Test
    @Timeout(30)
    void busyPollOnOneSideOnlyIsAClearError() throws Exception {
        int port = Loopback.freePort();
        PerfOptions so = PerfOptions.parse("tcp_lat", "-p", "" + port, "--accept-timeout", "10");
        PerfOptions co = PerfOptions.parse("tcp_lat", "--busy-poll", "-p", "" + port, "--timeout", "3", "127.0.0.1");
        var s = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                TcpBench.run(so, new java.io.PrintStream(new java.io.ByteArrayOutputStream()));
                return "ok";
            } catch (BenchException e) {
                return e.getMessage();
            }
        });
        assertThrows(
                BenchException.class,
                () -> TcpBench.run(co, new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(s.get(20, java.util.concurrent.TimeUnit.SECONDS).contains("same flags"));
    }

    @Test
    @Timeout(60)
    void tcpBandwidthSeveralSizes() throws Exception {
        var o = pair("tcp_bw", "-n", "2000", "-s", "4096");
        BwResult r = o.client().bandwidth().getFirst();
        assertEquals(2000, r.iters());
        assertTrue(r.bwAvgMBs() > 0, r.toString());
        assertEquals(2000, o.server().bandwidth().getFirst().iters());
        assertTrue(o.clientOut().contains(Report.BW_HEADER));
        // the 2 s warm-up ran on the connection first; the server counted it, reported only the timed run
        assertTrue(
                o.clientOut().matches("(?s).* Warm-up         : [1-9][0-9]* messages, 2000.0 ms\n.*"), o.clientOut());
        assertEquals(1, o.server().bandwidth().size(), o.serverOut());
    }

    @Test
    @Timeout(60)
    void durationMode() throws Exception {
        var o = pair("tcp_bw", "-D", "1", "-s", "1024");
        long t = o.client().bandwidth().getFirst().iters();
        assertTrue(t > 0);
        assertEquals(t, o.server().bandwidth().getFirst().iters());
    }

    @Test
    @Timeout(30)
    void wrongTestOnTheServerIsAClearError() throws Exception {
        int port = Loopback.freePort();
        PerfOptions so = PerfOptions.parse("tcp_bw", "-p", "" + port, "--accept-timeout", "10");
        PerfOptions co = PerfOptions.parse("tcp_lat", "-p", "" + port, "--timeout", "3", "127.0.0.1");
        var ex = java.util.concurrent.Executors.newSingleThreadExecutor();
        var s = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                    try {
                        TcpBench.run(so, new java.io.PrintStream(new java.io.ByteArrayOutputStream()));
                        return "ok";
                    } catch (BenchException e) {
                        return e.getMessage();
                    }
                },
                ex);
        ex.shutdown();
        assertThrows(
                BenchException.class,
                () -> TcpBench.run(co, new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(s.get(20, java.util.concurrent.TimeUnit.SECONDS).contains("same test"));
    }
}
