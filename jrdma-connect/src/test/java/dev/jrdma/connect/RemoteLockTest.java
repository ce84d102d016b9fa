package dev.jrdma.connect;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(120)
class RemoteLockTest {
    @Test
    void tryLockTimesOutAndUnlockChecksTheOwner() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.configWithRights().build());
             RegisteredBuffer word = p.serverSide().pool().allocate(8)) {
            word.segment().set(ValueLayout.JAVA_LONG, 0, 0);
            RemoteBuffer granted = p.serverSide().grant(word, 0, 8, TestSupport.ALL_RIGHTS).remote();
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

    @Test
    void contendingProcessesKeepMutualExclusion() throws Exception {
        int clients = 3, iterations = 25;
        EndpointConfig cfg = TestSupport.configWithRights().timeout(Duration.ofSeconds(10)).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
             RegisteredBuffer shared = server.pool().allocate(64)) {
            shared.segment().fill((byte) 0);
            server.export(shared.remote());
            List<Process> children = new ArrayList<>();
            List<Endpoint> endpoints = new ArrayList<>();
            try {
                for (int i = 0; i < clients; i++) {
                    children.add(ChildMain.start("lock", "127.0.0.1", Integer.toString(server.port()), "127.0.0." + (2 + i), Integer.toString(iterations)));
                }
                for (int i = 0; i < clients; i++) endpoints.add(server.accept(Duration.ofSeconds(30)));
                for (Endpoint ep : endpoints) {
                    assertEquals("done", ep.receive(Duration.ofSeconds(60)).text());
                }
                // every increment survived: no two clients were ever inside the lock together
                assertEquals(clients * iterations, shared.segment().get(ValueLayout.JAVA_LONG, 8));
                assertEquals(0, shared.segment().get(ValueLayout.JAVA_LONG, 0), "the lock is free at the end");
                for (Endpoint ep : endpoints) ep.sendSync(new byte[]{1});
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
