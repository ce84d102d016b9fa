package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every way connection set-up can fail ends within its timeout, with the right reason and a message that says so. */
@Timeout(30)
class FailureModesTest {
    private static final Duration T = Duration.ofMillis(1500);

    private static EndpointConfig cfg() {
        return TestSupport.config().timeout(T).build();
    }

    private static RdmaConnectException connectFails(
            String host, int port, EndpointConfig cfg, RdmaConnectException.Reason reason, String text) {
        long t0 = System.nanoTime();
        RdmaConnectException e = assertThrows(RdmaConnectException.class, () -> Endpoint.connect(host, port, cfg));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(reason, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains(text), e.getMessage());
        assertTrue(ms < cfg.timeout().toMillis() + 1000, "took " + ms + " ms");
        return e;
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Test
    void nothingListening() throws Exception {
        connectFails(
                "127.0.0.1", freePort(), cfg(), RdmaConnectException.Reason.NOTHING_LISTENING, "nothing is listening");
    }

    @Test
    void nothingListeningWithRetryStillEndsAtTheTimeout() throws Exception {
        long t0 = System.nanoTime();
        RdmaConnectException e = assertThrows(
                RdmaConnectException.class,
                () -> Endpoint.connect(
                        "127.0.0.1",
                        freePort(),
                        TestSupport.config()
                                .timeout(Duration.ofMillis(700))
                                .retryConnect(true)
                                .build()));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(RdmaConnectException.Reason.NOTHING_LISTENING, e.reason(), e.getMessage());
        assertTrue(ms >= 600 && ms < 2000, "took " + ms + " ms");
    }

    @Test
    void serverThatNeverAnswersTimesOut() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            // the kernel completes the TCP connect from the backlog; nobody ever answers the handshake
            long t0 = System.nanoTime();
            RdmaConnectException e = connectFails(
                    "127.0.0.1", silent.getLocalPort(), cfg(), RdmaConnectException.Reason.TIMEOUT, "did not answer");
            assertTrue((System.nanoTime() - t0) / 1_000_000 >= T.toMillis() - 100);
        }
    }

    @Test
    void peerGoneDuringHandshake() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            CompletableFuture.runAsync(() -> {
                try (Socket s = fake.accept()) {
                    s.getInputStream().read(new byte[16]); // part of the hello, then gone
                } catch (Exception ignored) {
                    // test side
                }
            });
            connectFails(
                    "127.0.0.1",
                    fake.getLocalPort(),
                    cfg(),
                    RdmaConnectException.Reason.PEER_GONE,
                    "closed the connection during the handshake");
        }
    }

    @Test
    void serverOfAnotherVersion() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            CompletableFuture.runAsync(() -> {
                try (Socket s = fake.accept()) {
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    out.writeInt(Endpoint.HANDSHAKE_MAGIC);
                    out.writeShort(99);
                    out.writeByte(Endpoint.VERDICT_ACCEPT);
                    out.flush();
                    s.getInputStream().transferTo(java.io.OutputStream.nullOutputStream()); // until the client closes
                } catch (Exception ignored) {
                    // test side
                }
            });
            connectFails(
                    "127.0.0.1",
                    fake.getLocalPort(),
                    cfg(),
                    RdmaConnectException.Reason.VERSION_MISMATCH,
                    "speaks handshake version 99");
        }
    }

    @Test
    void clientOfAnotherVersionIsToldWhy() throws Exception {
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg())) {
            CompletableFuture<Void> accepting = CompletableFuture.runAsync(
                    () -> assertThrows(RdmaConnectException.class, () -> server.accept(Duration.ofMillis(1200))));
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                out.writeInt(Endpoint.HANDSHAKE_MAGIC);
                out.writeShort(99);
                out.flush();
                DataInputStream in = new DataInputStream(s.getInputStream());
                assertEquals(Endpoint.HANDSHAKE_MAGIC, in.readInt());
                assertEquals(Endpoint.HANDSHAKE_VERSION, in.readUnsignedShort());
                assertEquals(Endpoint.VERDICT_VERSION, in.readUnsignedByte());
                assertTrue(in.readUTF().contains("client speaks handshake version 99"));
            }
            accepting.get();
            assertEquals(
                    RdmaConnectException.Reason.VERSION_MISMATCH,
                    server.lastFailure().reason());
        }
    }

    @Test
    void notAJrdmaServer() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            CompletableFuture.runAsync(() -> {
                try (Socket s = fake.accept()) {
                    s.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    s.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                } catch (Exception ignored) {
                    // test side
                }
            });
            connectFails(
                    "127.0.0.1",
                    fake.getLocalPort(),
                    cfg(),
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "not a jrdma endpoint");
        }
    }

    @Test
    void unknownHost() {
        connectFails(
                "no-such-host.invalid", 4000, cfg(), RdmaConnectException.Reason.ADDRESS_ERROR, "cannot resolve host");
    }

    @Test
    void localAddressNotOnThisHost() throws Exception {
        EndpointConfig c =
                TestSupport.config().timeout(T).localAddress("192.0.2.1").build();
        connectFails(
                "127.0.0.1", freePort(), c, RdmaConnectException.Reason.ADDRESS_ERROR, "not an address of this host");
    }

    @Test
    void rejectedByTheServer() throws Exception {
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg())) {
            server.filter((addr, priv) ->
                    new String(priv, StandardCharsets.UTF_8).equals("let me in") ? null : "wrong password");
            CompletableFuture<Endpoint> accepting = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(5));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            connectFails(
                    "127.0.0.1",
                    server.port(),
                    TestSupport.config()
                            .timeout(T)
                            .privateData("guess".getBytes(StandardCharsets.UTF_8))
                            .build(),
                    RdmaConnectException.Reason.REJECTED,
                    "rejected the connection: wrong password");
            // the server keeps accepting: the right private data gets in
            try (Endpoint ok = Endpoint.connect(
                            "127.0.0.1",
                            server.port(),
                            TestSupport.config()
                                    .timeout(T)
                                    .privateData("let me in".getBytes(StandardCharsets.UTF_8))
                                    .build());
                    Endpoint accepted = accepting.get()) {
                assertEquals("let me in", new String(accepted.peerPrivateData(), StandardCharsets.UTF_8));
                assertTrue(ok.isConnected());
            }
        }
    }

    @Test
    void acceptWithoutClientTimesOut() throws Exception {
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg())) {
            long t0 = System.nanoTime();
            RdmaConnectException e =
                    assertThrows(RdmaConnectException.class, () -> server.accept(Duration.ofMillis(300)));
            assertEquals(RdmaConnectException.Reason.TIMEOUT, e.reason());
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 1500);
        }
    }

    @Test
    void listenOnForeignAddress() {
        RdmaConnectException e = assertThrows(
                RdmaConnectException.class, () -> ServerEndpoint.bind(new InetSocketAddress("192.0.2.1", 0), cfg()));
        assertEquals(RdmaConnectException.Reason.ADDRESS_ERROR, e.reason());
    }
}
