package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmId;
import dev.jrdma.cm.ConnParam;
import dev.jrdma.cm.PortSpace;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server on rdma_cm under a client that stalls its handshake (it takes the server's answer and never confirms):
 * the other clients are served meanwhile, and the cap on handshakes in progress rejects with its reason. Needs
 * rdma_cm and a kernel RDMA device (the guest: {@code -Djrdma.connect.test.device=rxe0 -Djrdma.connect.test.host=10.99.0.1}).
 */
@Timeout(240)
class CmServerTest {
    static {
        TestSupport.init();
    }

    private static EndpointConfig.Builder cmConfig() {
        Assumptions.assumeTrue(
                TestSupport.DEVICE != null && CmEventChannel.unavailableReason().isEmpty(),
                "needs rdma_cm and a kernel RDMA device");
        // the stalled handshake lasts until this deadline: long enough that a serial acceptor could not hide it
        return TestSupport.config().connectionManager(ConnectionManager.RDMA_CM).timeout(Duration.ofSeconds(60));
    }

    /** A client that sends a valid request, takes the server's answer (CONNECT_RESPONSE) and never confirms. */
    private static final class StallingClient implements AutoCloseable {
        final CmEventChannel ch = CmEventChannel.create();
        final CmId id = CmId.create(ch, PortSpace.TCP);

        StallingClient() throws Exception {}

        CmEvent connect(EndpointConfig cfg, int port) throws Exception {
            id.resolveAddress(null, new InetSocketAddress(TestSupport.HOST, port), Duration.ofSeconds(30));
            assertEquals(CmEventType.ADDR_RESOLVED, next().type());
            id.resolveRoute(Duration.ofSeconds(30));
            assertEquals(CmEventType.ROUTE_RESOLVED, next().type());
            id.connect(new ConnParam()
                    .privateData(CmConnector.hello(cfg, null))
                    .qpNum(0x123)
                    .responderResources(1)
                    .initiatorDepth(1)
                    .retryCount(7)
                    .rnrRetryCount(7));
            return next();
        }

        CmEvent next() throws Exception {
            CmEvent e = ch.next(Duration.ofSeconds(60));
            assertNotNull(e, "no rdma_cm event within 60 s");
            return e;
        }

        @Override
        public void close() {
            id.close();
            ch.close();
        }
    }

    @Test
    void aClientThatStallsItsHandshakeDelaysNobody() throws Exception {
        EndpointConfig cfg = cmConfig().build();
        try (ServerEndpoint server = ServerEndpoint.bind(new InetSocketAddress(TestSupport.HOST, 0), cfg)) {
            CompletableFuture<Endpoint> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(120));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            try (StallingClient stall = new StallingClient()) {
                assertEquals(
                        CmEventType.CONNECT_RESPONSE,
                        stall.connect(cfg, server.port()).type(),
                        "the server answered the request");
                // the server now waits for the stalled client's confirmation until its deadline; a second client is
                // set up meanwhile
                try (Endpoint good = Endpoint.connect(TestSupport.HOST, server.port(), cfg)) {
                    Endpoint serverSide = accepted.get(120, java.util.concurrent.TimeUnit.SECONDS);
                    assertEquals(
                            1,
                            server.pendingHandshakes(),
                            "the stalled handshake is still in progress while the other client is served");
                    good.sendSync("after the stall".getBytes());
                    assertEquals(
                            "after the stall",
                            new String(
                                    serverSide.receive(Duration.ofSeconds(30)).bytes()));
                    serverSide.close();
                }
            }
        }
    }

    @Test
    void requestsBeyondThePendingCapAreRejectedWithTheReason() throws Exception {
        EndpointConfig cfg = cmConfig().maxPendingHandshakes(1).build();
        try (ServerEndpoint server = ServerEndpoint.bind(new InetSocketAddress(TestSupport.HOST, 0), cfg)) {
            CompletableFuture.runAsync(() -> {
                try {
                    server.accept(Duration.ofSeconds(120));
                } catch (RdmaConnectException ignored) {
                    // only starts the acceptor here
                }
            });
            try (StallingClient stall = new StallingClient()) {
                assertEquals(
                        CmEventType.CONNECT_RESPONSE,
                        stall.connect(cfg, server.port()).type());
                RdmaConnectException e = assertThrows(
                        RdmaConnectException.class,
                        () -> Endpoint.connect(TestSupport.HOST, server.port(), cfg)
                                .close());
                assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e::getMessage);
                assertTrue(e.getMessage().contains("maxPendingHandshakes"), e.getMessage());
            }
        }
    }
}
