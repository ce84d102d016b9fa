package dev.jrdma.bench;

import static dev.jrdma.bench.SoftRdmaBenchTest.pair;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * perftest's traffic-changing flags run on the software device, jrdma against jrdma on 127.0.0.31 and 127.0.0.32,
 * each checked where its effect shows: the report's header, the figures, the count of messages that arrived.
 */
class SoftPerftestFlagsTest {
    @Test
    @Timeout(90)
    void mtuOnOneSideIsWhatBothUse() throws Exception {
        // the client asks for 1024; the exchange gives both sides the smaller MTU (perftest's rule), over 4 KiB
        // messages
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
        assertTrue(
                o.clientOut().contains(String.format(Locale.ROOT, " %-7.2f            %-7.2f", 0.0, r.bwAvgMBs())),
                o.clientOut());
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
        // --recv_post_list 4: the used receives go back four at a time; still every send finds one
        var l = pair("send_bw", "-n", "400", "-s", "64", "-r", "16", "--recv_post_list", "4");
        assertEquals(400, l.server().bandwidth().getFirst().iters(), l.serverOut());
        assertThrows(
                IllegalArgumentException.class,
                () -> PerfOptions.parse("send_bw", "-r", "8", "--recv_post_list", "16"));
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
        var o = pair(
                "send_lat",
                "-n",
                "100",
                "-S",
                "3",
                "--tclass",
                "32",
                "--flow_label",
                "5",
                "--pkey_index",
                "0",
                "-L",
                "32");
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
        var e = assertThrows(
                BenchException.class,
                () -> RdmaBench.run(
                        PerfOptions.parse(
                                "send_lat", "-d", SoftRdmaBenchTest.CLIENT_DEV, "--force-link", "IB", "127.0.0.1"),
                        new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(
                e.getMessage().contains("--force-link InfiniBand")
                        && e.getMessage().contains("Ethernet"),
                e.getMessage());
    }

    @Test
    void versionPrintsPerftestsLine() {
        var out = new java.io.ByteArrayOutputStream();
        assertEquals(0, Perf.run(new String[] {"-V"}, new java.io.PrintStream(out), System.err));
        assertEquals("Version: " + PerftestWire.VERSION, out.toString().strip());
    }

    @Test
    @Timeout(90)
    void postLists() throws Exception {
        var o = pair("write_bw", "-n", "320", "-s", "512", "-l", "8");
        assertTrue(o.clientOut().contains(" Post List       : 8"), o.clientOut());
        assertEquals(320, o.client().bandwidth().getFirst().iters(), o.clientOut());
        var s = pair("send_bw", "-n", "200", "-s", "256", "-l", "4", "-Q", "2");
        assertEquals(200, s.server().bandwidth().getFirst().iters(), s.serverOut());
        assertThrows(
                IllegalArgumentException.class,
                () -> PerfOptions.parse("write_bw", "-n", "100", "-l", "8"),
                "-n a multiple of -l");
        assertThrows(
                IllegalArgumentException.class,
                () -> PerfOptions.parse("write_bw", "-n", "96", "-l", "8", "-Q", "3"),
                "-l a multiple of -Q");
    }

    @Test
    @Timeout(90)
    void samplesUnsortedAndSorted() throws Exception {
        var o = pair("read_lat", "-n", "50", "-U", "-H");
        String out = o.clientOut();
        // -U: 49 intervals in order; -H: 47 sorted (the 2 largest dropped), each under "#, usec"
        int first = out.indexOf("#, usec\n"), second = out.indexOf("#, usec\n", first + 1);
        assertTrue(first >= 0 && second > first, out);
        List<Double> unsorted = values(out.substring(first, second)), sorted = values(out.substring(second));
        assertEquals(49, unsorted.size(), out);
        assertEquals(47, sorted.size(), out);
        for (int i = 1; i < sorted.size(); i++) assertTrue(sorted.get(i - 1) <= sorted.get(i), out);
        LatencyResult r = o.client().latency().getFirst();
        assertEquals(r.tMin(), sorted.getFirst(), r.tMin() * 1e-5 + 1e-6, "the sorted list starts at t_min");
        assertTrue(out.indexOf(Report.latLine(r)) > second, "the report line comes after the samples");
    }

    private static List<Double> values(String block) {
        List<Double> v = new java.util.ArrayList<>();
        for (String line : block.split("\n")) {
            var m = java.util.regex.Pattern.compile("^(\\d+), (\\S+)$").matcher(line);
            if (m.matches()) v.add(Double.parseDouble(m.group(2)));
        }
        return v;
    }

    @Test
    void cStyleG() {
        assertEquals("1.5", LatencySamples.cG(1.5));
        assertEquals("12.3457", LatencySamples.cG(12.345678));
        assertEquals("1.23457e+06", LatencySamples.cG(1234567.0));
        assertEquals("0.0001", LatencySamples.cG(0.0001));
        assertEquals("1e-05", LatencySamples.cG(0.00001));
        assertEquals("100000", LatencySamples.cG(100000.0));
    }

    @Test
    @Timeout(90)
    void latencyGapSpacesThePosts() throws Exception {
        // 2000 usec between posts: every interval between posts is at least that, so t_min is at least 1000 (half of
        // it)
        var o = pair("write_lat", "-n", "20", "--latency_gap", "2000");
        assertTrue(o.client().latency().getFirst().tMin() >= 1000, o.clientOut());
        var r = pair("atomic_lat", "-n", "20", "--latency_gap=2000");
        assertTrue(r.client().latency().getFirst().tMin() >= 2000, r.clientOut());
    }

    @Test
    @Timeout(90)
    void limitsFailTheRunBelowThem() throws Exception {
        int port = Loopback.freePort();
        PerfOptions s = PerfOptions.parse(
                "write_bw",
                "-d",
                SoftRdmaBenchTest.SERVER_DEV,
                "-p",
                "" + port,
                "-n",
                "100",
                "-s",
                "1024",
                "--accept-timeout",
                "20");
        PerfOptions c = PerfOptions.parse(
                "write_bw",
                "-d",
                SoftRdmaBenchTest.CLIENT_DEV,
                "-p",
                "" + port,
                "-n",
                "100",
                "-s",
                "1024",
                "-w",
                "1000000",
                "127.0.0.1");
        var failed = assertThrows(
                AssertionError.class,
                () -> Loopback.run(out -> RdmaBench.run(s, out), out -> RdmaBench.run(c, out), 60));
        assertTrue(failed.getMessage().contains("Error: BW result is below bw limit"), failed.getMessage());
        var ok = pair("write_bw", "-n", "100", "-s", "1024", "-w", "0", "-y", "0");
        assertEquals(100, ok.client().bandwidth().getFirst().iters(), ok.clientOut());
    }

    @Test
    @Timeout(90)
    void cpuUtilIsAColumnOfATimedRun() throws Exception {
        var o = pair("write_bw", "-D", "1", "-s", "4096", "--cpu_util");
        assertTrue(o.clientOut().contains(Report.BW_HEADER + "    CPU_Util[%]"), o.clientOut());
        var m = java.util.regex.Pattern.compile("\t    ([0-9.]+)\n").matcher(o.clientOut());
        assertTrue(m.find(), o.clientOut());
        double util = Double.parseDouble(m.group(1));
        assertTrue(util > 0 && util <= 100, o.clientOut());
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("write_bw", "--cpu_util"), "without -D");
    }

    @Test
    @Timeout(120)
    void durations() throws Exception {
        var bw = pair("send_bw", "-D", "1", "-s", "1024");
        assertTrue(bw.clientOut().contains(" Duration        : 1[s]"), bw.clientOut());
        long sent = bw.client().bandwidth().getFirst().iters(),
                received = bw.server().bandwidth().getFirst().iters();
        assertTrue(sent > 0 && received > 0 && received <= sent, sent + " sent, " + received + " received");
        // read_lat -D: perftest's duration columns, t_avg and transactions per second
        var lat = pair("read_lat", "-D", "1");
        String out = lat.clientOut();
        assertTrue(out.contains(Report.LAT_DUR_HEADER), out);
        var m = java.util.regex.Pattern.compile("\\n 2 +(\\d+) +([0-9.]+) +([0-9.]+)")
                .matcher(out);
        assertTrue(m.find(), out);
        long iters = Long.parseLong(m.group(1));
        double avgUs = Double.parseDouble(m.group(2)), tps = Double.parseDouble(m.group(3));
        assertEquals(lat.client().latency().getFirst().iters(), iters);
        assertEquals(1e6 / avgUs, tps, tps * 0.05, "tps and t_avg describe the same run");
    }

    @Test
    @Timeout(120)
    void allSizesAndGbits() throws Exception {
        var o = pair("write_bw", "-a", "-n", "10", "--report_gbits");
        assertEquals(23, o.client().bandwidth().size(), o.clientOut());
        assertEquals(1 << 23, o.client().bandwidth().getLast().size());
        assertTrue(o.clientOut().contains(Report.BW_HEADER_G), o.clientOut());
        var ud = pair("send_lat", "-a", "-n", "5", "-c", "UD");
        assertEquals(
                List.of(2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L, 512L, 1024L, 2048L, 4096L),
                ud.client().latency().stream().map(LatencyResult::size).toList(),
                "UD: -a stops at the MTU\n" + ud.clientOut());
    }

    @Test
    @Timeout(120)
    void bidirectional() throws Exception {
        for (String test : List.of("write_bw", "read_bw", "send_bw")) {
            var o = pair(test, "-b", "-n", "200", "-s", "4096");
            BwResult client = o.client().bandwidth().getFirst(),
                    server = o.server().bandwidth().getFirst();
            assertEquals(200, client.iters(), o.clientOut());
            assertEquals(200, server.iters(), "the server ran its own loop:\n" + o.serverOut());
            assertEquals(server, o.client().remote(), "each side received the other's report");
            // each prints the sum of both reports
            String sum = Report.bwLine(
                    new BwResult(
                            4096,
                            200,
                            client.bwPeakMBs() + server.bwPeakMBs(),
                            client.bwAvgMBs() + server.bwAvgMBs(),
                            client.msgRateMpps() + server.msgRateMpps()),
                    false);
            assertTrue(o.clientOut().contains(sum), sum + "\n" + o.clientOut());
            assertTrue(o.serverOut().contains(sum), sum + "\n" + o.serverOut());
        }
        var e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-b"));
        assertTrue(e.getMessage().contains("bandwidth"), e.getMessage());
    }

    @Test
    @Timeout(90)
    void reportBoth() throws Exception {
        var o = pair("write_bw", "-b", "--report-both", "-n", "100", "-s", "1024");
        BwResult mine = o.client().bandwidth().getFirst(), peer = o.client().remote();
        String out = o.clientOut();
        int local = out.indexOf(" Local results: "), remote = out.indexOf(" Remote results: ");
        assertTrue(local > 0 && remote > local, out);
        assertTrue(
                out.indexOf(Report.bwLine(mine, false)) > local && out.indexOf(Report.bwLine(mine, false)) < remote,
                out);
        assertTrue(out.indexOf(Report.bwLine(peer, false)) > remote, out);
    }

    @Test
    @Timeout(90)
    void withoutTheVersionExchange() throws Exception {
        // both sides skip versions, sizes and MTUs; each keeps its own MTU (-m 1024 on both here)
        var o = pair("send_lat", "-n", "100", "--dont_xchg_versions", "-m", "1024");
        assertEquals(100, o.client().latency().getFirst().iters(), o.clientOut());
        assertTrue(o.serverOut().contains(" Mtu             : 1024[B]"), o.serverOut());
    }

    @Test
    @Timeout(90)
    void ipv6Gid() throws Exception {
        int port = Loopback.freePort();
        PerfOptions s = PerfOptions.parse(
                "read_lat", "-d", "soft@[::1]", "-p", "" + port, "-n", "50", "--ipv6", "--accept-timeout", "20");
        PerfOptions c = PerfOptions.parse("read_lat", "-d", "soft@[::1]", "-p", "" + port, "-n", "50", "--ipv6", "::1");
        var o = Loopback.run(out -> RdmaBench.run(s, out), out -> RdmaBench.run(c, out), 60);
        assertTrue(o.clientOut().contains(" GID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:01"), o.clientOut());
        var e = assertThrows(
                BenchException.class,
                () -> RdmaBench.run(
                        PerfOptions.parse("send_lat", "-d", SoftRdmaBenchTest.CLIENT_DEV, "--ipv6", "127.0.0.1"),
                        new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(e.getMessage().contains("--ipv6") && e.getMessage().contains("no IPv6 GID"), e.getMessage());
    }

    @Test
    @Timeout(90)
    void counters() throws Exception {
        // the soft device's own counters: 300 writes of 1 KiB leave as 300 packets at least (an MTU of 1024 or more)
        var o = pair("write_bw", "-n", "300", "-s", "1024", "-W", "counters/tx_packets,rx_packets");
        var m = java.util.regex.Pattern.compile("\tcounters/tx_packets=(\\d+)\n\trx_packets=(\\d+)\n")
                .matcher(o.clientOut());
        assertTrue(m.find(), o.clientOut());
        assertTrue(Long.parseLong(m.group(1)) >= 300, o.clientOut());
        var e = assertThrows(
                BenchException.class,
                () -> RdmaBench.run(
                        PerfOptions.parse(
                                "write_bw",
                                "-d",
                                SoftRdmaBenchTest.CLIENT_DEV,
                                "-W",
                                "counters/no_such_counter",
                                "-p",
                                "" + Loopback.freePort(),
                                "--timeout",
                                "2",
                                "127.0.0.1"),
                        new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(
                e.getMessage().startsWith("-W: ")
                        && e.getMessage().contains("no_such_counter")
                        && e.getMessage().contains("tx_packets"),
                e.getMessage());
    }

    @Test
    @Timeout(120)
    void reversedTraffic() throws Exception {
        // the server writes and measures; the client is passive and prints the server's report
        var w = pair("write_bw", "--reversed", "-n", "200", "-s", "4096");
        assertEquals(200, w.server().bandwidth().getFirst().iters(), w.serverOut());
        assertTrue(w.client().bandwidth().isEmpty(), w.clientOut());
        assertEquals(200, w.client().remote().iters(), w.clientOut());
        // send_bw: the server sends, the client counts the receives
        var s = pair("send_bw", "--reversed", "-n", "200", "-s", "1024");
        assertEquals(200, s.client().bandwidth().getFirst().iters(), s.clientOut());
        assertEquals(200, s.server().bandwidth().getFirst().iters(), s.serverOut());
        var ud = pair("send_bw", "--reversed", "-c", "UD", "-n", "100", "-s", "512");
        assertEquals(100, ud.client().bandwidth().getFirst().iters(), ud.clientOut());
    }

    @Test
    @Timeout(90)
    void memoryRegionPerQp() throws Exception {
        var o = pair("write_bw", "-q", "2", "-n", "100", "-s", "1024", "--mr_per_qp");
        assertEquals(200, o.client().bandwidth().getFirst().iters(), o.clientOut());
        var m = java.util.regex.Pattern.compile(" local address: .* RKey (0x[0-9a-f]+) ")
                .matcher(o.clientOut());
        java.util.Set<String> keys = new java.util.HashSet<>();
        while (m.find()) keys.add(m.group(1));
        assertEquals(2, keys.size(), "each QP advertises its own region's key:\n" + o.clientOut());
    }

    @Test
    @Timeout(90)
    void bufferInAMappedFile(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        // the client's file holds 0x5a where its QP's local area is; after write_bw the server's file has it in the
        // area the client writes (QP 0's remote area: one 4 KiB area further, from the 4096-byte offset given)
        java.nio.file.Path cf = dir.resolve("client"), sf = dir.resolve("server");
        byte[] pattern = new byte[4096 + 8192];
        java.util.Arrays.fill(pattern, (byte) 0x5a);
        java.nio.file.Files.write(cf, pattern);
        java.nio.file.Files.write(sf, new byte[4096 + 8192]);
        int port = Loopback.freePort();
        PerfOptions s = PerfOptions.parse(
                "write_bw",
                "-d",
                SoftRdmaBenchTest.SERVER_DEV,
                "-p",
                "" + port,
                "-n",
                "50",
                "-s",
                "4096",
                "--mmap",
                sf.toString(),
                "--mmap-offset",
                "4096",
                "--accept-timeout",
                "20");
        PerfOptions c = PerfOptions.parse(
                "write_bw",
                "-d",
                SoftRdmaBenchTest.CLIENT_DEV,
                "-p",
                "" + port,
                "-n",
                "50",
                "-s",
                "4096",
                "--mmap",
                cf.toString(),
                "--mmap-offset=4096",
                "127.0.0.1");
        var o = Loopback.run(out -> RdmaBench.run(s, out), out -> RdmaBench.run(c, out), 60);
        assertEquals(50, o.client().bandwidth().getFirst().iters(), o.clientOut());
        byte[] server = java.nio.file.Files.readAllBytes(sf);
        for (int i = 0; i < 4096; i++) assertEquals(0, server[i], "before the offset: untouched");
        for (int i = 8192; i < 12288; i++) assertEquals((byte) 0x5a, server[i], "the written area, at " + i);
        var e = assertThrows(
                BenchException.class,
                () -> RdmaBench.run(
                        PerfOptions.parse(
                                "write_bw",
                                "-d",
                                SoftRdmaBenchTest.CLIENT_DEV,
                                "-s",
                                "4096",
                                "--mmap",
                                sf.toString(),
                                "--mmap-offset",
                                "8192",
                                "127.0.0.1"),
                        new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(e.getMessage().startsWith("--mmap "), e.getMessage());
    }

    @Test
    @Timeout(90)
    void marginsOfATimedRun() throws Exception {
        // -D 3 -f 1: the latency run measures the middle second: its iterations times its average is about 1 s
        var o = pair("read_lat", "-D", "3", "-f", "1");
        var m = java.util.regex.Pattern.compile("\\n 2 +(\\d+) +([0-9.]+) +([0-9.]+)")
                .matcher(o.clientOut());
        assertTrue(m.find(), o.clientOut());
        double measuredUs = Long.parseLong(m.group(1)) * Double.parseDouble(m.group(2));
        assertEquals(1e6, measuredUs, 0.1e6, "the window between the margins:\n" + o.clientOut());
        // write_bw -D 3 -f 1: the rate of the middle second; the operations counted are fewer than all that completed
        var bw = pair("write_bw", "-D", "3", "-f", "1", "-s", "4096");
        BwResult r = bw.client().bandwidth().getFirst();
        assertTrue(r.iters() > 0, bw.clientOut());
        assertEquals(
                r.iters() / 1.0 / 1e6,
                r.msgRateMpps(),
                r.msgRateMpps() * 0.02,
                "iterations over the 1 s window:\n" + bw.clientOut());
        assertThrows(
                IllegalArgumentException.class,
                () -> PerfOptions.parse("write_bw", "-D", "2", "-f", "1"),
                "DURATION > 2*MARGIN");
        assertEquals(
                1, PerfOptions.parse("write_bw", "-D", "4").effectiveMargin(), "perftest's default: a quarter of -D");
    }

    @Test
    @Timeout(90)
    void jsonReport(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path json = dir.resolve("out.json");
        var o = pair("write_bw", "-n", "200", "-s", "4096", "--out_json", "--out_json_file=" + json);
        BwResult r = o.client().bandwidth().getFirst();
        String text =
                java.nio.file.Files.readString(json); // the server wrote it too (the client's report), the client last
        assertTrue(text.startsWith("{\ntest_info: {\ntest: RDMA_Write_BW_Test,\n"), text);
        assertTrue(text.contains("Number_of_qps: 1,\nTransport_type: IB,\nConnection_type: RC,\n"), text);
        assertTrue(text.contains("CQ_Moderation: 100,\nMtu: 4096,\nLink_type: Ethernet,\n"), text);
        assertTrue(
                text.contains(String.format(
                        Locale.ROOT,
                        "results: {\nMsgSize: 4096,\nn_iterations: 200,\nBW_peak: %.2f,\nBW_average: %.2f,\nMsgRate: %.6f,\n},\n}\n",
                        r.bwPeakMBs(),
                        r.bwAvgMBs(),
                        r.msgRateMpps())),
                text);
        java.nio.file.Path lat = dir.resolve("lat.json");
        var l = pair("send_lat", "-n", "100", "--out_json", "--out_json_file", lat.toString());
        String lt = java.nio.file.Files.readString(lat);
        assertTrue(lt.contains("test: Send_Latency_Test,\n") && lt.contains("n_iterations: 100,\nt_min: "), lt);
    }

    @Test
    @Timeout(90)
    void completionVector() throws Exception {
        var o = pair("send_lat", "-e", "-X", "0", "-n", "100");
        assertEquals(100, o.client().latency().getFirst().iters(), o.clientOut());
        var e = assertThrows(
                BenchException.class,
                () -> RdmaBench.run(
                        PerfOptions.parse("send_lat", "-d", SoftRdmaBenchTest.CLIENT_DEV, "-X", "5", "127.0.0.1"),
                        new java.io.PrintStream(new java.io.ByteArrayOutputStream())));
        assertTrue(e.getMessage().startsWith("-X 5: ") && e.getMessage().contains("completion vector"), e.getMessage());
    }

    @Test
    @Timeout(90)
    void sharedReceiveQueue() throws Exception {
        var o = pair("send_bw", "--use-srq", "-q", "2", "-r", "64", "-n", "300", "-s", "1024");
        assertTrue(o.serverOut().contains("Using SRQ      : ON"), o.serverOut());
        assertEquals(600, o.server().bandwidth().getFirst().iters(), o.serverOut());
        var l = pair("send_lat", "--use-srq", "-n", "100");
        assertEquals(100, l.client().latency().getFirst().iters(), l.clientOut());
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("write_bw", "--use-srq"));
    }
}
