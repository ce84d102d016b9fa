package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.WcStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One peer never reaches another peer's memory (issue 8, section 1): a server exports 64 bytes to clients A and B;
 * whatever key B uses, its READ, WRITE and atomic just outside its export and at A's receive slots end in
 * REM_ACCESS_ERR, and A's bytes stay exactly as they were. Runs on the software device here, and on rxe0 in the guest
 * ({@code -Djrdma.connect.test.device=rxe0 -Djrdma.connect.test.host=10.99.0.1}).
 */
@Timeout(300)
class PeerIsolationTest {
    private static final Duration T =
            TestSupport.config().build().timeout(); // 10 s on the host, 20 s on rxe0, or -Djrdma.connect.timeoutMs
    private static final int EXPORT_OFFSET = 64, EXPORT_LENGTH = 64;

    static {
        TestSupport.init();
    }

    private enum Op {
        READ,
        WRITE,
        ATOMIC
    }

    private record Target(String what, long address, int rkey) {}

    private static Endpoint accept(ServerEndpoint server) {
        try {
            return server.accept(T.multipliedBy(2));
        } catch (RdmaConnectException e) {
            throw new RuntimeException(e);
        }
    }

    /** A client connected to {@code server}, and its server side. */
    private static Endpoint[] connect(ServerEndpoint server, EndpointConfig cfg) throws Exception {
        CompletableFuture<Endpoint> accepted = CompletableFuture.supplyAsync(() -> accept(server));
        Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
        return new Endpoint[] {client, accepted.get()};
    }

    private static byte[] bytes(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    @ParameterizedTest(name = "exports through {0}")
    @ValueSource(strings = {"windows", "regions"})
    void aPeerReachesOnlyItsOwnExport(String how) throws Exception {
        boolean windows = how.equals("windows");
        Assumptions.assumeTrue(
                windows || TestSupport.DEVICE == null, "the region path is a host test (rxe0 has type 2 windows)");
        EndpointConfig cfg = TestSupport.configWithRights().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                RegisteredBuffer memory = server.pool().allocate(256)) {
            if (windows)
                Assumptions.assumeTrue(server.group().exportsWithWindows(), "device without type 2 memory windows");
            else server.group().exportWithRegions();
            for (int i = 0; i < 256; i++)
                memory.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (0xC0 ^ i)); // canaries around the export
            server.export(memory.remote(EXPORT_OFFSET, EXPORT_LENGTH));

            Endpoint[] a = connect(server, cfg);
            Endpoint clientA = a[0], serverA = a[1];
            try (RegisteredBuffer localA = clientA.pool().allocate(64)) {
                RemoteBuffer exportA = clientA.peerExport();
                assertEquals(memory.address() + EXPORT_OFFSET, exportA.address());
                assertEquals(EXPORT_LENGTH, exportA.length());
                assertNotEquals(memory.rkey(), exportA.rkey(), "a peer never gets the pool region's key");
                // A's data: its export and messages in its receive slots on the server
                byte[] dataA = "A's data, only A's: 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEF"
                        .getBytes(StandardCharsets.UTF_8);
                localA.segment().copyFrom(MemorySegment.ofArray(dataA));
                clientA.writeSync(localA, 0, exportA, 0, 64);
                for (int i = 0; i < 3; i++) clientA.sendSync(("A's message " + i).getBytes(StandardCharsets.UTF_8));
                for (int i = 0; i < 3; i++)
                    assertEquals("A's message " + i, serverA.receive(T).text());
                RegisteredBuffer slotsA = serverA.receiveSlots();
                byte[] memoryBefore = bytes(memory.segment()), slotsBefore = bytes(slotsA.segment());

                List<Target> targets = new ArrayList<>();
                List<String> outcomes = new ArrayList<>();
                int attacks = 0;
                for (Op op : Op.values()) {
                    Endpoint[] b = connect(server, cfg);
                    RemoteBuffer exportB = b[0].peerExport();
                    b[0].close();
                    b[1].close();
                    targets.clear();
                    targets.add(new Target("export - 8", exportB.address() - 8, exportB.rkey()));
                    targets.add(new Target("export + 64", exportB.address() + 64, exportB.rkey()));
                    targets.add(new Target("A's receive slots with B's key", slotsA.address(), exportB.rkey()));
                    targets.add(
                            new Target("A's receive slots with their region's key", slotsA.address(), slotsA.rkey()));
                    targets.add(
                            new Target("the pool region's own key", memory.address() + EXPORT_OFFSET, memory.rkey()));
                    if (windows)
                        targets.add(new Target(
                                "A's export with A's key (a window bound on A's QP)",
                                exportA.address(),
                                exportA.rkey()));
                    for (Target t : targets) {
                        Endpoint[] bt = connect(server, cfg);
                        Endpoint clientB = bt[0];
                        try (RegisteredBuffer localB = clientB.pool().allocate(64)) {
                            localB.segment().fill((byte) 0xEE);
                            RemoteBuffer aim = new RemoteBuffer(t.address(), t.rkey(), 8);
                            RdmaException e = assertThrows(
                                    RdmaException.class,
                                    () -> {
                                        switch (op) {
                                            case READ -> clientB.readSync(localB, 0, aim, 0, 8);
                                            case WRITE -> clientB.writeSync(localB, 0, aim, 0, 8);
                                            case ATOMIC -> clientB.fetchAndAddSync(aim, 0, 1);
                                        }
                                    },
                                    op + " at " + t.what() + " succeeded");
                            outcomes.add(op + " at " + t.what() + ": " + e.status());
                            assertEquals(
                                    WcStatus.REM_ACCESS_ERR,
                                    e.status(),
                                    op + " at " + t.what() + ": " + e.getMessage());
                            if (op == Op.READ) {
                                assertEquals(
                                        (byte) 0xEE,
                                        localB.segment().get(ValueLayout.JAVA_BYTE, 0),
                                        "a failed read brought nothing back");
                            }
                        } finally {
                            clientB.close();
                            bt[1].close();
                        }
                        attacks++;
                    }
                }
                System.out.println("isolation (" + how + ", "
                        + server.group().device().name() + "): " + attacks + " attacks, all refused: " + outcomes);

                // A's bytes are intact, byte for byte, and A works on
                assertArrayEquals(memoryBefore, bytes(memory.segment()), "the export and the memory around it");
                assertArrayEquals(slotsBefore, bytes(slotsA.segment()), "A's receive slots");
                assertTrue(clientA.isConnected() && serverA.isConnected());
                localA.segment().fill((byte) 0);
                clientA.readSync(localA, 0, exportA, 0, 64);
                assertArrayEquals(dataA, bytes(localA.segment()));
                clientA.sendSync("still here".getBytes(StandardCharsets.UTF_8));
                assertEquals("still here", serverA.receive(T).text());
            } finally {
                clientA.close();
                serverA.close();
            }
        }
    }

    @Test
    void revokingOneClientLeavesTheOthers() throws Exception {
        EndpointConfig cfg = TestSupport.configWithRights().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                RegisteredBuffer table = server.pool().allocate(64)) {
            table.segment().fill((byte) 7);
            server.export(table.remote());
            Endpoint[] a = connect(server, cfg), b = connect(server, cfg);
            try (RegisteredBuffer la = a[0].pool().allocate(8);
                    RegisteredBuffer lb = b[0].pool().allocate(8)) {
                a[0].readSync(la, 0, a[0].peerExport(), 0, 8);
                b[0].readSync(lb, 0, b[0].peerExport(), 0, 8);
                b[1].localExport().close(); // revoke B's access only
                assertTrue(b[1].localExport().isRevoked());
                RdmaException e =
                        assertThrows(RdmaException.class, () -> b[0].readSync(lb, 0, b[0].peerExport(), 0, 8));
                assertEquals(WcStatus.REM_ACCESS_ERR, e.status(), e.getMessage());
                for (int i = 0; i < 5; i++) a[0].readSync(la, 0, a[0].peerExport(), 0, 8);
                assertEquals(7, la.segment().get(ValueLayout.JAVA_BYTE, 0));
                assertTrue(a[0].isConnected());
            } finally {
                for (Endpoint ep : List.of(a[0], a[1], b[0], b[1])) ep.close();
            }
        }
    }

    @Test
    void aQueuePairHasOnlyTheRightsItsConfigurationAsksFor() throws Exception {
        // a region of the server's PD with every right: only the QP's rights stand between it and the peer
        try (TestSupport.Pair p = TestSupport.pair(
                        TestSupport.config().remoteAccess(Access.REMOTE_READ).build());
                Arena arena = Arena.ofShared()) {
            MemoryRegion open = p.server()
                    .group()
                    .pd()
                    .registerMemory(
                            arena.allocate(64, 64),
                            EnumSet.of(
                                    Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC));
            try (RegisteredBuffer local = p.clientSide().pool().allocate(8)) {
                RemoteBuffer target = new RemoteBuffer(open.address(), open.rkey(), 64);
                p.clientSide().readSync(local, 0, target, 0, 8); // asked for: allowed
                RdmaException e =
                        assertThrows(RdmaException.class, () -> p.clientSide().writeSync(local, 0, target, 0, 8));
                assertRefusedByTheQp(e);
            } finally {
                open.close();
            }
        }
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build());
                Arena arena = Arena.ofShared()) {
            MemoryRegion open = p.server()
                    .group()
                    .pd()
                    .registerMemory(
                            arena.allocate(64, 64),
                            EnumSet.of(
                                    Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC));
            try (RegisteredBuffer local = p.clientSide().pool().allocate(8)) {
                RdmaException e = assertThrows(
                        RdmaException.class,
                        () -> p.clientSide()
                                .readSync(local, 0, new RemoteBuffer(open.address(), open.rkey(), 64), 0, 8));
                assertRefusedByTheQp(e);
            } finally {
                open.close();
            }
        }
    }

    /** An opcode the responder's QP does not allow: the software device NAKs it as an access error, rxe as an invalid request. */
    private static void assertRefusedByTheQp(RdmaException e) {
        assertTrue(e.status() == WcStatus.REM_ACCESS_ERR || e.status() == WcStatus.REM_INV_REQ_ERR, e.getMessage());
    }

    @Test
    void messageBuffersCarryNoRemoteRight() throws Exception {
        try (TestSupport.Pair p =
                TestSupport.pair(TestSupport.configWithRights().build())) {
            for (Endpoint ep : List.of(p.clientSide(), p.serverSide())) {
                Object rights = ep.receiveSlots().region().access();
                assertTrue(
                        EnumSet.copyOf(ep.receiveSlots().region().access()).stream()
                                .noneMatch(EndpointConfig.REMOTE_RIGHTS::contains),
                        String.valueOf(rights));
                assertTrue(
                        ep.pool().access().stream().noneMatch(EndpointConfig.REMOTE_RIGHTS::contains),
                        String.valueOf(ep.pool().access()));
            }
            if (p.serverSide().localExport() != null) fail("no export was offered");
        }
    }
}
