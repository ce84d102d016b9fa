package dev.jrdma.cli;

import dev.jrdma.examples.Rping;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma rping}: rdma-core's rping over jrdma's rdma_cm API, option for option; talks to {@code rping}. */
@Command(
        name = "rping",
        mixinStandardHelpOptions = true,
        description = {
            "rping's ping-pong over rdma_cm (native devices): interoperates with rdma-core's rping both ways.",
            "  jrdma rping -s -a 10.99.0.1 -C 5        and on the other side: rping -c -a 10.99.0.1 -C 5 -V -v"
        })
public final class RpingCommand implements Callable<Integer> {
    /** The {@code jrdma rping} subcommand; picocli creates it and sets its options from the command line. */
    public RpingCommand() {}

    @Option(names = "-s", description = "Server side.")
    boolean server;

    @Option(names = "-c", description = "Client side.")
    boolean client;

    @Option(
            names = "-a",
            paramLabel = "ADDR",
            required = true,
            description = "Address (server: to listen on; client: the server's).")
    String address;

    @Option(
            names = "-p",
            paramLabel = "PORT",
            description = "Port (default: ${DEFAULT-VALUE}).",
            defaultValue = "" + Rping.DEFAULT_PORT)
    int port;

    @Option(
            names = "-C",
            paramLabel = "COUNT",
            description = "Pings (0: until interrupted; default: ${DEFAULT-VALUE}).",
            defaultValue = "0")
    int count;

    @Option(
            names = "-S",
            paramLabel = "SIZE",
            description = "Ping data size in bytes (default: ${DEFAULT-VALUE}).",
            defaultValue = "64")
    int size;

    @Option(names = "-V", description = "Client: check the data that came back.")
    boolean validate;

    @Option(names = "-v", description = "Print the ping data.")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        if (server == client) {
            System.err.println("jrdma rping: give -s (server) or -c (client)");
            return 2;
        }
        return Rping.run(new Rping.Options(server, address, port, count, size, validate, verbose), System.out);
    }
}
