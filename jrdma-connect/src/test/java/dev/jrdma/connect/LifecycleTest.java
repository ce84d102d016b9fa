package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Graceful close, a peer that closes, a peer that disappears, and operations that never complete. */
@Timeout(60)
class LifecycleTest {
    private static final Duration T = Duration.ofSeconds(3);

    private static RdmaException cause(CompletableFuture<?> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
        return assertInstanceOf(RdmaException.class, e.getCause());
    }

    @Test
    void gracefulCloseTellsThePeer() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            c.sendSync("last words".getBytes(StandardCharsets.UTF_8));
            c.close();
            c.close(); // idempotent
            // what was sent before the close is still received, then receive fails: the peer closed
            assertEquals("last words", s.receive(T).text());
            RdmaException e = assertThrows(RdmaException.class, () -> s.receive(T));
            assertEquals(RdmaException.Kind.PEER_CLOSED, e.kind(), e.getMessage());
            assertTrue(e.getMessage().contains("closed the connection"));
            assertFalse(s.isConnected());
            RdmaException after = assertThrows(RdmaException.class, () -> c.sendSync(new byte[1]));
            assertEquals(RdmaException.Kind.CLOSED, after.kind());
        }
    }

    @Test
    void aGoodbyeNeverOvertakesTheMessagesAcknowledgedBeforeIt() throws Exception {
        // the peer says goodbye only after its last message was acknowledged, so that message's completion is in
        // the CQ before the goodbye arrives; the completion thread may still be between an empty poll and the
        // goodbye's task (descheduled): here it is held there, inside a task, until both have arrived
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            CompletableFuture<Message> last = s.receive();
            java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1),
                    release = new java.util.concurrent.CountDownLatch(1);
            s.group().submit(() -> {
                held.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertTrue(held.await(5, TimeUnit.SECONDS));
            c.sendSync("last words".getBytes(StandardCharsets.UTF_8)); // acknowledged: its receive completion is queued
            s.peerBye(); // the goodbye, as the control channel reports it
            release.countDown();
            assertEquals("last words", last.get(5, TimeUnit.SECONDS).text());
            RdmaException e = assertThrows(RdmaException.class, () -> s.receive(T));
            assertEquals(RdmaException.Kind.PEER_CLOSED, e.kind(), e.getMessage());
        }
    }

    @Test
    void closeFailsWaitingReceives() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            CompletableFuture<Message> f = p.serverSide().receive();
            p.serverSide().close();
            assertEquals(RdmaException.Kind.CLOSED, cause(f).kind());
        }
    }

    @Test
    void closeWaitsForOutstandingOperations() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer target = p.serverSide().pool().allocate(1 << 15);
                RegisteredBuffer local = p.clientSide().pool().allocate(1 << 15)) {
            Endpoint c = p.clientSide();
            RemoteBuffer granted = p.serverSide()
                    .grant(target, 0, 1 << 15, TestSupport.ALL_RIGHTS)
                    .remote();
            CompletableFuture<?>[] writes = new CompletableFuture<?>[40];
            for (int i = 0; i < writes.length; i++) writes[i] = c.write(local, 0, granted, 0, 1 << 15);
            c.close();
            for (CompletableFuture<?> w : writes)
                assertTrue(w.isDone() && !w.isCompletedExceptionally(), "close let the writes finish");
        }
    }

    @Test
    void outstandingOperationFailsWithinTheTimeoutWhenThePeerStopsAnswering() throws Exception {
        EndpointConfig cfg =
                TestSupport.configWithRights().timeout(Duration.ofMillis(800)).build();
        try (TestSupport.Pair p = TestSupport.pair(cfg);
                RegisteredBuffer target = p.serverSide().pool().allocate(64);
                RegisteredBuffer local = p.clientSide().pool().allocate(64)) {
            RemoteBuffer granted =
                    p.serverSide().grant(target, 0, 64, TestSupport.ALL_RIGHTS).remote();
            // the peer's queue pair vanishes without a word (as if its host lost power)
            p.serverSide().queuePair().close();
            long t0 = System.nanoTime();
            RdmaException e = cause(p.clientSide().read(local, 0, granted, 0, 8));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(
                    e.kind() == RdmaException.Kind.TIMEOUT || e.kind() == RdmaException.Kind.COMPLETION_ERROR,
                    e.getMessage());
            assertTrue(ms < 800 + 1000, "failed after " + ms + " ms");
        }
    }

    @Test
    void aPeerProcessThatDiesFailsOutstandingOperations() throws Exception {
        EndpointConfig cfg = TestSupport.config().timeout(Duration.ofSeconds(5)).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            Process child = ChildMain.start("halt", "127.0.0.1", Integer.toString(server.port()), "127.0.0.5");
            try (Endpoint ep = server.accept(Duration.ofSeconds(20))) {
                assertEquals("ready", ep.receive(Duration.ofSeconds(10)).text());
                CompletableFuture<Message> pending = ep.receive();
                // the child halts as this arrives, maybe before its adapter acknowledged it: the send may succeed or
                // fail
                ep.send(new byte[] {1});
                long t0 = System.nanoTime();
                RdmaException e = cause(pending);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(RdmaException.Kind.PEER_GONE, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("without a goodbye"), e.getMessage());
                assertTrue(ms < 5000, "took " + ms);
                assertEquals(
                        RdmaException.Kind.PEER_GONE,
                        assertThrows(RdmaException.class, () -> ep.sendSync(new byte[1]))
                                .kind());
            } finally {
                assertTrue(child.waitFor(10, TimeUnit.SECONDS));
                assertEquals(
                        3, child.exitValue(), new String(child.getInputStream().readAllBytes()));
            }
        }
    }
}
