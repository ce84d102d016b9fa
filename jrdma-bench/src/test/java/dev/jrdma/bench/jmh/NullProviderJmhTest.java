package dev.jrdma.bench.jmh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link NullProviderBench} (C, bare FFM and jrdma over the null provider, in one JVM, one run) and prints
 * the ns per post+poll pair and what jrdma adds over C:
 * {@code mvn -pl jrdma-bench test -Dtest=NullProviderJmhTest -Djrdma.jmh=true} (off by default: a benchmark is
 * not a unit test; needs gcc and libibverbs-dev). {@code -Djrdma.jmh.iterations=N} measured iterations of 1 s (default 5).
 */
@EnabledIfSystemProperty(named = "jrdma.jmh", matches = "true")
class NullProviderJmhTest {
    @Test
    void postPollOverTheNullProvider() throws Exception {
        int n = Integer.getInteger("jrdma.jmh.iterations", 5);
        Options opt = new OptionsBuilder()
                .include(NullProviderBench.class.getName())
                .forks(0)
                .warmupIterations(3)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(n)
                .measurementTime(TimeValue.seconds(1))
                .build();
        Collection<RunResult> results = new Runner(opt).run();
        Map<String, double[]> ns = new LinkedHashMap<>();
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            ns.put(name.substring(name.lastIndexOf('.') + 1), new double[] {
                r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError()
            });
        }
        assertEquals(8, ns.size(), ns.keySet().toString());
        double c = ns.get("c")[0];
        System.out.println("null provider, ns per post_send + poll_cq pair (JMH, avg ± 99.9% error):");
        for (var e : ns.entrySet())
            System.out.printf(
                    "  %-10s %8.1f ± %.1f ns%s%n",
                    e.getKey(),
                    e.getValue()[0],
                    e.getValue()[1],
                    e.getKey().equals("c")
                                    || e.getKey().endsWith("Post")
                                    || e.getKey().endsWith("Poll")
                            ? ""
                            : String.format("   (+%.1f ns over C)", e.getValue()[0] - c));
        ns.values().forEach(v -> assertTrue(v[0] > 0 && Double.isFinite(v[0])));
        cpuTime();
    }

    /**
     * The same loops timed in this thread's CPU time (ThreadMXBean), the best of several rounds: on a machine whose
     * cores other processes share, JMH's wall-clock scores include the time this thread was not running, and
     * this does not. Printed after JMH's table (same JVM, same run).
     */
    static void cpuTime() throws Exception {
        var mx = java.lang.management.ManagementFactory.getThreadMXBean();
        NullProviderBench b = new NullProviderBench();
        b.setup();
        try {
            int n = Integer.getInteger("jrdma.jmh.cpuOps", 2_000_000), rounds = 7;
            String[] names = {"c", "ffm", "jrdma", "jrdmaPost", "jrdmaPoll", "fast", "fastPost", "fastPoll"};
            double[] best = new double[names.length];
            java.util.Arrays.fill(best, Double.MAX_VALUE);
            long sink = 0;
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < names.length; k++) {
                    long t0 = mx.getCurrentThreadCpuTime();
                    switch (k) {
                        case 0 -> {
                            for (int i = 0; i < n; i += NullProviderBench.BATCH) sink += b.c();
                        }
                        case 1 -> {
                            for (int i = 0; i < n; i += NullProviderBench.BATCH) sink += b.ffm();
                        }
                        case 2 -> {
                            for (int i = 0; i < n; i++) sink += b.jrdma();
                        }
                        case 3 -> {
                            for (int i = 0; i < n; i++) b.jrdmaPost();
                        }
                        case 4 -> {
                            for (int i = 0; i < n; i++) sink += b.jrdmaPoll();
                        }
                        case 5 -> {
                            for (int i = 0; i < n; i++) sink += b.fast();
                        }
                        case 6 -> {
                            for (int i = 0; i < n; i++) b.fastPost();
                        }
                        default -> {
                            for (int i = 0; i < n; i++) sink += b.fastPoll();
                        }
                    }
                    best[k] = Math.min(best[k], (mx.getCurrentThreadCpuTime() - t0) / (double) n);
                }
            }
            assertTrue(sink > 0);
            System.out.printf(
                    "null provider, ns of thread CPU time per post_send + poll_cq pair (best of %d rounds of %d):%n",
                    rounds, n);
            for (int k = 0; k < names.length; k++)
                System.out.printf(
                        "  %-10s %8.1f ns%s%n",
                        names[k],
                        best[k],
                        k == 1 || k == 2 || k == 5 ? String.format("   (+%.1f ns over C)", best[k] - best[0]) : "");
        } finally {
            b.tearDown();
        }
    }
}
