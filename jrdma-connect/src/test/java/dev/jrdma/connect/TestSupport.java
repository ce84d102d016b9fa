package dev.jrdma.connect;

import java.net.InetSocketAddress;
import java.time.Duration;

/** Settings shared by the tests: loopback only, short timeouts, no RNR retries (flow control must prevent RNR). */
final class TestSupport {
    private TestSupport() {}

    static {
        System.setProperty("jrdma.connect.rnrRetry", "0");
    }

    static void init() {
        // loads the class: its static initializer picks the settings
    }

    /** The address servers listen on: loopback (software device), or {@code -Djrdma.connect.test.host} (rxe0's in the guest). */
    static final String HOST = System.getProperty("jrdma.connect.test.host", "127.0.0.1");
    /** A device to run on ({@code -Djrdma.connect.test.device=rxe0} in the guest), or null: the one of {@link #HOST}. */
    static final String DEVICE = System.getProperty("jrdma.connect.test.device");

    static EndpointConfig.Builder config() {
        // 10 s on the host: a first handshake in a fresh JVM on a loaded 2-core machine (class loading, JIT) took more
        // than
        // 3 s (CreditBoundTest alone with 3 CPU hogs: 2 runs in 35 ended in 'handshake failed: timed out after 3000
        // ms');
        // tests of a timeout set their own short one. Under the guest's emulation longer, and longer still where the
        // run
        // says so (-Djrdma.connect.timeoutMs)
        long timeoutMs = Long.getLong("jrdma.connect.timeoutMs", DEVICE == null ? 10_000 : 20_000);
        return EndpointConfig.builder()
                .timeout(Duration.ofMillis(timeoutMs))
                .slabSize(1 << 16)
                .sendQueueDepth(16)
                .recvQueueDepth(8)
                .cqSize(1024)
                .device(DEVICE);
    }

    /** Every remote right: for tests whose peers read, write and use atomics on exported or granted memory. */
    static final java.util.Set<dev.jrdma.verbs.Access> ALL_RIGHTS = java.util.EnumSet.of(
            dev.jrdma.verbs.Access.REMOTE_READ,
            dev.jrdma.verbs.Access.REMOTE_WRITE,
            dev.jrdma.verbs.Access.REMOTE_ATOMIC);

    /** {@link #config()} whose queue pairs allow every remote right. */
    static EndpointConfig.Builder configWithRights() {
        return config().remoteAccess(ALL_RIGHTS);
    }

    static InetSocketAddress server() {
        return new InetSocketAddress(HOST, 0);
    }

    /** A connected pair: the server side and the client side, on one server endpoint. */
    record Pair(ServerEndpoint server, Endpoint serverSide, Endpoint clientSide) implements AutoCloseable {
        @Override
        public void close() {
            clientSide.close();
            serverSide.close();
            server.close();
        }
    }

    static Pair pair(EndpointConfig cfg) throws Exception {
        ServerEndpoint server = ServerEndpoint.bind(server(), cfg);
        try {
            Endpoint[] ends = connectAndAccept(server, cfg);
            return new Pair(server, ends[1], ends[0]);
        } catch (Exception e) {
            server.close();
            throw e;
        }
    }

    /** A new connection to {@code server} (accepted while the client connects): the client's endpoint, then the server's. */
    static Endpoint[] connectAndAccept(ServerEndpoint server, EndpointConfig cfg) throws Exception {
        // a handshake may take up to the configured timeout (a minute under the guest's emulation): wait longer than
        // that
        java.time.Duration wait = cfg.timeout().multipliedBy(2);
        var accepted = acceptAsync(server, wait);
        Endpoint client = Endpoint.connect(HOST, server.port(), cfg);
        return new Endpoint[] {client, accepted.get(wait.toMillis() + 5_000, java.util.concurrent.TimeUnit.MILLISECONDS)
        };
    }

    /**
     * {@code server.accept(timeout)} on another thread: the endpoint of the next client that completes its handshake.
     * A thread of its own (not the common pool, one thread on a 2-core machine): an accept left waiting by a failed
     * test does not hold up the next test's.
     */
    static java.util.concurrent.CompletableFuture<Endpoint> acceptAsync(
            ServerEndpoint server, java.time.Duration timeout) {
        return java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return server.accept(timeout);
                    } catch (RdmaConnectException e) {
                        throw new RuntimeException(e);
                    }
                },
                r -> Thread.ofVirtual().name("test-accept").start(r));
    }

    /**
     * Stops the owner of {@code ep}'s group from polling its CQs (completions wait there; commands still run), so
     * that a test can act on the owner before a completion is seen; run the result to resume.
     */
    static Runnable pauseCompletions(Endpoint ep) {
        ep.group().pauseCompletions(true);
        return () -> ep.group().pauseCompletions(false);
    }

    /** Runs {@code ep}'s timeout check at {@code now} (a test's time) on its group's owner, and waits for it. */
    static void checkTimeoutsOnOwner(Endpoint ep, long now) {
        ep.onOwnerAndWait(() -> {
            ep.checkTimeouts(now);
            return null;
        });
    }
}
