package dev.jrdma.cli;

import dev.jrdma.bench.netty.GrpcBench;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma grpc-bench}: gRPC's unary call between two processes over epoll and jrdma-netty, one table. */
@Command(
        name = "grpc-bench",
        mixinStandardHelpOptions = true,
        description = {
            "gRPC-java's unary echo between two processes (this one and a server child JVM), over grpc-netty on Netty",
            "epoll (loopback TCP) and on jrdma-netty (RDMA): latency p50/p99 (one call at a time), calls per second",
            "with several calls in flight, and the CPU of both processes per call."
        })
public final class GrpcBenchCommand implements Callable<Integer> {
    /** The {@code jrdma grpc-bench} subcommand; picocli creates it and sets its options from the command line. */
    public GrpcBenchCommand() {}

    @Option(
            names = {"-s", "--size"},
            description = "Request (and answer) size in bytes (default: ${DEFAULT-VALUE}).",
            defaultValue = "64")
    int size;

    @Option(
            names = {"-n", "--iterations"},
            description = "Calls measured for latency (default: ${DEFAULT-VALUE}).",
            defaultValue = "20000")
    int iterations;

    @Option(
            names = "--warmup",
            description = "Calls before measuring (default: ${DEFAULT-VALUE}) and 1 s of the rate phase per transport,"
                    + " then rounds of 1,000 calls of each transport in turn until no process's JIT compiles any more"
                    + " (at most 30 s); fewer than 1,000: those calls only. The timed calls take turns too.",
            defaultValue = "5000")
    int warmup;

    @Option(
            names = "--in-flight",
            description = "Calls outstanding in the rate phase (default: ${DEFAULT-VALUE}).",
            defaultValue = "32")
    int inFlight;

    @Option(
            names = {"-D", "--seconds"},
            description = "Seconds of the rate phase (default: ${DEFAULT-VALUE}).",
            defaultValue = "5")
    double seconds;

    @Option(names = "--transports", split = ",", description = "Any of epoll,jrdma (default: both).")
    List<String> transports;

    @Option(
            names = "--server-host",
            description = "Address the server process listens on (default: ${DEFAULT-VALUE}).",
            defaultValue = "127.0.0.1")
    String serverHost;

    @Option(
            names = "--client-host",
            description =
                    "Local address of the RDMA client: on the software device each process gets its own (default: ${DEFAULT-VALUE}; 'none': let the route pick).",
            defaultValue = "127.0.0.2")
    String clientHost;

    @Option(
            names = {"-v", "--verbose"},
            description = "Print the p50 of every warm-up round and of every 1,000 timed calls, per transport.")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        GrpcBench.Options o = new GrpcBench.Options(
                size,
                iterations,
                warmup,
                inFlight,
                seconds,
                serverHost,
                "none".equals(clientHost) ? null : clientHost,
                transports == null ? GrpcBench.Options.defaults().transports() : transports,
                verbose);
        List<GrpcBench.Row> rows = new GrpcBench(o, System.err).run();
        System.out.print(GrpcBench.table(rows, o));
        return 0;
    }
}
