package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.junit.jupiter.api.Test;

class PerfOptionsTest {
    @Test
    void perftestFlags() {
        PerfOptions o = PerfOptions.parse(
                "write_lat",
                "-d",
                "rxe0",
                "-i",
                "1",
                "-x",
                "1",
                "-s",
                "64",
                "-n",
                "500",
                "-p",
                "20000",
                "-t",
                "4",
                "10.0.0.1");
        assertEquals(PerfTest.WRITE_LAT, o.test);
        assertEquals("rxe0", o.device);
        assertEquals(1, o.ibPort);
        assertEquals(1, o.gidIndex);
        assertEquals(64, o.effectiveSize());
        assertEquals(500, o.effectiveIters());
        assertEquals(20000, o.tcpPort);
        assertEquals(4, o.effectiveTxDepth());
        assertEquals("10.0.0.1", o.host);
        assertFalse(o.isServer());
        assertEquals(14, o.qpTimeout, "perftest's default QP timeout");
        assertEquals(18, PerfOptions.parse("read_bw", "-u", "18").qpTimeout);
        assertEquals(17, PerfOptions.parse("read_bw", "--qp-timeout=17").qpTimeout);
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("read_bw", "-u", "32"));
    }

    @Test
    void defaultsArePerftests() {
        PerfOptions lat = PerfOptions.parse("send_lat");
        assertTrue(lat.isServer());
        assertEquals(2, lat.effectiveSize());
        assertEquals(1000, lat.effectiveIters());
        assertEquals(1, lat.effectiveTxDepth());
        assertEquals(18515, lat.tcpPort);
        assertEquals(-1, lat.gidIndex);
        PerfOptions bw = PerfOptions.parse("ib_write_bw", "--report_gbits", "-q", "2");
        assertEquals(PerfTest.WRITE_BW, bw.test);
        assertEquals(65536, bw.effectiveSize());
        assertEquals(5000, bw.effectiveIters());
        assertEquals(128, bw.effectiveTxDepth());
        assertEquals(2, bw.numQp);
        assertTrue(bw.reportGbits);
        assertEquals(8, PerfOptions.parse("atomic_bw").effectiveSize());
    }

    @Test
    void allSizesAndLongForms() {
        PerfOptions o = PerfOptions.parse("read_bw", "--iters=10", "--size=4K", "-D", "3", "host");
        assertEquals(4096, o.effectiveSize());
        assertEquals(10, o.effectiveIters());
        assertEquals(3, o.durationSec);
        assertEquals(23, PerfOptions.parse("read_bw", "-a").runSizes().size());
        assertEquals(2, (int) PerfOptions.parse("read_bw", "-a").runSizes().getFirst());
        assertEquals(
                1 << 23, (int) PerfOptions.parse("read_bw", "-a").runSizes().getLast());
        assertNotNull(o);
        assertEquals(List.of(8), PerfOptions.parse("atomic_lat", "-a").runSizes());
        assertEquals(List.of(2, 64, 4096), PerfOptions.parse("compare", "--sizes", "2,64,4k").sizes);
        assertTrue(PerfOptions.parse("compare").compare);
        assertTrue(PerfOptions.parse("--help").help);
    }

    @Test
    void badFlagsSayWhy() {
        assertMessage("unknown flag", "send_lat", "--bogus");
        assertMessage("-s wants a number", "send_lat", "-s", "big");
        assertMessage("outside", "send_lat", "-s", "0");
        assertMessage("outside", "send_lat", "-s", "16M");
        assertMessage("needs a value", "send_lat", "-n");
        assertMessage("unknown test", "ping");
        assertMessage("which test", "-n", "5");
        assertMessage("-a and -D", "write_bw", "-a", "-D", "2");
        assertMessage("one QP", "send_lat", "-q", "2");
        assertMessage("at least 5", "send_lat", "-n", "3");
        assertMessage("8 bytes", "atomic_lat", "-s", "16");
        assertMessage("too many arguments", "send_lat", "a", "b");
        assertMessage("does not fit in one UDP datagram", "udp_lat", "-s", "65508");
        assertMessage("--busy-poll is a tcp_lat variant", "tcp_bw", "--busy-poll");
        assertMessage("--busy-poll is a tcp_lat variant", "udp_lat", "--busy-poll");
        assertMessage("-q is for the RDMA", "udp_bw", "-q", "2");
        assertMessage("--poll-budget is for the RDMA bandwidth tests", "send_lat", "--poll-budget", "50");
        assertMessage("--poll-budget is for the RDMA bandwidth tests", "tcp_bw", "--poll-budget", "50");
        assertMessage("cannot be combined with -D", "send_bw", "--poll-budget", "50", "-D", "2");
        assertEquals(50, PerfOptions.parse("send_bw", "--poll-budget", "50").pollBudgetMicros);
    }

    @Test
    void theFloorsDefaults() {
        PerfOptions bw = PerfOptions.parse("udp_bw", "127.0.0.1");
        assertEquals(PerfTest.UDP_BW, bw.test);
        assertEquals(4096, bw.effectiveSize());
        assertEquals(5000, bw.effectiveIters());
        assertEquals(65507, PerfOptions.parse("udp_bw", "-s", "65507").effectiveSize());
        PerfOptions lat = PerfOptions.parse("udp_lat", "-a");
        assertEquals(2, lat.runSizes().getFirst());
        assertEquals(32768, lat.runSizes().getLast());
        assertEquals(1000, lat.effectiveIters());
        assertTrue(PerfOptions.parse("tcp_lat", "--busy-poll").busyPoll);
        assertTrue(
                PerfOptions.usage().contains("udp_lat") && PerfOptions.usage().contains("--busy-poll"));
    }

    private static void assertMessage(String part, String... args) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(args));
        assertTrue(e.getMessage().contains(part), e.getMessage());
    }

    @Test
    void cliExitCodes() {
        var err = new java.io.ByteArrayOutputStream();
        var out = new java.io.ByteArrayOutputStream();
        assertEquals(
                2,
                Perf.run(
                        new String[] {"send_lat", "--bogus"},
                        new java.io.PrintStream(out),
                        new java.io.PrintStream(err)));
        assertTrue(err.toString().contains("unknown flag '--bogus'"));
        assertEquals(0, Perf.run(new String[] {"--help"}, new java.io.PrintStream(out), new java.io.PrintStream(err)));
        assertTrue(out.toString().contains("--report_gbits"));
    }

    @Test
    void perftestModes() {
        PerfOptions o = PerfOptions.parse("send_bw", "-c", "UD", "-e", "-I", "64", "-R", "host");
        assertEquals(PerfOptions.Connection.UD, o.connection);
        assertTrue(o.events);
        assertTrue(o.rdmaCm);
        assertEquals(64, o.effectiveInline());
        assertEquals(PerfOptions.Connection.RC, PerfOptions.parse("write_lat").connection);
        assertEquals(0, PerfOptions.parse("write_lat").effectiveInline());
        assertEquals(
                884, PerfOptions.parse("send_lat", "-c", "ud", "-I", "912").effectiveInline(), "perftest's UD maximum");
        assertEquals(912, PerfOptions.parse("send_lat", "--inline_size=912").effectiveInline());
        assertTrue(PerfOptions.parse("read_lat", "--rdma_cm").rdmaCm);
    }

    @Test
    void perftestModesRefusedWhereTheyDoNotApply() {
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("write_bw", "-c", "UD"), "UD sends only");
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-c", "UC"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-c", "XX"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_bw", "-e", "-D", "2"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("read_bw", "-I", "64"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("tcp_lat", "-e"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("compare", "-R"));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse("send_lat", "-I", "913"));
    }

    @Test
    void perftestsValuesAndDefaultsOfTheNewFlags() {
        PerfOptions d = PerfOptions.parse("write_bw");
        assertEquals(7, d.retryCount, "perftest's DEF_RETRY_COUNT");
        assertEquals(-1, d.margin);
        assertEquals(1, d.postList);
        assertEquals(64, d.hopLimit, "perftest's DEF_HOP_LIMIT");
        assertEquals(PerfOptions.AtomicType.FETCH_AND_ADD, PerfOptions.parse("atomic_bw").atomicType);
        PerfOptions o = PerfOptions.parse(
                "read_bw", "--retry_count=3", "-m", "2048", "-o", "2", "-Q", "4", "-N", "-S", "5", "--tclass", "96");
        assertEquals(3, o.retryCount);
        assertEquals(2048, o.mtu);
        assertEquals(2, o.outReads);
        assertEquals(4, o.cqMod);
        assertTrue(o.noPeak);
        assertEquals(5, o.sl);
        assertEquals(96, o.trafficClass);
        assertMessage("choose the MTU", "send_lat", "-m", "1000");
        assertMessage("outside", "send_lat", "-S", "16");
        assertMessage("-o (outstanding reads) applies", "write_bw", "-o", "2");
        assertMessage("-r: on RDMA verbs", "write_bw", "-r", "8");
        assertMessage("-A changes the atomic operation", "read_bw", "-A", "CMP_AND_SWAP");
        assertMessage("wants CMP_AND_SWAP or FETCH_AND_ADD", "atomic_bw", "-A", "SWAP");
        assertMessage("--output latency does not fit write_bw", "write_bw", "--output", "latency");
        assertMessage("-N is for bandwidth tests", "send_lat", "-N");
    }
}
