package dev.jrdma.cli;

import dev.jrdma.examples.EchoExample;
import dev.jrdma.examples.ExampleOptions;
import dev.jrdma.examples.GrpcExample;
import dev.jrdma.examples.KvExample;
import dev.jrdma.examples.LockExample;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code jrdma example echo|kv|lock}: the jrdma-connect examples, both sides here by default (on the software
 * device each side gets its own loopback address), or one side per host with {@code --server} / {@code --connect HOST}.
 */
@Command(
        name = "example",
        mixinStandardHelpOptions = true,
        description = {
            "Run an example built on jrdma-connect: echo (send/receive), kv (key-value lookup by one-sided RDMA READ),",
            "lock (a distributed lock with compare-and-swap), grpc (gRPC-java over jrdma's Netty transport: unary and",
            "server-streaming calls). Both sides run here unless --server or --connect is given."
        })
public final class ExampleCommand implements Callable<Integer> {
    /** The {@code jrdma example} subcommand; picocli creates it and sets its options from the command line. */
    public ExampleCommand() {}

    @Parameters(index = "0", paramLabel = "NAME", description = "echo, kv, lock or grpc")
    String name;

    @Option(names = "--server", description = "Run only the server side (listens on --bind, default 0.0.0.0).")
    boolean server;

    @Option(names = "--connect", paramLabel = "HOST", description = "Run only the client side, connecting to HOST.")
    String connect;

    @Option(
            names = {"-p", "--port"},
            description =
                    "TCP port (default: 18611 echo, 18612 kv, 18613 lock, 18614 grpc; a free one when both sides run here).")
    Integer port;

    @Option(
            names = "--bind",
            paramLabel = "ADDR",
            description = "Server: the address to listen on (and whose device to use).")
    String bind;

    @Option(
            names = "--local",
            paramLabel = "ADDR",
            description = "Client: the local address to connect from (and whose device to use).")
    String local;

    @Option(
            names = {"-d", "--ib-dev"},
            paramLabel = "DEV",
            description = "Device (default: the one that reaches the address).")
    String device;

    @Option(
            names = {"-n", "--count"},
            description = "echo: messages; kv: table entries; lock: increments per client; grpc: unary calls.")
    Integer count;

    @Option(
            names = "--clients",
            description = "lock: number of clients (server: how many to wait for); echo/kv server: clients to serve.")
    Integer clients;

    @Option(
            names = "--timeout",
            description = "Seconds before connect/accept/any operation gives up (default: ${DEFAULT-VALUE}).",
            defaultValue = "30")
    int timeout;

    @Override
    public Integer call() throws Exception {
        if (server && connect != null) throw new IllegalArgumentException("--server and --connect exclude each other");
        List<String> args = new ArrayList<>();
        if (server) args.add("--server");
        if (connect != null) args.addAll(List.of("--connect", connect));
        if (port != null) args.addAll(List.of("--port", port.toString()));
        if (bind != null) args.addAll(List.of("--bind", bind));
        if (local != null) args.addAll(List.of("--local", local));
        if (device != null) args.addAll(List.of("--device", device));
        if (count != null) args.addAll(List.of("--count", count.toString()));
        if (clients != null) args.addAll(List.of("--clients", clients.toString()));
        args.addAll(List.of("--timeout", Integer.toString(timeout)));
        String[] a = args.toArray(String[]::new);
        return switch (name) {
            case "echo" -> EchoExample.run(ExampleOptions.parse(a, EchoExample.DEFAULT_PORT), System.out);
            case "kv" -> KvExample.run(ExampleOptions.parse(a, KvExample.DEFAULT_PORT), System.out);
            case "lock" -> LockExample.run(ExampleOptions.parse(a, LockExample.DEFAULT_PORT), System.out);
            case "grpc" -> GrpcExample.run(ExampleOptions.parse(a, GrpcExample.DEFAULT_PORT), System.out);
            default ->
                throw new IllegalArgumentException("no example named '" + name + "': use echo, kv, lock or grpc");
        };
    }
}
