package dev.jrdma.examples;

import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * Command-line options shared by the echo, key-value and lock examples.
 * <pre>
 *   (no flag)        both sides in this process: the server on 127.0.0.1, clients from 127.0.0.2.. on the software device
 *   --server         only the server: listens on --bind (default 0.0.0.0) and --port
 *   --connect HOST   only the client side, to the server on HOST:--port (from --local, if given)
 *   --port P  --bind ADDR  --local ADDR  --device DEV  --timeout SECONDS
 * </pre>
 */
public final class ExampleOptions {
    /** Which sides of the example run in this process. */
    public enum Role {
        /** Server and clients here (no {@code --server} or {@code --connect}). */
        BOTH,
        /** Only the server ({@code --server}). */
        SERVER,
        /** Only the client side ({@code --connect HOST}). */
        CLIENT
    }

    /** Which sides run here; {@link Role#BOTH} by default. */
    public Role role = Role.BOTH;
    /** {@code --connect HOST}: the server's host, or null. */
    public String host;
    /**
     * {@code --port P}: the server's TCP port; the example's default port unless given, 0 (any) when both sides run here.
     */
    public int port;
    /** {@code --bind ADDR}: the server's listening address, or null for 0.0.0.0. */
    public String bind;
    /** {@code --local ADDR}: a lone client's local address, or null. */
    public String local;
    /** {@code --device DEV}: the RDMA device, or null for {@link Verbs#defaultDevice()}. */
    public String device;
    /** {@code --timeout SECONDS}: how long set-up and waits may take; 30 s by default. */
    public Duration timeout = Duration.ofSeconds(30);
    /** {@code --count N}: how many operations; -1 lets the example pick its default. */
    public int count = -1;
    /** {@code --clients N}: how many clients (lock example); -1 lets the example pick its default. */
    public int clients = -1;

    /** The defaults: both sides here, the example's port 0, a 30-second timeout, the example's own counts. */
    public ExampleOptions() {}

    /**
     * Parses the shared flags.
     *
     * @param args        the command line
     * @param defaultPort the example's port when {@code --port} is not given
     * @return the options
     * @throws IllegalArgumentException for an unknown flag or a flag without its value
     * @throws NumberFormatException for a number that does not parse
     */
    public static ExampleOptions parse(String[] args, int defaultPort) {
        ExampleOptions o = new ExampleOptions();
        o.port = defaultPort;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--server" -> o.role = Role.SERVER;
                case "--connect" -> {
                    o.role = Role.CLIENT;
                    o.host = value(args, ++i, a);
                }
                case "--port", "-p" -> o.port = Integer.parseInt(value(args, ++i, a));
                case "--bind" -> o.bind = value(args, ++i, a);
                case "--local" -> o.local = value(args, ++i, a);
                case "--device", "-d" -> o.device = value(args, ++i, a);
                case "--timeout" -> o.timeout = Duration.ofSeconds(Long.parseLong(value(args, ++i, a)));
                case "--count", "-n" -> o.count = Integer.parseInt(value(args, ++i, a));
                case "--clients" -> o.clients = Integer.parseInt(value(args, ++i, a));
                default ->
                    throw new IllegalArgumentException(
                            "unknown option " + a
                                    + " (use --server | --connect HOST, --port P, --bind ADDR, --local ADDR, --device DEV, --timeout S, --count N, --clients N)");
            }
        }
        return o;
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) throw new IllegalArgumentException(flag + " needs a value");
        return args[i];
    }

    /** {@return true when both sides run here on the software device (each side then gets its own loopback address)} */
    public boolean softLocal() {
        if (device != null) return device.startsWith("soft");
        Device d = Verbs.defaultDevice();
        return d.provider().equals("soft");
    }

    /**
     * {@return endpoint settings from the options ({@code --timeout}, {@code --device}), for the example to add its own}
     */
    public EndpointConfig.Builder config() {
        EndpointConfig.Builder b = EndpointConfig.builder().timeout(timeout).device(device);
        return b;
    }

    private String localRdmaAddress;

    /**
     * Where both sides meet when they run here: 127.0.0.1 on the software device (each side its own loopback
     * address); on a native device (e.g. rxe0 or a NIC) the IPv4 address of its GID table, since rdma_cm only
     * connects addresses that an RDMA device serves.
     *
     * @return the address, found once
     */
    public String meetingAddress() {
        if (localRdmaAddress != null) return localRdmaAddress;
        String found = "127.0.0.1";
        if (!softLocal()) {
            Device d = device != null ? Verbs.device(device) : Verbs.defaultDevice();
            try (dev.jrdma.verbs.Context ctx = d.open()) {
                for (dev.jrdma.verbs.GidEntry g : ctx.gidTable(1)) {
                    if (g.gid().isIpv4Mapped()) {
                        found = g.gid().toInetAddress().getHostAddress();
                        break;
                    }
                }
            } catch (RuntimeException e) {
                // keep loopback
            }
        }
        return localRdmaAddress = found;
    }

    /**
     * {@return the server's listening address: the meeting address when both sides run here, else {@code --bind}
     * (0.0.0.0 by default) and {@code --port}}
     */
    public InetSocketAddress serverAddress() {
        if (role == Role.BOTH) return new InetSocketAddress(meetingAddress(), port);
        return new InetSocketAddress(bind == null ? "0.0.0.0" : bind, port);
    }

    /**
     * The local address of client number {@code i}.
     *
     * @param i the client's number, from 0
     * @return {@code --local} for a lone client; 127.0.0.(2+i) when both sides run here on the software device; else null
     * (any address)
     */
    public String clientLocal(int i) {
        if (role == Role.CLIENT) return local;
        return softLocal() && device == null ? "127.0.0." + (2 + i) : null;
    }

    /**
     * Runs {@code task} on a thread of its own (not a pool: blocking waits must not run other tasks inside them).
     *
     * @param <T>  the task's result type
     * @param name the thread's name
     * @param task what to run
     * @return completes with the task's result or its exception
     */
    public static <T> java.util.concurrent.CompletableFuture<T> background(
            String name, java.util.concurrent.Callable<T> task) {
        java.util.concurrent.CompletableFuture<T> f = new java.util.concurrent.CompletableFuture<>();
        Thread.ofPlatform().name(name).daemon().start(() -> {
            try {
                f.complete(task.call());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    /**
     * {@return the host a client connects to: {@code --connect}'s host, or the meeting address when both sides run here}
     */
    public String serverHost() {
        return role == Role.CLIENT ? host : meetingAddress();
    }
}
