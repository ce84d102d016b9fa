package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A peer cannot make a server hold threads or slots without bound (issue 8, section 4): one deadline for the whole
 * handshake, handshakes that run side by side, a filter that throws is a rejection that frees everything, caps on
 * connections and on handshakes in progress.
 */
@Timeout(120)
class ServerLimitsTest {
    static {
        TestSupport.init();
    }

    /** A valid HELLO, as a client would send it. */
    private static byte[] hello() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ConnParams p = new ConnParams(0, 0, 0x123, 0, Gid.ZERO, 0x42, Mtu.MTU_1024);
        Handshake.writeHello(new DataOutputStream(bytes), p, 8, 4096, 0, new byte[0]);
        return bytes.toByteArray();
    }

    /** A client that sends its HELLO one byte every {@code gapMs}; completes with the ms until the server hung up. */
    private static CompletableFuture<Long> trickle(ServerEndpoint server, long gapMs) {
        return CompletableFuture.supplyAsync(() -> {
            long t0 = System.nanoTime();
            try (Socket s = new Socket(TestSupport.HOST, server.port())) {
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                byte[] h = hello();
                for (byte b : h) {
                    out.write(b);
                    out.flush();
                    Thread.sleep(gapMs);
                    if (in.available() > 0 || s.isInputShutdown()) break;
                }
                s.setSoTimeout(30_000);
                while (in.read() >= 0) {
                    // the server's answer, if any, then its end of the connection
                }
            } catch (IOException e) {
                // reset by the server: it hung up
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return (System.nanoTime() - t0) / 1_000_000;
        });
    }

    @Test
    void aTricklingClientIsCutOffAtTheDeadlineAndDelaysNobody() throws Exception {
        EndpointConfig cfg = TestSupport.config().timeout(Duration.ofSeconds(3)).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            CompletableFuture<Endpoint> accepting = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(10));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            // one byte every 300 ms: every read is well within the timeout, the whole HELLO (68 bytes) would take 20 s
            CompletableFuture<Long> trickler = trickle(server, 300);
            Thread.sleep(200);
            long t0 = System.nanoTime();
            EndpointConfig patient =
                    cfg.toBuilder().timeout(Duration.ofSeconds(10)).build();
            try (Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), patient);
                    Endpoint served = accepting.get(10, TimeUnit.SECONDS)) {
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertFalse(trickler.isDone(), "the trickling client was still in its handshake");
                assertTrue(ms < 3000, "a normal client waited " + ms + " ms behind the trickling one");
                client.sendSync(new byte[] {1});
                assertEquals(1, served.receive(Duration.ofSeconds(3)).bytes()[0]);
            }
            long cutOff = trickler.get(30, TimeUnit.SECONDS);
            assertTrue(
                    cutOff >= 2900 && cutOff < 6000,
                    "the trickling client was cut off after " + cutOff + " ms (deadline 3000 ms)");
            RdmaConnectException last = server.lastFailure();
            assertEquals(RdmaConnectException.Reason.TIMEOUT, last.reason(), last.getMessage());
            assertTrue(waitFor(() -> server.pendingHandshakes() == 0));
        }
    }

    @Test
    void aFilterThatThrowsRejectsAndFreesEverything() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            int[] calls = {0};
            server.filter((client, priv) -> {
                int n = calls[0]++;
                if (n == 0) throw new IllegalStateException("filter bug");
                if (n == 1) throw new StackOverflowError("filter recursion");
                return null;
            });
            CompletableFuture<Endpoint> accepting = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(20));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            int buffersBefore = server.group().messagePool().inUse();
            for (int i = 0; i < 2; i++) {
                RdmaConnectException e = assertThrows(
                        RdmaConnectException.class, () -> Endpoint.connect(TestSupport.HOST, server.port(), cfg));
                assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e.getMessage());
                assertTrue(e.getMessage().contains("filter failed"), e.getMessage());
            }
            assertTrue(waitFor(() -> server.pendingHandshakes() == 0));
            assertEquals(
                    0,
                    server.group().endpointCount(),
                    "no endpoint, QP or receive slot was kept for the rejected clients");
            assertEquals(buffersBefore, server.group().messagePool().inUse());
            // and the server goes on accepting
            try (Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                    Endpoint served = accepting.get(10, TimeUnit.SECONDS)) {
                assertTrue(client.isConnected() && served.isConnected());
            }
        }
    }

    @Test
    void handshakesInProgressAreCapped() throws Exception {
        EndpointConfig cfg = TestSupport.config()
                .timeout(Duration.ofSeconds(2))
                .maxPendingHandshakes(1)
                .build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            CompletableFuture.runAsync(() -> {
                try {
                    server.accept(Duration.ofSeconds(1));
                } catch (RdmaConnectException ignored) {
                    // only starts the acceptor
                }
            });
            CompletableFuture<Long> trickler = trickle(server, 200);
            assertTrue(waitFor(() -> server.pendingHandshakes() == 1));
            // the client waits for its turn within its own timeout (shorter than the trickler's hold), then gives up
            // with the server's reason
            EndpointConfig impatient =
                    TestSupport.config().timeout(Duration.ofMillis(500)).build();
            long t0 = System.nanoTime();
            RdmaConnectException e = assertThrows(
                    RdmaConnectException.class, () -> Endpoint.connect(TestSupport.HOST, server.port(), impatient));
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("maxPendingHandshakes"), e.getMessage());
            assertTrue(waitedMs >= 250, "the client retried within its timeout before giving up: " + waitedMs + " ms");
            // counted; how often depends on the machine's load (an attempt the server does not get to in time ends
            // in the client's deadline, and the client still reports the refusal)
            assertTrue(server.counters().refusedMaxPendingHandshakes() >= 1, "refusal counted: " + server.counters());
            trickler.get(20, TimeUnit.SECONDS);
            // the slot is free again
            Endpoint[] pair = TestSupport.connectAndAccept(server, cfg);
            pair[0].close();
            pair[1].close();
        }
    }

    /**
     * A burst of connects from one host (a pool opening its connections) larger than the server's handshake limit for
     * one source: the server refuses the surplus with its reason, the clients wait their turn within their timeout, and
     * every connection is made.
     */
    @Test
    void aBurstFromOneHostOverTheHandshakeLimitWaitsItsTurn() throws Exception {
        EndpointConfig cfg =
                TestSupport.config().maxPendingHandshakesPerSource(2).build();
        int clients = 12;
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            List<CompletableFuture<Endpoint>> connecting = new ArrayList<>();
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(clients);
            List<Endpoint> all = new ArrayList<>();
            try {
                for (int i = 0; i < clients; i++) {
                    connecting.add(CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    return Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                                } catch (RdmaConnectException e) {
                                    throw new java.util.concurrent.CompletionException(e);
                                }
                            },
                            pool));
                }
                for (int i = 0; i < clients; i++) all.add(server.accept(Duration.ofSeconds(30)));
                for (CompletableFuture<Endpoint> f : connecting) all.add(f.get(30, TimeUnit.SECONDS));
                for (Endpoint ep : all) assertTrue(ep.isConnected());
            } finally {
                for (Endpoint ep : all) ep.close();
                pool.shutdownNow();
            }
        }
    }

    @Test
    void connectionsAreCapped() throws Exception {
        EndpointConfig cfg = TestSupport.config().maxConnections(2).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            List<Endpoint> held = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) held.addAll(List.of(TestSupport.connectAndAccept(server, cfg)));
                RdmaConnectException e = assertThrows(
                        RdmaConnectException.class, () -> Endpoint.connect(TestSupport.HOST, server.port(), cfg));
                assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e.getMessage());
                assertTrue(e.getMessage().contains("maximum of 2 connections"), e.getMessage());
                // one closes: there is room again
                held.get(0).close();
                held.get(1).close();
                assertTrue(waitFor(() -> server.group().endpointCount() == 1));
                held.addAll(List.of(TestSupport.connectAndAccept(server, cfg)));
            } finally {
                held.forEach(Endpoint::close);
            }
        }
    }

    /**
     * A client refused for a handshake limit asks again; when the next attempt runs into its deadline (a server too
     * busy to get to it, as on a loaded machine), the client reports the server's refusal, not a silent server.
     */
    @Test
    void aClientRefusedUntilItsTimeoutGetsTheServersReason() throws Exception {
        String refusal = "the server has 1 handshakes in progress (maxPendingHandshakes); try again later";
        try (ServerSocket fake = new ServerSocket(0, 8, java.net.InetAddress.getByName(TestSupport.HOST))) {
            List<Socket> unanswered = new ArrayList<>();
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                try {
                    try (Socket first = fake.accept()) {
                        Handshake.writeReject(
                                new DataOutputStream(first.getOutputStream()), Endpoint.VERDICT_REJECT, refusal);
                        first.shutdownOutput();
                        first.getInputStream().readAllBytes(); // until the client hangs up
                    }
                    while (true) unanswered.add(fake.accept()); // later attempts: accepted, never answered
                } catch (IOException e) {
                    // the test closed the fake server
                }
            });
            EndpointConfig cfg =
                    TestSupport.config().timeout(Duration.ofMillis(300)).build();
            RdmaConnectException e = assertThrows(
                    RdmaConnectException.class, () -> Endpoint.connect(TestSupport.HOST, fake.getLocalPort(), cfg));
            assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("(maxPendingHandshakes)"), e.getMessage());
            fake.close();
            server.get(10, TimeUnit.SECONDS);
            for (Socket s : unanswered) s.close();
        }
    }

    static boolean waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) return false;
            Thread.sleep(10);
        }
        return true;
    }
}
