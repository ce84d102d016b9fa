package dev.jrdma.cli;

import dev.jrdma.bench.netty.NettyBench;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma netty-bench}: one echo workload over Netty NIO, epoll and jrdma-netty (and bare jrdma-connect), one table. */
@Command(
        name = "netty-bench",
        mixinStandardHelpOptions = true,
        description = {
            "The same echo workload over Netty NIO and epoll (loopback TCP) and jrdma-netty (RDMA), plus jrdma-connect's",
            "Endpoint without Netty: latency p50/p99 (one connection, ping-pong), requests per second and CPU",
            "(several connections, several requests in flight). Both sides run in this process."
        })
public final class NettyBenchCommand implements Callable<Integer> {
    /** The {@code jrdma netty-bench} subcommand; picocli creates it and sets its options from the command line. */
    public NettyBenchCommand() {}

    @Option(
            names = {"-s", "--size"},
            description = "Request (and echo) size in bytes (default: ${DEFAULT-VALUE}).",
            defaultValue = "64")
    int size;

    @Option(
            names = {"-n", "--iterations"},
            description = "Round trips measured for latency (default: ${DEFAULT-VALUE}).",
            defaultValue = "5000")
    int iterations;

    @Option(
            names = "--warmup",
            description = "Round trips before measuring (default: ${DEFAULT-VALUE}).",
            defaultValue = "1000")
    int warmup;

    @Option(
            names = {"-c", "--connections"},
            description = "Connections for the rate (default: ${DEFAULT-VALUE}).",
            defaultValue = "4")
    int connections;

    @Option(
            names = "--depth",
            description = "Requests in flight per connection for the rate (default: ${DEFAULT-VALUE}).",
            defaultValue = "8")
    int depth;

    @Option(
            names = {"-D", "--seconds"},
            description = "Seconds of the rate phase (default: ${DEFAULT-VALUE}).",
            defaultValue = "5")
    double seconds;

    @Option(
            names = "--transports",
            split = ",",
            description = "Any of udp,nio,epoll,jrdma,endpoint,send_lat (default: all).")
    List<String> transports;

    @Option(
            names = "--server-host",
            description = "Address the servers listen on (default: ${DEFAULT-VALUE}).",
            defaultValue = "127.0.0.1")
    String serverHost;

    @Option(
            names = "--client-host",
            description =
                    "Local address of the RDMA clients: on the software device each side gets its own (default: ${DEFAULT-VALUE}; 'none': let the route pick).",
            defaultValue = "127.0.0.2")
    String clientHost;

    @Override
    public Integer call() throws Exception {
        // both sides live in this process: any free UDP port serves the software devices, and leaves 4791 to others
        if (System.getProperty("jrdma.soft.port") == null)
            System.setProperty("jrdma.soft.port", "0"); // 0: the provider picks one
        List<String> ts = transports == null ? NettyBench.Options.defaults().transports() : transports;
        NettyBench.Options o = new NettyBench.Options(
                size,
                iterations,
                warmup,
                connections,
                depth,
                seconds,
                serverHost,
                "none".equals(clientHost) ? null : clientHost,
                ts);
        List<NettyBench.Row> rows = new NettyBench(o, System.err).run();
        System.out.print(NettyBench.table(rows, o));
        return 0;
    }
}
