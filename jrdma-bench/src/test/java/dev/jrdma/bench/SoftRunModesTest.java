package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * perftest's run modes on the software device, jrdma against jrdma: {@code --run_infinitely} (a report every -D
 * seconds until the run is stopped).
 */
class SoftRunModesTest {
    /** A report line of a bandwidth run: size, iterations, peak, average, message rate. */
    private static final Pattern BW_LINE =
            Pattern.compile("^ (\\d+)\\s+(\\d+)\\s+([0-9.]+)\\s+([0-9.]+)\\s+([0-9.]+)\\s*$");

    /** Passes the report on and requests {@code stop} once {@code reports} period lines have been printed. */
    private static final class StopAfter extends PrintStream {
        private final StopSignal stop;
        private final int reports;
        private int seen;

        StopAfter(OutputStream out, StopSignal stop, int reports) {
            super(out, true, StandardCharsets.UTF_8);
            this.stop = stop;
            this.reports = reports;
        }

        @Override
        public void println(String line) {
            super.println(line);
            if (BW_LINE.matcher(line).matches() && ++seen == reports) stop.request();
        }
    }

    static Loopback.Outcome<RunResult> stoppedPair(String test, int reports, String... flags) throws Exception {
        int port = Loopback.freePort();
        PerfOptions s = PerfOptions.parse(SoftRdmaBenchTest.concat(
                new String[] {
                    test,
                    "-d",
                    SoftRdmaBenchTest.SERVER_DEV,
                    "-p",
                    "" + port,
                    "--timeout",
                    "10",
                    "--accept-timeout",
                    "20"
                },
                flags));
        PerfOptions c = PerfOptions.parse(SoftRdmaBenchTest.concat(
                new String[] {test, "-d", SoftRdmaBenchTest.CLIENT_DEV, "-p", "" + port, "--timeout", "10"},
                SoftRdmaBenchTest.concat(flags, new String[] {"127.0.0.1"})));
        StopSignal stop = new StopSignal();
        return Loopback.run(
                out -> RdmaBench.run(s, out), out -> RdmaBench.run(c, new StopAfter(out, stop, reports), stop), 60);
    }

    static List<String> bwLines(String out) {
        return out.lines().filter(l -> BW_LINE.matcher(l).matches()).toList();
    }

    @Test
    @Timeout(90)
    void runInfinitelyReportsEveryPeriodUntilStopped() throws Exception {
        var o = stoppedPair("write_bw", 3, "-s", "4096", "-D", "1", "--run_infinitely");
        // three period lines, then the stop, then the whole run's average; no peak (perftest measures none)
        List<String> lines = bwLines(o.clientOut());
        assertEquals(4, lines.size(), o.clientOut());
        assertTrue(o.clientOut().contains("User stopped traffic"), o.clientOut());
        long total = 0;
        for (String l : lines.subList(0, 3)) {
            var m = BW_LINE.matcher(l);
            assertTrue(m.matches());
            assertEquals("4096", m.group(1), l);
            assertEquals(0.0, Double.parseDouble(m.group(3)), l);
            assertTrue(Long.parseLong(m.group(2)) > 0 && Double.parseDouble(m.group(4)) > 0, l);
            total += Long.parseLong(m.group(2));
        }
        BwResult whole = o.client().bandwidth().getFirst();
        assertTrue(whole.iters() >= total, whole + " against the periods' " + total);
        // the passive server waited without a limit and printed the client's report
        assertTrue(bwLines(o.serverOut()).size() == 1, o.serverOut());

        // send_bw: the server reports its own periods too, and notices the client's stop
        var s = stoppedPair("send_bw", 2, "-s", "1024", "-D", "1", "--run_infinitely");
        assertEquals(3, bwLines(s.clientOut()).size(), s.clientOut());
        assertTrue(bwLines(s.serverOut()).size() >= 2, s.serverOut());
        assertEquals(
                s.client().bandwidth().getFirst().iters(),
                s.server().bandwidth().getFirst().iters(),
                "every send arrived\n" + s.clientOut() + s.serverOut());
    }

    @Test
    void runInfinitelyDependencies() {
        PerfOptions o = PerfOptions.parse("write_bw", "--run_infinitely");
        assertEquals(PerfOptions.DEFAULT_INFINITE_PERIOD_SEC, o.durationSec, "perftest's period without -D");
        assertTrue(o.noPeak);
        for (String[] bad : List.of(
                new String[] {"send_lat", "--run_infinitely"},
                new String[] {"write_bw", "--run_infinitely", "-e"},
                new String[] {"write_bw", "--run_infinitely", "-a"},
                new String[] {"write_bw", "--run_infinitely", "-b"},
                new String[] {"tcp_bw", "--run_infinitely"})) {
            var e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(bad));
            assertTrue(e.getMessage().contains("--run_infinitely"), e.getMessage());
        }
    }
}
