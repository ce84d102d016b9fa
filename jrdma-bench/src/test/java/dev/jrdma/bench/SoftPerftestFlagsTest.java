package dev.jrdma.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Locale;

import static dev.jrdma.bench.SoftRdmaBenchTest.pair;
import static org.junit.jupiter.api.Assertions.*;

/**
 * perftest's traffic-changing flags run on the software device, jrdma against jrdma on 127.0.0.31 and 127.0.0.32,
 * each checked where its effect shows: the report's header, the figures, the count of messages that arrived.
 */
class SoftPerftestFlagsTest {
    @Test
    @Timeout(90)
    void mtuOnOneSideIsWhatBothUse() throws Exception {
        // the client asks for 1024; the exchange gives both sides the smaller MTU (perftest's rule), over 4 KiB messages
        var o = pair("send_bw", "-n", "200", "-s", "4096", "-m", "1024");
        assertTrue(o.clientOut().contains(" Mtu             : 1024[B]"), o.clientOut());
        assertTrue(o.serverOut().contains(" Mtu             : 1024[B]"), o.serverOut());
        assertEquals(200, o.server().bandwidth().getFirst().iters(), o.serverOut());
    }

    @Test
    @Timeout(90)
    void mtuAboveThePortsIsThePorts() throws Exception {
        var o = pair("write_lat", "-n", "100", "-m", "4096", "-s", "8192");
        assertTrue(o.clientOut().contains(" Mtu             : 4096[B]"), o.clientOut());
        assertEquals(100, o.client().latency().getFirst().iters());
    }

    @Test
    @Timeout(90)
    void cqModerationAndNoPeak() throws Exception {
        var o = pair("write_bw", "-n", "300", "-s", "1024", "-Q", "1", "-N");
        BwResult r = o.client().bandwidth().getFirst();
        assertEquals(300, r.iters());
        assertEquals(0.0, r.bwPeakMBs(), "-N: perftest prints no peak (0)");
        assertTrue(r.bwAvgMBs() > 0, r.toString());
        assertTrue(o.clientOut().contains(String.format(Locale.ROOT, " %-7.2f            %-7.2f", 0.0, r.bwAvgMBs())), o.clientOut());
        var q = pair("send_bw", "-n", "300", "-s", "256", "-Q", "7");
        assertEquals(300, q.server().bandwidth().getFirst().iters(), q.serverOut());
    }

    @Test
    @Timeout(90)
    void fewerReceivesPostedThanMessages() throws Exception {
        // -r 8: the server keeps 8 receives posted and reposts each as it completes; all 400 sends still arrive
        var o = pair("send_bw", "-n", "400", "-s", "64", "-r", "8");
        assertEquals(400, o.server().bandwidth().getFirst().iters(), o.serverOut());
        assertEquals(400, o.client().bandwidth().getFirst().iters(), o.clientOut());
    }

    @Test
    @Timeout(90)
    void outstandingReads() throws Exception {
        var o = pair("read_bw", "-n", "200", "-s", "4096", "-o", "1");
        assertTrue(o.clientOut().contains(" Outstand reads  : 1"), o.clientOut());
        assertEquals(200, o.client().bandwidth().getFirst().iters());
    }

    @Test
    @Timeout(90)
    void compareAndSwap() throws Exception {
        var o = pair("atomic_lat", "-n", "100", "-A", "CMP_AND_SWAP");
        assertTrue(o.clientOut().contains("Atomic CMP_AND_SWAP Latency Test"), o.clientOut());
        assertEquals(100, o.client().latency().getFirst().iters());
        var b = pair("atomic_bw", "-n", "100", "--atomic_type=CMP_AND_SWAP");
        assertEquals(100, b.client().bandwidth().getFirst().iters(), b.clientOut());
    }

    @Test
    @Timeout(90)
    void addressVectorFlags() throws Exception {
        // service level, traffic class, flow label and P_Key index 0 on both sides: the QPs connect and carry the run
        var o = pair("send_lat", "-n", "100", "-S", "3", "--tclass", "32", "--flow_label", "5", "--pkey_index", "0", "-L", "32");
        assertEquals(100, o.client().latency().getFirst().iters(), o.clientOut());
        assertEquals(100, o.server().latency().getFirst().iters(), o.serverOut());
    }

    @Test
    @Timeout(90)
    void outputPrintsTheFigureAlone() throws Exception {
        var o = pair("write_bw", "-n", "200", "-s", "4096", "--output", "bandwidth");
        String last = o.clientOut().strip().lines().reduce((a, b) -> b).orElseThrow();
        assertEquals(o.client().bandwidth().getFirst().bwAvgMBs(), Double.parseDouble(last), 1e-5, o.clientOut());
        assertFalse(o.clientOut().contains(Report.BW_HEADER), o.clientOut());
        assertFalse(o.clientOut().contains("Number of qps"), o.clientOut());
        var l = pair("read_lat", "-n", "100", "--output=latency");
        String lat = l.clientOut().strip().lines().reduce((a, b) -> b).orElseThrow();
        assertEquals(l.client().latency().getFirst().tAvg(), Double.parseDouble(lat), 1e-5, l.clientOut());
    }

    @Test
    @Timeout(30)
    void forceLinkThatDiffersIsRefused() {
        var e = assertThrows(BenchException.class, () -> RdmaBench.run(PerfOptions.parse("send_lat", "-d", SoftRdmaBenchTest.CLIENT_DEV,
                "--force-link", "IB", "127.0.0.1"), new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(e.getMessage().contains("--force-link InfiniBand") && e.getMessage().contains("Ethernet"), e.getMessage());
    }

    @Test
    void versionPrintsPerftestsLine() {
        var out = new java.io.ByteArrayOutputStream();
        assertEquals(0, Perf.run(new String[] {"-V"}, new java.io.PrintStream(out), System.err));
        assertEquals("Version: " + PerftestWire.VERSION, out.toString().strip());
    }
}
