package dev.jrdma.bench;

import dev.jrdma.bench.PerftestWire.Dest;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;

/**
 * The warm-ups that let the JIT compile a test's loop before it is timed: on this side's QPs connected to themselves
 * before the exchange ({@link #selfConnected}), and, for the bandwidth tests whose server is passive, against the peer
 * ({@link #withPeer}).
 */
final class WarmUp {
    /** Warm-up iterations by default (at most -n): enough for C2 to compile the loop and the verbs it calls. */
    private static final long DEFAULT_ITERATIONS = 20_000;
    /** The round after the wait for the JIT, right before the timed loop (at most -n). */
    static final long REWARM_ITERATIONS = 1000;

    private final BenchResources resources;
    private final Progress progress;
    private final PrintStream out;

    WarmUp(BenchResources resources, Progress progress, PrintStream out) {
        this.resources = resources;
        this.progress = progress;
        this.out = out;
    }

    /**
     * Runs the test's own loop on this side's QPs connected to themselves before the exchange starts, so that the
     * JIT has compiled the loop and the verbs under it before anything is timed (a loop that starts interpreted is
     * many times slower until C2 is done: 3,000 iterations measure the compiler). Then the QPs go back to RESET and
     * INIT, the CQs are drained and the buffer is cleared, so the measured run starts as a fresh one.
     * {@code -Djrdma.perf.warmup=N} sets the iterations (default min(-n, 20000); 0 = none). Passive sides skip it.
     */
    void selfConnected() {
        BenchResources r = resources;
        PerfOptions o = r.options;
        long n = Long.getLong("jrdma.perf.warmup", Math.min(o.effectiveIters(), DEFAULT_ITERATIONS));
        boolean server = o.isServer();
        boolean active = switch (r.test) {
            case WRITE_LAT, SEND_LAT -> true;
            case WRITE_BW, READ_BW, ATOMIC_BW ->
                false; // their client (with -b both sides) warms up on the connection (withPeer)
            case SEND_BW -> o.bandwidthSender(); // its receiver counts receives
            default -> !server; // the read/atomic latency servers do not run the loop
        };
        if (n <= 0 || !active) return;
        int size = r.sizes().getFirst();
        r.rem = new Dest[o.numQp];
        r.warmingUp = true;
        long t0 = System.nanoTime();
        try {
            for (int i = 0; i < o.numQp; i++) {
                r.rem[i] = r.my[i];
                r.connectQp(i);
            }
            switch (r.test) {
                case WRITE_LAT -> new PingPongLatency(r, progress).writeLat(size, true, n);
                case SEND_LAT -> {
                    r.postInitialRecvs(size, n);
                    new PingPongLatency(r, progress).sendLat(size, false, n);
                }
                case READ_LAT, ATOMIC_LAT -> new RoundTripLatency(r, progress).run(size, n, 0);
                case SEND_BW -> {
                    r.postInitialRecvs(size, n);
                    new Bandwidth(r, progress)
                            .client(
                                    size,
                                    Math.min(n, r.postedRecvs),
                                    0); // no receiver reposts: at most the receives posted
                }
                default -> new Bandwidth(r, progress).client(size, n, 0);
            }
            awaitJitQuiet(o.timeoutSec);
            if (!o.quiet) out.printf(" Warm-up         : %d iterations, %.1f ms%n", n, (System.nanoTime() - t0) / 1e6);
        } catch (RuntimeException e) {
            out.println(" Warm-up         : skipped (" + e.getMessage() + ")");
        } finally {
            r.warmingUp = false;
            r.resetAfterWarmUp();
        }
    }

    /**
     * The client of write_bw, read_bw and atomic_bw runs its loop against the server before the timed run, as
     * perftest's {@code --perform_warm_up} does: the server is passive (it only waits for the closing handshake), so
     * the extra requests change nothing there but let the server's JVM compile its receive path too, which the warm-up
     * on QPs connected to themselves could not (64 B writes over the rings averaged 0.3 Mpps in a 300,000-message run
     * that began cold against 4.3 Mpps once warm). Runs rounds of min(-n, 20000) requests for {@link PerfOptions#BW_WARMUP_NS},
     * or {@code -Djrdma.perf.warmup=N} requests once (0 = none), then waits for this JVM's JIT to settle, which also
     * leaves the server's compiler a quiet moment to finish.
     */
    void withPeer(int size) {
        PerfOptions o = resources.options;
        Long asked = Long.getLong("jrdma.perf.warmup");
        if (asked != null && asked <= 0) return;
        long round = asked != null ? asked : Math.min(o.effectiveIters(), DEFAULT_ITERATIONS);
        long t0 = System.nanoTime(), n = 0;
        Bandwidth loop = new Bandwidth(resources, progress);
        loop.warmUp = true;
        try { // a failure here is the run's failure: the QPs are the ones the timed run uses
            do {
                loop.client(size, round, 0);
                n += round;
            } while (asked == null && System.nanoTime() - t0 < PerfOptions.BW_WARMUP_NS);
            awaitJitQuiet(o.timeoutSec);
            // the wait above left both devices idle for 200 ms or more: a software device's receive threads are asleep
            // in their links then, and the timed loop would begin with their wake-ups (a 64-byte write_bw loop of 5.3
            // ms, 4.9 of them before its first completion, against 0.3-0.4 ms a round while warm): one short round
            // wakes them first
            loop.client(size, Math.min(round, REWARM_ITERATIONS), 0);
            n += Math.min(round, REWARM_ITERATIONS);
        } finally {
            progress.clear();
        }
        if (!o.quiet)
            out.printf(
                    " Warm-up         : %d iterations with the peer, %.1f ms%n",
                    n * o.numQp, (System.nanoTime() - t0) / 1e6);
    }

    /**
     * Waits until the JIT has nothing in its queues and nothing in progress (read with the {@code Compiler.queue}
     * diagnostic command), twice 100 ms apart, so that the compilations the warm-up queued finish before the timed loop
     * instead of during it; at most a quarter of --timeout (at least 2 s, at most 30 s): the peer waits meanwhile. Under
     * emulation (the Soft-RoCE guest) a C2 compilation takes seconds, and a timed loop that starts in the interpreter
     * or in C1's code posts through an FFM downcall that is not compiled yet. The total compilation time, which the
     * wait watched before, changes only when a compilation ends: a long one in progress looked quiet. Where the queue
     * cannot be read: until 100 ms pass without a finished compilation.
     */
    static void awaitJitQuiet(int timeoutSec) {
        long deadline = System.nanoTime() + Math.clamp(timeoutSec * 250L, 2_000L, 30_000L) * 1_000_000L;
        var jit = ManagementFactory.getCompilationMXBean();
        long last = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        int quiet = 0;
        while (System.nanoTime() < deadline) {
            String queue = compilerQueue();
            if (queue != null) {
                quiet = queue.contains("::") ? 0 : quiet + 1; // each compile task names its method as Class::method
                if (quiet >= 2) return;
            } else if (last >= 0) {
                long now = jit.getTotalCompilationTime();
                if (now == last && quiet++ > 0) return;
                last = now;
            } else {
                return;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * A reading of this JVM's JIT, to tell whether it compiled anything between the reading and a later
     * {@link #compiledSince}: a warm-in round that compiled nothing is a rehearsal of the timed loop whose own code is
     * all compiled (a quiet compile queue alone is not that: the device's receive path sat in C1's profiling code
     * through a 20,000-message warm-in and reached C2 inside the timed loop; sendbw20).
     *
     * @param compileMs the JIT's total compilation time at the reading, in ms (-1: not available)
     */
    record JitReading(long compileMs) {
        /** {@return a reading now} */
        static JitReading now() {
            var jit = ManagementFactory.getCompilationMXBean();
            return new JitReading(
                    jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1);
        }

        /**
         * What the JIT did since this reading: the milliseconds of compilations that ended meanwhile, and whether it
         * is still busy (more than {@link #QUIET_MS} of them, or a compilation queued or in progress now).
         *
         * @return the JIT's work since this reading
         */
        JitWork compiledSince() {
            long ms = compileMs < 0 ? 0 : Math.max(0, now().compileMs - compileMs);
            String queue = compilerQueue();
            return new JitWork(ms, ms > QUIET_MS || (queue != null && queue.contains("::")));
        }
    }

    /**
     * The most compilation time (ms) that still counts as a quiet JIT: the total moves by 1 ms when a tiny
     * compilation crosses a millisecond, which changes nothing in a loop of 250 ms.
     */
    static final long QUIET_MS = 1;

    /**
     * What the JIT did between two moments ({@link JitReading#compiledSince}).
     *
     * @param compiledMs the milliseconds of compilations that ended in between
     * @param busy       it compiled more than {@link #QUIET_MS}, or has a compilation queued or in progress now
     */
    record JitWork(long compiledMs, boolean busy) {}

    /** {@code jcmd PID Compiler.queue} from inside: the compilations in progress and queued, or null where unavailable. */
    private static String compilerQueue() {
        try {
            return (String) ManagementFactory.getPlatformMBeanServer()
                    .invoke(
                            new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
                            "compilerQueue",
                            new Object[] {null},
                            new String[] {String[].class.getName()});
        } catch (Exception | LinkageError e) {
            return null;
        }
    }
}
