package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The completion thread serves every endpoint of a group: one endpoint's failure on it ends that endpoint only. */
@Timeout(60)
class CompletionThreadTest {
    private static final Duration T = Duration.ofSeconds(5);

    /** An Error of the application's own, as a bug would throw. */
    private static final class HandlerBug extends Error {
        HandlerBug(String message) {
            super(message);
        }
    }

    private static Endpoint accept(ServerEndpoint server) throws Exception {
        return server.accept(Duration.ofSeconds(10));
    }

    @Test
    void aReceiveHandlerThatThrowsAnErrorEndsItsEndpointAndTheOthersAreStillServed() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            CompletableFuture<Endpoint> first = CompletableFuture.supplyAsync(() -> {
                try {
                    return accept(server);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            try (Endpoint clientA = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                    Endpoint serverA = first.get(10, TimeUnit.SECONDS)) {
                CompletableFuture<Endpoint> second = CompletableFuture.supplyAsync(() -> {
                    try {
                        return accept(server);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                try (Endpoint clientB = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                        Endpoint serverB = second.get(10, TimeUnit.SECONDS)) {
                    assertTrue(serverA.group() == serverB.group(), "both on the server's one completion thread");
                    serverA.onReceive(m -> {
                        throw new HandlerBug("bug in the application's handler");
                    });
                    clientA.sendSync("trigger".getBytes(StandardCharsets.UTF_8));
                    long deadline = System.nanoTime() + T.toNanos();
                    while (serverA.isConnected() && System.nanoTime() < deadline) Thread.sleep(5);
                    assertFalse(serverA.isConnected(), "the endpoint whose handler threw an Error is ended");
                    RdmaException e = assertThrows(RdmaException.class, () -> serverA.sendSync(new byte[] {1}));
                    assertEquals(RdmaException.Kind.HANDLER_ERROR, e.kind(), e.getMessage());
                    assertTrue(e.getMessage().contains("bug in the application's handler"), e.getMessage());
                    assertInstanceOf(HandlerBug.class, rootCause(e));

                    // the thread that ran the handler still serves B, both ways
                    clientB.sendSync("still served".getBytes(StandardCharsets.UTF_8));
                    assertEquals("still served", serverB.receive(T).text());
                    serverB.sendSync("and answers".getBytes(StandardCharsets.UTF_8));
                    assertEquals("and answers", clientB.receive(T).text());
                    assertTrue(serverB.isConnected());
                }
            }
        }
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) t = t.getCause();
        return t;
    }
}
