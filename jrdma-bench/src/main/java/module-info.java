/**
 * Benchmarks and diagnostics: perftest-compatible {@code jrdma perf}, the TCP baseline, comparisons with an HTML
 * report, {@code jrdma doctor}, and {@code jrdma netty-bench} (Netty NIO, epoll and jrdma-netty).
 */
module dev.jrdma.bench {
    requires transitive dev.jrdma.verbs;
    requires jdk.management;
    requires dev.jrdma.connect; // jrdma perf -R: rdma_cm
    requires dev.jrdma.netty; // jrdma netty-bench
    requires io.netty.transport.classes.epoll;

    exports dev.jrdma.bench;
    exports dev.jrdma.bench.doctor;
    exports dev.jrdma.bench.netty;
}
