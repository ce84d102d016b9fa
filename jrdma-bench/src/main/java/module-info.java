/**
 * Benchmarks and diagnostics: perftest-compatible {@code jrdma perf}, the TCP baseline, comparisons with an HTML
 * report, {@code jrdma doctor}, {@code jrdma netty-bench} (Netty NIO, epoll and jrdma-netty) and {@code jrdma grpc-bench}.
 */
@SuppressWarnings("requires-automatic") // gRPC's jars are automatic modules, named by their manifests
module dev.jrdma.bench {
    requires transitive dev.jrdma.verbs;
    requires jdk.management;
    requires dev.jrdma.connect; // jrdma perf -R: rdma_cm
    requires dev.jrdma.netty; // jrdma netty-bench
    requires io.netty.transport.classes.epoll;
    requires io.grpc; // jrdma grpc-bench
    requires io.grpc.netty;
    requires io.grpc.stub;

    exports dev.jrdma.bench;
    exports dev.jrdma.bench.doctor;
    exports dev.jrdma.bench.netty;
}
