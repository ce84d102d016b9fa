package dev.jrdma.bench;

import dev.jrdma.verbs.VerbsException;
import java.io.IOException;
import java.io.PrintStream;

/** {@code jrdma perf}: parses perftest-style flags and runs a test, the TCP baseline, the UDP floor, or compare. Returns the exit status. */
public final class Perf {
    private Perf() {}

    /**
     * Runs {@link #run} on the standard streams and exits with its status.
     *
     * @param args perftest-style flags, e.g. {@code send_lat -s 64 -n 1000 HOST}
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * --run_infinitely: the run ends when the process is asked to (SIGINT, SIGTERM: perftest's "User stopped
     * traffic"); the shutdown hook stops the loop and gives it a few seconds to finish with its peer.
     */
    private static void runUntilStopped(PerfOptions o, PrintStream out) {
        StopSignal stop = new StopSignal();
        java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
        Thread hook = new Thread(
                () -> {
                    stop.request();
                    try {
                        ended.await(5, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "jrdma-perf-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            RdmaBench.run(o, out, stop);
        } finally {
            ended.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running: it returns now that the run has ended
            }
        }
    }

    /**
     * Parses the flags and runs the test (or prints the usage for {@code --help}). Never throws: failures are
     * printed on {@code err}.
     *
     * @param args perftest-style flags and the test's name
     * @param out  where the report goes
     * @param err  where errors go
     * @return 0: ran; 1: the run failed; 2: bad command line
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        PerfOptions o;
        try {
            o = PerfOptions.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("jrdma perf: " + e.getMessage());
            err.println("(jrdma perf --help lists the tests and flags)");
            return 2;
        }
        if (o.version) {
            // perftest's -V: "Version: " and the version its exchange announces
            out.println("Version: " + PerftestWire.VERSION);
            return 0;
        }
        if (o.help) {
            out.print(PerfOptions.usage());
            return 0;
        }
        try {
            if (o.compare) {
                if (o.isServer()) return Compare.server(o, out);
                Compare.clientAndReport(o, out);
                return 0;
            }
            if (o.test.isTcp()) TcpBench.run(o, out);
            else if (o.test.isUdp()) UdpBench.run(o, out);
            else if (o.runInfinitely) runUntilStopped(o, out);
            else RdmaBench.run(o, out);
            return 0;
        } catch (BenchException | VerbsException | IllegalArgumentException e) {
            out.flush();
            err.println("jrdma perf " + (o.compare ? "compare" : o.test.id()) + ": " + e.getMessage());
            return 1;
        } catch (IOException e) {
            err.println("jrdma perf: " + e.getMessage());
            return 1;
        } catch (RuntimeException e) {
            err.println("jrdma perf " + (o.compare ? "compare" : o.test.id()) + ": " + e);
            if (Boolean.getBoolean("jrdma.debug")) e.printStackTrace(err);
            return 1;
        }
    }
}
