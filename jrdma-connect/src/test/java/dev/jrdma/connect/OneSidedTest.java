package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.WcStatus;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class OneSidedTest {
    private static final Duration T = Duration.ofSeconds(3);

    private static String text(RegisteredBuffer b, int off, int len) {
        byte[] a = new byte[len];
        b.byteBuffer().get(off, a);
        return new String(a, StandardCharsets.UTF_8);
    }

    @Test
    void writeReadAtomicsThroughAnExportedBuffer() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer exported = p.serverSide().pool().allocate(4096);
                RegisteredBuffer local = p.clientSide().pool().allocate(4096)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            exported.segment().fill((byte) 0);
            // grant to this peer, send it as bytes, import it on the other side
            RemoteBuffer granted =
                    s.grant(exported, 0, 4096, TestSupport.ALL_RIGHTS).remote();
            s.sendSync(granted.toBytes());
            RemoteBuffer remote = RemoteBuffer.fromBytes(c.receive(T).bytes());
            assertEquals(granted, remote);

            local.byteBuffer().put(0, "written by RDMA".getBytes(StandardCharsets.UTF_8));
            c.write(local, 0, remote, 100, 15).get(3, TimeUnit.SECONDS);
            assertEquals("written by RDMA", text(exported, 100, 15));

            exported.byteBuffer().put(2000, "read by RDMA".getBytes(StandardCharsets.UTF_8));
            c.readSync(local, 500, remote, 2000, 12);
            assertEquals("read by RDMA", text(local, 500, 12));

            exported.segment().set(ValueLayout.JAVA_LONG, 8, 100);
            assertEquals(100, c.fetchAndAddSync(remote, 8, 5));
            assertEquals(105, c.fetchAndAdd(remote, 8, 1).get(3, TimeUnit.SECONDS));
            assertEquals(106, exported.segment().get(ValueLayout.JAVA_LONG, 8));
            assertEquals(0, c.compareAndSwapSync(remote, 16, 0, 42));
            assertEquals(42, c.compareAndSwapSync(remote, 16, 0, 43), "a CAS with the wrong expected value fails");
            assertEquals(42, exported.segment().get(ValueLayout.JAVA_LONG, 16));

            // a large write (several MTUs)
            try (RegisteredBuffer big = c.pool().allocate(3000)) {
                for (int i = 0; i < 3000; i++) big.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
                c.writeSync(big, 0, remote, 1000, 3000);
                for (int i = 0; i < 3000; i++)
                    assertEquals((byte) (i * 7), exported.segment().get(ValueLayout.JAVA_BYTE, 1000 + i));
            }
            assertThrows(IndexOutOfBoundsException.class, () -> c.write(local, 0, remote, 4090, 16));
            assertThrows(IllegalArgumentException.class, () -> c.compareAndSwap(remote, 4, 0, 1));
        }
    }

    @Test
    void writeWithImmediateArrivesAsAMessage() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer target = p.serverSide().pool().allocate(256);
                RegisteredBuffer local = p.clientSide().pool().allocate(256)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            RemoteBuffer granted =
                    s.grant(target, 0, 256, EnumSet.of(Access.REMOTE_WRITE)).remote();
            local.byteBuffer().put(0, "with immediate".getBytes(StandardCharsets.UTF_8));
            for (int i = 0; i < 20; i++) c.writeWithImmediate(local, 0, granted, 0, 14, 0xC0FFEE + i);
            for (int i = 0; i < 20; i++) {
                Message m = s.receive(T);
                assertTrue(m.isWriteWithImmediate());
                assertEquals(0xC0FFEE + i, m.immediate());
            }
            assertEquals("with immediate", text(target, 0, 14));
        }
    }

    @Test
    void peerExportArrivesWithTheHandshake() throws Exception {
        EndpointConfig cfg = TestSupport.configWithRights().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                RegisteredBuffer table = server.pool().allocate(1024)) {
            table.byteBuffer().put(0, "exported".getBytes(StandardCharsets.UTF_8));
            server.export(table.remote());
            CompletableFuture<Endpoint> a = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept();
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            try (Endpoint c = Endpoint.connect("127.0.0.1", server.port(), cfg);
                    Endpoint s = a.get();
                    RegisteredBuffer local = c.pool().allocate(8)) {
                // the connection's own window over exactly the exported range, never the pool region's key
                assertEquals(table.address(), c.peerExport().address());
                assertEquals(1024, c.peerExport().length());
                assertTrue(c.peerExport().rkey() != table.rkey());
                assertEquals(s.localExport().remote(), c.peerExport());
                c.readSync(local, 0, c.peerExport(), 0, 8);
                assertEquals("exported", text(local, 0, 8));
                assertEquals(s.localParams().qpNum(), c.remoteParams().qpNum());
                assertEquals(c.localParams().psn(), s.remoteParams().psn());
            }
        }
    }

    @Test
    void aFailedCompletionExplainsItselfAndBreaksTheConnection() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer target = p.serverSide().pool().allocate(64);
                RegisteredBuffer local = p.clientSide().pool().allocate(64)) {
            Endpoint c = p.clientSide();
            RemoteBuffer wrong = new RemoteBuffer(target.address(), target.rkey() ^ 0x5A5A00, 64);
            RdmaException e = assertThrows(RdmaException.class, () -> c.writeSync(local, 0, wrong, 0, 8));
            assertEquals(WcStatus.REM_ACCESS_ERR, e.status());
            assertEquals(RdmaException.Kind.COMPLETION_ERROR, e.kind());
            assertTrue(
                    e.getMessage().contains("IBV_WC_REM_ACCESS_ERR")
                            && e.getMessage().contains("What to do"),
                    e.getMessage());
            assertFalse(c.isConnected());
            // later operations fail at once with the first error
            long t0 = System.nanoTime();
            RdmaException later = assertThrows(RdmaException.class, () -> c.readSync(local, 0, target.remote(), 0, 8));
            assertEquals(WcStatus.REM_ACCESS_ERR, later.status());
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 500);
        }
    }

    @Test
    void memoryWindowGrantedAndRevoked() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer region = p.serverSide().pool().allocate(4096);
                RegisteredBuffer local = p.clientSide().pool().allocate(64)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            region.byteBuffer().put(1024, "through the window".getBytes(StandardCharsets.UTF_8));
            WindowGrant grant = s.grant(region, 1024, 64, EnumSet.of(Access.REMOTE_READ));
            assertNotNull(grant.remote());
            s.sendSync(grant.remote().toBytes());
            RemoteBuffer window = RemoteBuffer.fromBytes(c.receive(T).bytes());
            c.readSync(local, 0, window, 0, 18);
            assertEquals("through the window", text(local, 0, 18));
            grant.close(); // revoke, without re-registering the region
            assertTrue(grant.isRevoked());
            s.sendSync(new byte[] {1}); // tell the peer
            c.receive(T);
            RdmaException e = assertThrows(RdmaException.class, () -> c.readSync(local, 0, window, 0, 18));
            assertEquals(WcStatus.REM_ACCESS_ERR, e.status(), e.getMessage());
        }
    }

    @Test
    void windowOutsideItsRangeIsRefused() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer region = p.serverSide().pool().allocate(4096);
                RegisteredBuffer local = p.clientSide().pool().allocate(256)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            WindowGrant grant = s.grant(region, 1024, 64, EnumSet.of(Access.REMOTE_READ));
            RemoteBuffer beyond =
                    new RemoteBuffer(grant.remote().address(), grant.remote().rkey(), 128);
            RdmaException e = assertThrows(RdmaException.class, () -> c.readSync(local, 0, beyond, 0, 128));
            assertEquals(WcStatus.REM_ACCESS_ERR, e.status(), e.getMessage());
        }
    }

    @Test
    void rightsBeyondTheConfigurationAreRefused() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(
                        TestSupport.config().remoteAccess(Access.REMOTE_READ).build());
                RegisteredBuffer region = p.serverSide().pool().allocate(64)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> p.serverSide().grant(region, 0, 64, EnumSet.of(Access.REMOTE_WRITE)));
            assertTrue(e.getMessage().contains("EndpointConfig.remoteAccess"), e.getMessage());
            assertThrows(
                    IllegalArgumentException.class,
                    () -> p.server().export(region.remote(), EnumSet.of(Access.REMOTE_ATOMIC)));
            p.serverSide().grant(region, 0, 64, EnumSet.of(Access.REMOTE_READ)).close();
        }
        try (ServerEndpoint server = ServerEndpoint.bind(
                        TestSupport.server(), TestSupport.config().build());
                RegisteredBuffer region = server.pool().allocate(64)) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> server.export(region.remote()));
            assertTrue(e.getMessage().contains("without any right"), e.getMessage());
        }
    }
}
