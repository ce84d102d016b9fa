package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class RemoteLockTest {
    @Test
    void tryLockTimesOutAndUnlockChecksTheOwner() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer word = p.serverSide().pool().allocate(8)) {
            word.segment().set(ValueLayout.JAVA_LONG, 0, 0);
            RemoteBuffer granted =
                    p.serverSide().grant(word, 0, 8, TestSupport.ALL_RIGHTS).remote();
            RemoteLock a = new RemoteLock(p.clientSide(), granted, 1);
            RemoteLock b = new RemoteLock(p.clientSide(), granted, 2);
            assertTrue(a.tryLock());
            assertEquals(1, word.segment().get(ValueLayout.JAVA_LONG, 0));
            long t0 = System.nanoTime();
            assertFalse(b.tryLock(Duration.ofMillis(200)));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 190 && ms < 1000, "tryLock gave up after " + ms + " ms");
            assertThrows(IllegalMonitorStateException.class, b::unlock);
            a.unlock();
            assertEquals(0, word.segment().get(ValueLayout.JAVA_LONG, 0));
            assertTrue(b.tryLock(Duration.ofMillis(200)));
            word.segment().set(ValueLayout.JAVA_LONG, 0, 99); // someone broke the lock
            assertThrows(IllegalMonitorStateException.class, b::unlock);
        }
    }

    /**
     * Issue 8 §5: an acquire whose compare-and-swap executed at the peer but whose answer never reached the lock
     * (here: the client's completion thread is held while the endpoint gives the operation up, as when the answer is
     * lost and the timeout or RETRY_EXC_ERR ends it) leaves the word holding this owner's id. Before, the lock said
     * "not held" and nobody could ever take or release the word; now it is UNCERTAIN, refuses to guess, and
     * releaseIfHeld through a new connection frees the word, and only while it holds this owner's id.
     */
    @Test
    void anAcquireWhoseAnswerIsLostIsUncertainUntilReleaseIfHeld() throws Exception {
        EndpointConfig cfg = TestSupport.configWithRights().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                RegisteredBuffer word = server.pool().allocate(8)) {
            word.segment().set(ValueLayout.JAVA_LONG, 0, 0);
            Endpoint[] firstPair = TestSupport.connectAndAccept(server, cfg);
            try (Endpoint first = firstPair[0];
                    Endpoint firstServed = firstPair[1]) {
                RemoteLock lock = new RemoteLock(
                        first,
                        firstServed.grant(word, 0, 8, TestSupport.ALL_RIGHTS).remote(),
                        7);
                // the client's owner stops polling its CQ: the answer reaches the device, but the lock never sees it
                Runnable resume = TestSupport.pauseCompletions(first);
                CompletableFuture<Boolean> acquire = new CompletableFuture<>();
                Thread.ofPlatform().daemon().start(() -> {
                    try {
                        acquire.complete(lock.tryLock());
                    } catch (Throwable t) {
                        acquire.completeExceptionally(t);
                    }
                });
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (word.segment().get(ValueLayout.JAVA_LONG, 0) == 0 && System.nanoTime() < end) Thread.sleep(1);
                assertEquals(
                        7, word.segment().get(ValueLayout.JAVA_LONG, 0), "the compare-and-swap executed at the peer");
                TestSupport.checkTimeoutsOnOwner(
                        first, System.nanoTime() + TimeUnit.HOURS.toNanos(1)); // its answer is overdue: given up
                ExecutionException failed =
                        assertThrows(ExecutionException.class, () -> acquire.get(10, TimeUnit.SECONDS));
                assertInstanceOf(RdmaException.class, failed.getCause());
                resume.run();

                assertEquals(RemoteLock.State.UNCERTAIN, lock.state());
                assertFalse(lock.isHeldByMe());
                assertEquals(
                        7, word.segment().get(ValueLayout.JAVA_LONG, 0), "taken at the peer, by nobody who knows it");
                IllegalStateException refused = assertThrows(IllegalStateException.class, lock::tryLock);
                assertTrue(refused.getMessage().contains("releaseIfHeld"), refused.getMessage());
                assertThrows(IllegalMonitorStateException.class, lock::unlock);

                // the way out, through a new connection with its own grant of the word
                Endpoint[] secondPair = TestSupport.connectAndAccept(server, cfg);
                try (Endpoint second = secondPair[0];
                        Endpoint secondServed = secondPair[1]) {
                    RemoteBuffer again = secondServed
                            .grant(word, 0, 8, TestSupport.ALL_RIGHTS)
                            .remote();
                    RemoteLock other = new RemoteLock(second, again, 8);
                    assertFalse(other.tryLock(), "the word is still taken: without the way out nobody ever gets it");
                    assertTrue(lock.releaseIfHeld(second, again), "the word held this owner's id");
                    assertEquals(0, word.segment().get(ValueLayout.JAVA_LONG, 0));
                    assertEquals(RemoteLock.State.NOT_HELD, lock.state());
                    assertTrue(other.tryLock(Duration.ofSeconds(1)));
                    assertFalse(lock.releaseIfHeld(second, again), "another owner's lock is never released");
                    assertEquals(8, word.segment().get(ValueLayout.JAVA_LONG, 0));
                    other.unlock();
                    // the lock works on through the new connection
                    assertTrue(lock.tryLock(Duration.ofSeconds(1)));
                    assertEquals(7, word.segment().get(ValueLayout.JAVA_LONG, 0));
                    lock.unlock();
                    assertEquals(0, word.segment().get(ValueLayout.JAVA_LONG, 0));
                }
            }
        }
    }

    @Test
    void contendingProcessesKeepMutualExclusion() throws Exception {
        int clients = 3, iterations = 25;
        EndpointConfig cfg =
                TestSupport.configWithRights().timeout(Duration.ofSeconds(10)).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                RegisteredBuffer shared = server.pool().allocate(64)) {
            shared.segment().fill((byte) 0);
            server.export(shared.remote());
            List<Process> children = new ArrayList<>();
            List<Endpoint> endpoints = new ArrayList<>();
            try {
                for (int i = 0; i < clients; i++) {
                    children.add(ChildMain.start(
                            "lock",
                            "127.0.0.1",
                            Integer.toString(server.port()),
                            "127.0.0." + (2 + i),
                            Integer.toString(iterations)));
                }
                for (int i = 0; i < clients; i++) endpoints.add(server.accept(Duration.ofSeconds(30)));
                for (Endpoint ep : endpoints) {
                    assertEquals("done", ep.receive(Duration.ofSeconds(60)).text());
                }
                // every increment survived: no two clients were ever inside the lock together
                assertEquals(clients * iterations, shared.segment().get(ValueLayout.JAVA_LONG, 8));
                assertEquals(0, shared.segment().get(ValueLayout.JAVA_LONG, 0), "the lock is free at the end");
                for (Endpoint ep : endpoints) ep.sendSync(new byte[] {1});
                for (Process c : children) {
                    assertTrue(c.waitFor(20, TimeUnit.SECONDS));
                    assertEquals(0, c.exitValue(), new String(c.getInputStream().readAllBytes()));
                }
            } finally {
                for (Process c : children) c.destroyForcibly();
                endpoints.forEach(Endpoint::close);
            }
        }
    }
}
