package dev.jrdma.examples;

import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.Message;
import dev.jrdma.connect.RdmaException;
import dev.jrdma.connect.ServerEndpoint;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * Echo over RDMA Send/Receive with jrdma-connect: the server sends every message back; the client sends
 * {@code --count} messages, checks each echo, and prints the round-trip times.
 * <pre>
 *   jrdma example echo                     both sides here
 *   jrdma example echo --server            on host A
 *   jrdma example echo --connect A         on host B
 * </pre>
 */
public final class EchoExample {
    /** The TCP port the echo server listens on unless {@code --port} says otherwise. */
    public static final int DEFAULT_PORT = 18611;

    private EchoExample() {} // only static entry points

    /**
     * Runs the example from the command line and exits with its status.
     *
     * @param args the {@link ExampleOptions} flags
     * @throws Exception when set-up or a transfer fails
     */
    public static void main(String[] args) throws Exception {
        System.exit(run(ExampleOptions.parse(args, DEFAULT_PORT), System.out));
    }

    /**
     * Runs the server, the client or both (with {@code --count} messages, 1000 by default).
     *
     * @param o   the parsed options
     * @param out where the progress and the round-trip times are printed
     * @return 0 when every echo came back intact, 1 when one did not
     * @throws Exception when set-up or a transfer fails
     */
    public static int run(ExampleOptions o, PrintStream out) throws Exception {
        int count = o.count < 0 ? 1000 : Math.max(1, o.count);
        if (o.role == ExampleOptions.Role.CLIENT) return client(o, o.port, count, out);
        if (o.role == ExampleOptions.Role.BOTH) o.port = 0;
        try (ServerEndpoint server =
                ServerEndpoint.bind(o.serverAddress(), o.config().build())) {
            out.printf(
                    "echo server on %s (device %s)%n",
                    server.localAddress(), server.group().device().name());
            if (o.role == ExampleOptions.Role.SERVER) {
                int clients = o.clients < 0 ? 1 : o.clients;
                for (int i = 0; i < clients; i++) serve(server, o.timeout, out);
                return 0;
            }
            CompletableFuture<Void> serving = ExampleOptions.background("echo-server", () -> {
                serve(server, o.timeout, out);
                return null;
            });
            int rc = client(o, server.port(), count, out);
            serving.get();
            return rc;
        }
    }

    private static void serve(ServerEndpoint server, Duration timeout, PrintStream out) throws Exception {
        try (Endpoint ep = server.accept(timeout)) {
            out.printf("server: client %s connected%n", ep.remoteAddress());
            int[] echoed = {0};
            while (true) {
                Message m;
                try {
                    m = ep.receive(Duration.ofMinutes(10));
                } catch (RdmaException e) {
                    if (e.kind() == RdmaException.Kind.PEER_CLOSED || e.kind() == RdmaException.Kind.PEER_GONE) break;
                    throw e;
                }
                if (m.length() == 3 && m.text().equals("bye")) break;
                ep.send(m.bytes()); // echo; nobody needs to wait for the send's future here
                echoed[0]++;
            }
            out.printf("server: echoed %d messages, client said bye%n", echoed[0]);
        }
    }

    private static int client(ExampleOptions o, int port, int count, PrintStream out) throws Exception {
        try (Endpoint ep =
                o.config().localAddress(o.clientLocal(0)).retryConnect(true).connect(o.serverHost(), port)) {
            out.printf(
                    "client: connected to %s from QP 0x%x (device %s)%n",
                    ep.remoteAddress(), ep.qpNum(), ep.group().device().name());
            long[] rtt = new long[count];
            for (int i = 0; i < count; i++) {
                byte[] msg = ("echo " + i).getBytes(StandardCharsets.UTF_8);
                long t0 = System.nanoTime();
                ep.send(msg);
                byte[] back = ep.receive(o.timeout).bytes();
                rtt[i] = System.nanoTime() - t0;
                if (!Arrays.equals(msg, back)) {
                    out.printf(
                            "client: FAILED, message %d came back as \"%s\"%n",
                            i, new String(back, StandardCharsets.UTF_8));
                    return 1;
                }
            }
            ep.sendSync("bye".getBytes(StandardCharsets.UTF_8));
            Arrays.sort(rtt);
            out.printf(
                    "client: %d echoes ok; round trip min %.1f us, median %.1f us, 99%% %.1f us%n",
                    count, rtt[0] / 1e3, rtt[count / 2] / 1e3, rtt[Math.min(count - 1, (int) (count * 0.99))] / 1e3);
            return 0;
        }
    }
}
