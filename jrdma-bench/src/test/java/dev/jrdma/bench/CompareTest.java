package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class CompareTest {
    @Test
    @Timeout(180)
    void compareWritesTableAndHtmlWithBothSeries(@TempDir Path dir) throws Exception {
        int port = Loopback.freePort();
        Path html = dir.resolve("cmp.html");
        PerfOptions so =
                PerfOptions.parse("compare", "-d", SoftRdmaBenchTest.SERVER_DEV, "-p", "" + port, "--timeout", "10");
        PerfOptions co = PerfOptions.parse(
                "compare",
                "-d",
                SoftRdmaBenchTest.CLIENT_DEV,
                "-p",
                "" + port,
                "--timeout",
                "10",
                "--sizes",
                "64,4096",
                "-n",
                "100",
                "--html",
                html.toString(),
                "127.0.0.1");
        var o = Loopback.run(
                out -> Compare.server(so, out),
                out -> {
                    try {
                        Compare.clientAndReport(co, out);
                        return 0;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                },
                170);
        assertEquals(0, o.server());
        String text = o.clientOut();
        assertTrue(text.contains("latency t_typical [usec], 64 B"), text);
        assertTrue(text.contains("message rate [Mpps], 64 B"), text);
        assertTrue(text.contains("throughput BW average [MB/sec], 4096 B"), text);
        assertTrue(text.contains("RDMA gain"), text);
        for (String col : Compare.COLUMNS) assertTrue(text.contains(col), col + " missing:\n" + text);
        assertTrue(text.contains("  × udp_lat"), text);
        assertTrue(text.contains("  × udp_bw"), text);
        assertTrue(text.contains("jrdma perf compare"), "says how to reproduce it");
        // every series measured at both sizes, the UDP floor included
        String page = Files.readString(html);
        assertTrue(page.startsWith("<!DOCTYPE html>"));
        assertTrue(page.contains("&#215; udp_lat") && page.contains("&#215; udp_bw"));
        for (String series : List.of(
                "udp_lat",
                "tcp_lat",
                "tcp_lat_busy_poll",
                "send_lat",
                "write_lat",
                "udp_bw",
                "tcp_bw",
                "send_bw",
                "write_bw",
                "read_bw")) assertTrue(page.contains("data-name=\"" + series + "\""), series + " missing");
        // each point's line as it is measured; send_bw runs at least SEND_BW_MIN_ITERS messages whatever -n says
        assertTrue(text.contains(" read_bw 4096 bytes: "), text);
        assertTrue(text.contains(" send_lat 64 bytes: t_typical "), text);
        assertTrue(page.contains("<svg"));
        assertFalse(page.contains("<script"), "self-contained, no scripts");
        assertFalse(
                page.contains("http://")
                        && page.replace("http://www.w3.org/2000/svg", "").contains("http://"),
                "no external links");
    }

    @Test
    @Timeout(120)
    void testsPicksTheSeriesAndBandwidthPointsRunLongEnough() throws Exception {
        int port = Loopback.freePort();
        PerfOptions so =
                PerfOptions.parse("compare", "-d", SoftRdmaBenchTest.SERVER_DEV, "-p", "" + port, "--timeout", "10");
        PerfOptions co = PerfOptions.parse(
                "compare",
                "-d",
                SoftRdmaBenchTest.CLIENT_DEV,
                "-p",
                "" + port,
                "--timeout",
                "10",
                "--sizes",
                "64",
                "-n",
                "100",
                "--tests",
                "write_bw,SEND_BW",
                "127.0.0.1");
        assertEquals(List.of("write_bw", "send_bw"), co.compareTests);
        Loopback.Outcome<Object> o = Loopback.run(out -> Compare.server(so, out), out -> Compare.client(co, out), 110);
        Compare.Result r = (Compare.Result) o.client();
        assertEquals(
                List.of(Compare.Series.SEND_BW, Compare.Series.WRITE_BW),
                List.copyOf(r.points().keySet()),
                o.clientOut());
        assertTrue(r.notMeasured().isEmpty(), r.notMeasured().toString());
        // send_bw: its server counts the messages, so a floor on the count, and a count sized in the warm-in by its
        // rate; write_bw: rounds of -n for a time
        long sends = r.point(Compare.Series.SEND_BW, 64).bw().iters();
        assertTrue(
                sends >= Compare.SEND_BW_MIN_ITERS && sends <= Bandwidth.MAX_TIMED_MESSAGES, "send_bw count: " + sends);
        long writes = r.point(Compare.Series.WRITE_BW, 64).bw().iters();
        assertTrue(writes >= 100 && writes % 100 == 0, "rounds of -n: " + writes);
        assertThrows(
                IllegalArgumentException.class,
                () -> PerfOptions.parse("compare", "--tests", "write_bw,nosuch_bw", "127.0.0.1"));
    }

    @Test
    @Timeout(120)
    void aPointThatFailsIsReportedAndTheOthersStillCount() throws Exception {
        int port = Loopback.freePort();
        // the server has no such RDMA device: every RDMA point fails, the socket points are measured
        PerfOptions so = PerfOptions.parse("compare", "-d", "nosuchdev0", "-p", "" + port, "--timeout", "3");
        PerfOptions co = PerfOptions.parse(
                "compare",
                "-d",
                SoftRdmaBenchTest.CLIENT_DEV,
                "-p",
                "" + port,
                "--timeout",
                "3",
                "--sizes",
                "64",
                "-n",
                "50",
                "127.0.0.1");
        Loopback.Outcome<Object> o = Loopback.run(out -> Compare.server(so, out), out -> Compare.client(co, out), 110);
        Compare.Result r = (Compare.Result) o.client();
        assertNotNull(r.point(Compare.Series.UDP_LAT, 64), o.clientOut());
        assertNotNull(r.point(Compare.Series.TCP_LAT_BUSY_POLL, 64), o.clientOut());
        assertNull(r.point(Compare.Series.SEND_LAT, 64));
        assertEquals(5, r.notMeasured().size(), r.notMeasured().toString());
        assertTrue(
                r.notMeasured().getFirst().startsWith("send_lat 64 B ("),
                r.notMeasured().toString());
        String t = Compare.table(r);
        assertTrue(t.contains("Not measured in this run: write_bw 64 B"), t);
        assertTrue(HtmlReport.render(r).contains("Not measured in this run: send_bw 64 B"));
    }

    @Test
    void aSendBwPointWarmsInUpToItsByteLimitAndTheOtherBandwidthPointsDoNot() {
        assertEquals(Compare.LATENCY_WARMUP_ITERS, Compare.sendBwWarmIn(64));
        assertEquals(4096, Compare.sendBwWarmIn(65536));
        PerfOptions o = PerfOptions.parse("compare", "127.0.0.1");
        assertEquals(
                Compare.sendBwWarmIn(4096), Compare.runOptions(o, Compare.Series.SEND_BW, 4096, 10_000).warmInIters);
        assertEquals(0, Compare.runOptions(o, Compare.Series.WRITE_BW, 4096, 1000).warmInIters);
        assertEquals(Compare.BW_MIN_TIMED_NS, Compare.runOptions(o, Compare.Series.SEND_BW, 4096, 10_000).minTimedNs);
    }

    @Test
    void aCompareServerTakesItsPollBudgetForSendBwOnlyAndNotWithADuration() {
        assertEquals(0, Compare.SEND_BW_POLL_BUDGET_MICROS, "off unless -Djrdma.compare.sendBwPollBudget says");
        assertEquals(Compare.SEND_BW_POLL_BUDGET_MICROS, Compare.serverPollBudget(Compare.Series.SEND_BW, 0));
        assertEquals(0, Compare.serverPollBudget(Compare.Series.WRITE_BW, 0));
        assertEquals(0, Compare.serverPollBudget(Compare.Series.READ_BW, 0));
        // the loops of -D stop on the clock, which a blocked wait would not see
        assertEquals(0, Compare.serverPollBudget(Compare.Series.SEND_BW, 2));
        // the client's options (the same function on both sides) keep spinning
        PerfOptions o = PerfOptions.parse("compare", "127.0.0.1");
        assertEquals(0, Compare.runOptions(o, Compare.Series.SEND_BW, 64, 10_000).pollBudgetMicros);
    }

    @Test
    void aSendBwTimedLoopLastsTheShortestTimeAtTheWarmInsRate() {
        // 1,000 messages in 2 ms: 250 ms are 125,000
        assertEquals(125_000, Bandwidth.timedMessages(1000, 2_000_000, 250_000_000, 10_000));
        // never fewer than -n, never more than the cap, -n alone without a shortest time or a round
        assertEquals(10_000, Bandwidth.timedMessages(1000, 200_000_000, 250_000_000, 10_000));
        assertEquals(Bandwidth.MAX_TIMED_MESSAGES, Bandwidth.timedMessages(1000, 1000, 250_000_000, 10_000));
        assertEquals(2_000_000, Bandwidth.timedMessages(1000, 1000, 250_000_000, 2_000_000));
        assertEquals(10_000, Bandwidth.timedMessages(1000, 2_000_000, 0, 10_000));
        assertEquals(10_000, Bandwidth.timedMessages(0, 0, 250_000_000, 10_000));
        // the warm-in's first part, before both sides wait for their JIT: all but the last round of at most 1000
        assertEquals(19_000, Bandwidth.warmInBeforeJitWait(20_000));
        assertEquals(1_000, Bandwidth.warmInBeforeJitWait(2_000));
        assertEquals(1, Bandwidth.warmInBeforeJitWait(1));
    }

    @Test
    void aSendBwWarmInsFirstPartGoesInRoundsThatStampPostsAsTheTimedLoopDoes() {
        // calls of client() that end (their exit taken before C2 compiles it), all of the first part and no more
        assertArrayEquals(new long[] {5000, 5000, 5000, 4000}, Bandwidth.warmInRounds(19_000));
        assertArrayEquals(new long[] {1000}, Bandwidth.warmInRounds(1000));
        assertArrayEquals(new long[0], Bandwidth.warmInRounds(0));
        // a timed loop of 10,000 or more stamps every 5th post or fewer: so must a full round, or the branch it never
        // takes is a trap in the timed loop
        assertTrue(BwResult.postStep(10_000) > 1);
        for (long round : Bandwidth.warmInRounds(19_000)) assertTrue(BwResult.postStep(round) > 1, "round " + round);
    }

    /**
     * After its JIT wait a send_bw warm-in goes on in rounds until a round in which neither JVM compiled (both sides
     * say so on the exchange), or until a side passed its bound; both sides take the same decision from the two words,
     * or one would start its timed loop while the other still waits for a round.
     */
    @Test
    void aSendBwWarmInGoesOnInRoundsUntilNeitherJitCompiledOrASideIsOverdue() {
        var quiet = new WarmUp.JitWork(0, false);
        var busy = new WarmUp.JitWork(40, true);
        assertTrue(new Bandwidth.WarmInRound(quiet, false, 0, 10)
                .endsWith(new Bandwidth.WarmInRound(quiet, false, 0, 10)));
        assertFalse(
                new Bandwidth.WarmInRound(quiet, false, 0, 10).endsWith(new Bandwidth.WarmInRound(busy, false, 0, 10)));
        assertFalse(
                new Bandwidth.WarmInRound(busy, false, 0, 10).endsWith(new Bandwidth.WarmInRound(quiet, false, 0, 10)));
        assertTrue(
                new Bandwidth.WarmInRound(busy, true, 0, 10).endsWith(new Bandwidth.WarmInRound(busy, false, 0, 10)));
        assertTrue(
                new Bandwidth.WarmInRound(busy, false, 0, 10).endsWith(new Bandwidth.WarmInRound(busy, true, 0, 10)));

        // the client's side of three rounds: the server's JIT busy in the first two, quiet in the third
        List<Bandwidth.WarmInRound> serverWords = List.of(
                new Bandwidth.WarmInRound(new WarmUp.JitWork(30, true), false, 0, 10_000),
                new Bandwidth.WarmInRound(new WarmUp.JitWork(5, true), false, 0, 10_000),
                new Bandwidth.WarmInRound(quiet, false, 0, 10_000));
        var meeting = new Bandwidth.WarmInMeeting() {
            int ends;

            @Override
            public void jitQuiet() {}

            @Override
            public Bandwidth.WarmInRound roundEnd(Bandwidth.WarmInRound mine) {
                return serverWords.get(ends++);
            }

            @Override
            public boolean isClient() {
                return true;
            }
        };
        var rounds = new Bandwidth.WarmInRounds(meeting);
        rounds.end(new WarmUp.JitWork(12, true), 50_000, 50_000);
        assertFalse(rounds.over);
        rounds.end(quiet, 60_000, 60_000);
        assertFalse(rounds.over, "the client's JIT was quiet, the server's not");
        rounds.end(quiet, 55_000, 55_000);
        assertTrue(rounds.over);
        assertEquals(55_000, rounds.timed, "the larger proposal: the client's");
        var outcome = rounds.outcome();
        assertEquals(3, outcome.rounds());
        assertFalse(outcome.stoppedAtBound());
        assertEquals(12, outcome.clientCompiledMs());
        assertEquals(35, outcome.serverCompiledMs());
        assertTrue(outcome.describe().contains("3 rounds"), outcome.describe());
        assertTrue(outcome.describe().contains("the last one compiled nothing"), outcome.describe());
    }

    @Test
    void aSendBwWarmInDoesNotEndAtItsShortFirstRoundUnlessASideIsOverdue() {
        var quiet = new WarmUp.JitWork(0, false);
        List<Bandwidth.WarmInRound> serverWords = new ArrayList<>(List.of(
                new Bandwidth.WarmInRound(quiet, false, 0, 10_000),
                new Bandwidth.WarmInRound(quiet, false, 0, 10_000)));
        var meeting = new Bandwidth.WarmInMeeting() {
            @Override
            public void jitQuiet() {}

            @Override
            public Bandwidth.WarmInRound roundEnd(Bandwidth.WarmInRound mine) {
                return serverWords.removeFirst();
            }

            @Override
            public boolean isClient() {
                return true;
            }
        };
        var rounds = new Bandwidth.WarmInRounds(meeting);
        rounds.end(quiet, 800_000, 800_000); // the 1,000-message re-warm: both JITs quiet
        assertFalse(rounds.over, "a quiet short round says nothing of the timed loop: a rehearsal of it comes next");
        rounds.end(quiet, 800_000, 800_000); // the rehearsal, as long as the timed loop: quiet too
        assertTrue(rounds.over);
        assertEquals(2, rounds.outcome().rounds());

        serverWords.add(new Bandwidth.WarmInRound(quiet, true, 0, 10_000)); // the server is past its bound
        var bounded = new Bandwidth.WarmInRounds(meeting);
        bounded.end(quiet, 800_000, 800_000);
        assertTrue(bounded.over, "a side over its bound ends it after any round (a bound of 0: after the first)");
    }

    @Test
    void rowsUseOnlyWhatWasMeasured() {
        var lat = new LatencyResult(64, 100, 1, 9, 2, 2, 0.1, 5, 8);
        var tcpLat = new LatencyResult(64, 100, 10, 90, 20, 20, 1, 50, 80);
        var p1 = new Compare.Point(Compare.Series.TCP_LAT, 64, tcpLat, null, 50, 40);
        var p2 = new Compare.Point(Compare.Series.SEND_LAT, 64, lat, null, 60, 30);
        var r = new Compare.Result(
                "soft@x",
                "h",
                100,
                List.of(64),
                Map.of(Compare.Series.TCP_LAT, List.of(p1), Compare.Series.SEND_LAT, List.of(p2)));
        var rows = Compare.rows(r);
        assertEquals(10.0, rows.getFirst().gain(), 1e-9); // 20 us TCP vs 2 us RDMA
        assertEquals(10.0, rows.get(1).gain(), 1e-9); // 99%: 50 vs 5
        assertTrue(Double.isNaN(rows.get(2).gain())); // no bandwidth measured
        assertTrue(Double.isNaN(rows.getFirst().overFloor(2))); // no floor measured: no ratio
        assertEquals(
                Double.POSITIVE_INFINITY,
                new Compare.Row("cpu", Double.NaN, 50, Double.NaN, 0, Double.NaN, true, null)
                        .gain()); // a passive server at 0%
        assertEquals("inf", Compare.num(Double.POSITIVE_INFINITY));
        String t = Compare.table(r);
        assertTrue(t.contains("10.00"), t);
        String page = HtmlReport.render(r);
        assertTrue(page.contains("data-name=\"tcp_lat\"") && page.contains("data-name=\"send_lat\""));
        assertTrue(page.contains("no data measured")); // the bandwidth chart
    }

    @Test
    void ratiosToTheFloorOfTheSameRun() {
        var udp = new LatencyResult(64, 100, 3, 9, 4, 4, 0.1, 6, 8);
        var tcp = new LatencyResult(64, 100, 10, 90, 16, 20, 1, 50, 80);
        var busy = new LatencyResult(64, 100, 10, 90, 12, 20, 1, 50, 80);
        var write = new LatencyResult(64, 100, 1, 9, 5, 2, 0.1, 9, 8);
        var udpBw4k = new BwResult(4096, 1000, 1200, 1000, 0.256);
        var udpBw64 = new BwResult(64, 1000, 40, 30, 0.5);
        var writeBw = new BwResult(65536, 1000, 800, 700, 0.0112);
        var writeBw64 = new BwResult(64, 1000, 20, 20, 0.4);
        Map<Compare.Series, List<Compare.Point>> pts = new java.util.LinkedHashMap<>();
        pts.put(Compare.Series.UDP_LAT, List.of(new Compare.Point(Compare.Series.UDP_LAT, 64, udp, null, 100, 100)));
        pts.put(Compare.Series.TCP_LAT, List.of(new Compare.Point(Compare.Series.TCP_LAT, 64, tcp, null, 100, 100)));
        pts.put(
                Compare.Series.TCP_LAT_BUSY_POLL,
                List.of(new Compare.Point(Compare.Series.TCP_LAT_BUSY_POLL, 64, busy, null, 100, 100)));
        pts.put(
                Compare.Series.WRITE_LAT,
                List.of(new Compare.Point(Compare.Series.WRITE_LAT, 64, write, null, 100, 100)));
        pts.put(
                Compare.Series.UDP_BW,
                List.of(
                        new Compare.Point(Compare.Series.UDP_BW, 64, null, udpBw64, 100, 90),
                        new Compare.Point(Compare.Series.UDP_BW, 4096, null, udpBw4k, 100, 90)));
        pts.put(
                Compare.Series.WRITE_BW,
                List.of(
                        new Compare.Point(Compare.Series.WRITE_BW, 64, null, writeBw64, 100, 0),
                        new Compare.Point(Compare.Series.WRITE_BW, 65536, null, writeBw, 100, 0)));
        var r = new Compare.Result("soft@x", "h", 100, List.of(64, 4096, 65536), pts);
        var rows = Compare.rows(r);
        Compare.Row latRow = rows.getFirst();
        assertEquals(1.25, latRow.overFloor(latRow.write()), 1e-9); // 5 us over the floor's 4 us
        assertEquals(4.0, latRow.overFloor(latRow.tcp()), 1e-9);
        assertEquals(12.0 / 5, latRow.gain(), 1e-9); // against the better TCP variant (busy-poll)
        Compare.Row bwRow = rows.get(2);
        assertTrue(bwRow.label().contains("65536 B (UDP: 4096 B)"), bwRow.label());
        assertEquals(1000, bwRow.udp(), 1e-9); // the 4 KiB datagrams, not the 64 B ones
        assertEquals(0.7, bwRow.overFloor(bwRow.write()), 1e-9);
        Compare.Row rate = rows.get(3);
        assertEquals(0.8, rate.overFloor(rate.write()), 1e-9);
        String t = Compare.table(r);
        assertTrue(t.contains("  × udp_lat"), t);
        assertTrue(t.lines().anyMatch(l -> l.startsWith("  × udp_lat") && l.contains("1.25") && l.contains("4.00")), t);
        assertTrue(t.lines().anyMatch(l -> l.startsWith("  × udp_bw") && l.contains("0.70")), t);
        String page = HtmlReport.render(r);
        assertTrue(page.contains("<td>1.25</td>") && page.contains("<td>0.70</td>"), page);
        assertTrue(page.contains("data-name=\"tcp_lat_busy_poll\"") && page.contains("tcp_lat --busy-poll"));
    }
}
