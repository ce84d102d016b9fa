package dev.jrdma.examples;

import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.RdmaException;
import dev.jrdma.connect.RegisteredBuffer;
import dev.jrdma.connect.RemoteBuffer;
import dev.jrdma.connect.RemoteLock;
import dev.jrdma.connect.ServerEndpoint;
import dev.jrdma.verbs.Access;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A distributed lock on a remote 8-byte word with RDMA compare-and-swap. The server exports two words: the lock
 * and a counter. Each client, {@code --count} times: lock, RDMA-read the counter, add one, RDMA-write it back,
 * unlock. The increment is not atomic, so only the lock keeps updates from being lost; the server checks that
 * the counter equals clients x count.
 * <pre>
 *   jrdma example lock [--clients 3] [--count 100]
 *   jrdma example lock --server --clients 2        on host A (waits for 2 clients)
 *   jrdma example lock --connect A                 on hosts B and C
 * </pre>
 */
public final class LockExample {
    /** The TCP port the lock server listens on unless {@code --port} says otherwise. */
    public static final int DEFAULT_PORT = 18613;

    private LockExample() {} // only static entry points

    /**
     * Runs the example from the command line and exits with its status.
     *
     * @param args the {@link ExampleOptions} flags, and {@code --clients N}
     * @throws Exception when set-up or an RDMA operation fails
     */
    public static void main(String[] args) throws Exception {
        System.exit(run(ExampleOptions.parse(args, DEFAULT_PORT), System.out));
    }

    /**
     * Runs the server, the clients or both: {@code --clients} clients (3 here, 1 for a lone server) each take the lock
     * {@code --count} times (100 by default) to increment the shared counter.
     *
     * @param o   the parsed options
     * @param out where the progress and the final count are printed
     * @return 0 when the counter equals clients × count (and the local clients succeeded), 1 otherwise
     * @throws Exception when set-up or an RDMA operation fails
     */
    public static int run(ExampleOptions o, PrintStream out) throws Exception {
        int count = o.count < 0 ? 100 : o.count;
        int clients = o.clients < 0 ? (o.role == ExampleOptions.Role.SERVER ? 1 : 3) : o.clients;
        if (o.role == ExampleOptions.Role.CLIENT) return clients(o, o.port, clients, count, out);
        if (o.role == ExampleOptions.Role.BOTH) o.port = 0;
        // clients take the lock with compare-and-swap and update the counter with READ and WRITE
        try (ServerEndpoint server = ServerEndpoint.bind(
                        o.serverAddress(),
                        o.config()
                                .remoteAccess(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC)
                                .build());
                RegisteredBuffer words = server.pool().allocate(64)) {
            words.segment().fill((byte) 0);
            server.export(words.remote());
            out.printf(
                    "lock server on %s (device %s): lock word at %s, counter 8 bytes after it%n",
                    server.localAddress(), server.group().device().name(), words.remote());
            CompletableFuture<Integer> local = o.role == ExampleOptions.Role.BOTH
                    ? ExampleOptions.background("lock-clients", () -> clients(o, server.port(), clients, count, out))
                    : CompletableFuture.completedFuture(0);
            List<Endpoint> eps = new ArrayList<>();
            try {
                for (int i = 0; i < clients; i++) eps.add(server.accept(o.timeout));
                for (Endpoint ep : eps) {
                    try {
                        ep.receive(Duration.ofMinutes(10)); // "done"
                    } catch (RdmaException e) {
                        out.println("server: a client ended without finishing: " + e.getMessage());
                    }
                }
            } finally {
                eps.forEach(Endpoint::close);
            }
            int rc = local.get();
            long counter = words.segment().get(ValueLayout.JAVA_LONG, 8);
            long expected = (long) clients * count;
            out.printf(
                    "server: counter = %d, expected %d: %s%n",
                    counter,
                    expected,
                    counter == expected
                            ? "no update was lost, the lock kept the clients apart"
                            : "FAILED, updates were lost");
            return counter == expected ? rc : 1;
        }
    }

    private static int clients(ExampleOptions o, int port, int n, int count, PrintStream out) throws Exception {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (int c = 0; c < n; c++) {
            int id = c;
            all.add(ExampleOptions.background("lock-client-" + id, () -> {
                client(o, port, id, count, out);
                return null;
            }));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        return 0;
    }

    private static void client(ExampleOptions o, int port, int id, int count, PrintStream out) throws Exception {
        try (Endpoint ep = o.config()
                        .localAddress(o.clientLocal(id))
                        .retryConnect(true)
                        .connect(o.serverHost(), port);
                RegisteredBuffer local = ep.pool().allocate(8)) {
            RemoteBuffer shared = ep.peerExport();
            RemoteLock lock = new RemoteLock(ep, shared.slice(0, 8));
            long t0 = System.nanoTime();
            for (int i = 0; i < count; i++) {
                lock.lock();
                try {
                    ep.readSync(local, 0, shared, 8, 8);
                    local.segment()
                            .set(ValueLayout.JAVA_LONG, 0, local.segment().get(ValueLayout.JAVA_LONG, 0) + 1);
                    ep.writeSync(local, 0, shared, 8, 8);
                } finally {
                    lock.unlock();
                }
            }
            out.printf(
                    "client %d (%s): %d increments under the lock, %.1f us each%n",
                    id, ep.group().device().name(), count, (System.nanoTime() - t0) / 1e3 / Math.max(1, count));
            ep.sendSync("done".getBytes());
        }
    }
}
