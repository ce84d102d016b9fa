/**
 * Benchmarks and diagnostics: perftest-compatible {@code jrdma perf}, the TCP baseline, comparisons with an HTML
 * report, and {@code jrdma doctor}.
 */
module dev.jrdma.bench {
    requires transitive dev.jrdma.verbs;
    requires jdk.management;

    exports dev.jrdma.bench;
    exports dev.jrdma.bench.doctor;
}
