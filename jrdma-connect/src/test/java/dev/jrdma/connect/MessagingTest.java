package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class MessagingTest {
    private static final Duration T = Duration.ofSeconds(3);

    @Test
    void sendBytesSegmentAndRegisteredBuffer() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            c.send("bytes".getBytes(StandardCharsets.UTF_8)).get(3, TimeUnit.SECONDS);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment seg = a.allocateFrom("segment", StandardCharsets.UTF_8);
                c.send(seg.asSlice(0, 7)).get(3, TimeUnit.SECONDS);
            }
            try (RegisteredBuffer rb = c.pool().allocate(1000)) {
                rb.byteBuffer().put("zero-copy".getBytes(StandardCharsets.UTF_8));
                c.send(rb, 0, 9).get(3, TimeUnit.SECONDS);
            }
            byte[] big = new byte[4096];
            for (int i = 0; i < big.length; i++) big[i] = (byte) i;
            c.sendSync(big);
            c.sendSync(new byte[0]);
            assertEquals("bytes", s.receive(T).text());
            assertEquals("segment", s.receive(T).text());
            assertEquals("zero-copy", s.receive(T).text());
            assertArrayEquals(big, s.receive(T).bytes());
            assertEquals(0, s.receive(T).length());
            IllegalArgumentException tooBig =
                    assertThrows(IllegalArgumentException.class, () -> c.send(new byte[4097]));
            assertTrue(tooBig.getMessage().contains("larger than the peer's receive buffers"));
        }
    }

    @Test
    void receiveByFutureCallbackAndBlocking() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            CompletableFuture<Message> f = s.receive();
            assertFalse(f.isDone());
            c.sendSync("future".getBytes(StandardCharsets.UTF_8));
            assertEquals("future", f.get(3, TimeUnit.SECONDS).text());

            c.sendSync("blocking".getBytes(StandardCharsets.UTF_8));
            assertEquals("blocking", s.receive(T).text());

            List<String> got = new CopyOnWriteArrayList<>();
            CountDownLatch three = new CountDownLatch(3);
            s.onReceive(m -> {
                got.add(m.text());
                three.countDown();
            });
            for (int i = 0; i < 3; i++) c.send(("cb" + i).getBytes(StandardCharsets.UTF_8));
            assertTrue(three.await(3, TimeUnit.SECONDS));
            assertEquals(List.of("cb0", "cb1", "cb2"), got);
            s.onReceive(null);

            long t0 = System.nanoTime();
            RdmaException e = assertThrows(RdmaException.class, () -> s.receive(Duration.ofMillis(200)));
            assertEquals(RdmaException.Kind.TIMEOUT, e.kind());
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 1000);
            // a message after a timed-out receive is not lost
            c.sendSync("after".getBytes(StandardCharsets.UTF_8));
            assertEquals("after", s.receive(T).text());
        }
    }

    @Test
    void creditsKeepAFastSenderFromCausingRnr() throws Exception {
        // 4 receive buffers per side and no RNR retries at all: one RNR NAK would fail the connection
        EndpointConfig cfg = TestSupport.config()
                .recvQueueDepth(4)
                .sendQueueDepth(32)
                .messageSize(256)
                .build();
        try (TestSupport.Pair p = TestSupport.pair(cfg)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            int n = 2000;
            List<CompletableFuture<Void>> sends = new ArrayList<>();
            CompletableFuture<Void> received = new CompletableFuture<>();
            int[] next = {0};
            s.onReceive(m -> {
                int v = ByteBuffer.wrap(m.bytes()).getInt();
                if (v != next[0])
                    received.completeExceptionally(new AssertionError("got " + v + ", expected " + next[0]));
                if (++next[0] == n) received.complete(null);
            });
            for (int i = 0; i < n; i++)
                sends.add(c.send(ByteBuffer.allocate(64).putInt(i).array()));
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
            received.get(30, TimeUnit.SECONDS);
            assertTrue(c.isConnected() && s.isConnected());
            // both directions at once
            CompletableFuture<Message> back = c.receive();
            s.sendSync("done".getBytes(StandardCharsets.UTF_8));
            assertEquals("done", back.get(3, TimeUnit.SECONDS).text());
        }
    }

    @Test
    void writesWithImmediateAreFlowControlledToo() throws Exception {
        EndpointConfig cfg = TestSupport.configWithRights()
                .recvQueueDepth(3)
                .sendQueueDepth(32)
                .build();
        try (TestSupport.Pair p = TestSupport.pair(cfg);
                RegisteredBuffer target = p.serverSide().pool().allocate(64);
                RegisteredBuffer local = p.clientSide().pool().allocate(64)) {
            RemoteBuffer granted =
                    p.serverSide().grant(target, 0, 64, TestSupport.ALL_RIGHTS).remote();
            int n = 500;
            CompletableFuture<Void> all = new CompletableFuture<>();
            int[] next = {0};
            p.serverSide().onReceive(m -> {
                if (m.immediate() != next[0])
                    all.completeExceptionally(
                            new AssertionError("immediate " + m.immediate() + ", expected " + next[0]));
                if (++next[0] == n) all.complete(null);
            });
            for (int i = 0; i < n; i++) p.clientSide().writeWithImmediate(local, 0, granted, 0, 8, i);
            all.get(30, TimeUnit.SECONDS);
            assertTrue(p.clientSide().isConnected());
        }
    }

    @Test
    void clientsCanShareAGroup() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                EndpointGroup shared =
                        EndpointGroup.forLocalAddress(java.net.InetAddress.getByName("127.0.0.1"), cfg)) {
            List<Endpoint> accepted = new ArrayList<>();
            List<Endpoint> clients = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                CompletableFuture<Endpoint> a = CompletableFuture.supplyAsync(() -> {
                    try {
                        return server.accept();
                    } catch (RdmaConnectException e) {
                        throw new RuntimeException(e);
                    }
                });
                clients.add(Endpoint.connect("127.0.0.1", server.port(), cfg, shared, null));
                accepted.add(a.get());
            }
            for (int i = 0; i < 3; i++) {
                assertTrue(clients.get(i).group() == shared);
                clients.get(i).sendSync(new byte[] {(byte) i});
                assertEquals(i, accepted.get(i).receive(T).bytes()[0]);
            }
            clients.getFirst().close();
            assertTrue(clients.get(1).isConnected(), "closing one endpoint leaves the shared group working");
            clients.get(1).sendSync(new byte[] {9});
            assertEquals(9, accepted.get(1).receive(T).bytes()[0]);
        }
    }

    @Test
    void aPeerThatDoesNotConsumeHoldsTheSenderBackUntilTheTimeout() throws Exception {
        EndpointConfig cfg = TestSupport.config()
                .recvQueueDepth(2)
                .timeout(Duration.ofMillis(800))
                .build();
        try (TestSupport.Pair p = TestSupport.pair(cfg)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            c.sendSync(new byte[] {1});
            c.sendSync(new byte[] {2});
            assertEquals(0, c.sendCredits());
            long t0 = System.nanoTime();
            CompletableFuture<Void> third = c.send(new byte[] {3});
            Thread.sleep(100);
            assertFalse(third.isDone(), "a send beyond the peer's free buffers must wait, not cause RNR");
            RdmaException e = assertThrows(RdmaException.class, () -> c.await(third));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(RdmaException.Kind.TIMEOUT, e.kind());
            assertTrue(e.getMessage().contains("not consuming messages"), e.getMessage());
            assertTrue(ms < 2000, "took " + ms);
            // once the receiver consumes, credits flow back and sending resumes
            assertEquals(1, s.receive(T).bytes()[0]);
            assertEquals(2, s.receive(T).bytes()[0]);
            c.sendSync(new byte[] {4});
            assertEquals(4, s.receive(T).bytes()[0]);
        }
    }

    @Test
    void requestResponseWithOneReceiveBuffer() throws Exception {
        EndpointConfig cfg = TestSupport.config().recvQueueDepth(1).build();
        try (TestSupport.Pair p = TestSupport.pair(cfg)) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            s.onReceive(m -> s.send(m.bytes()));
            for (int i = 0; i < 200; i++) {
                byte[] q = ("ping " + i).getBytes(StandardCharsets.UTF_8);
                c.send(q);
                assertArrayEquals(q, c.receive(T).bytes());
            }
        }
    }

    @Test
    void busyPollMode() throws Exception {
        try (TestSupport.Pair p =
                TestSupport.pair(TestSupport.config().pollMode(PollMode.BUSY).build())) {
            for (int i = 0; i < 50; i++) {
                p.clientSide().sendSync(new byte[] {(byte) i});
                assertEquals(i, p.serverSide().receive(T).bytes()[0]);
            }
        }
    }

    @Test
    void manyEndpointsShareOneServerGroup() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            List<Endpoint> clients = new ArrayList<>(), accepted = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    CompletableFuture<Endpoint> a = CompletableFuture.supplyAsync(() -> {
                        try {
                            return server.accept();
                        } catch (RdmaConnectException e) {
                            throw new RuntimeException(e);
                        }
                    });
                    clients.add(Endpoint.connect("127.0.0.1", server.port(), cfg));
                    accepted.add(a.get());
                }
                for (int i = 0; i < 4; i++) clients.get(i).send(("client " + i).getBytes(StandardCharsets.UTF_8));
                for (int i = 0; i < 4; i++)
                    assertEquals("client " + i, accepted.get(i).receive(T).text());
                // their receive slots come from the group's message pool, never from the application's pool
                assertTrue(server.group().messagePool().slabCount() >= 1);
                assertEquals(0, server.group().pool().slabCount());
            } finally {
                clients.forEach(Endpoint::close);
            }
        }
    }

    @Test
    void bufferPoolSlicesSlabs() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            BufferPool pool = new BufferPool(
                    p.clientSide().group().pd(), 1 << 16, java.util.EnumSet.of(dev.jrdma.verbs.Access.LOCAL_WRITE));
            pool.allocate(64).close();
            int slabs = pool.slabCount();
            assertEquals(1, slabs);
            List<RegisteredBuffer> bufs = new ArrayList<>();
            for (int i = 0; i < 50; i++) bufs.add(pool.allocate(100));
            assertEquals(slabs, pool.slabCount(), "small buffers come out of the registered slab");
            for (RegisteredBuffer b : bufs) {
                assertEquals(0, b.address() % 64);
                assertEquals(100, b.length());
            }
            RegisteredBuffer b0 = bufs.getFirst();
            b0.byteBuffer().put(3, (byte) 0x5A); // zero-copy: the ByteBuffer and the segment are the same memory
            assertEquals((byte) 0x5A, b0.segment().get(ValueLayout.JAVA_BYTE, 3));
            assertEquals(b0.address(), b0.region().address() + b0.regionOffset());
            java.util.Set<Long> freed = new java.util.HashSet<>();
            for (RegisteredBuffer b : bufs) freed.add(b.address());
            bufs.forEach(RegisteredBuffer::close);
            try (RegisteredBuffer again = pool.allocate(90)) {
                assertTrue(freed.contains(again.address()), "freed slices are reused");
            }
            long before = pool.registeredBytes();
            try (RegisteredBuffer huge = pool.allocate(pool.slabSize() * 2)) {
                assertEquals(pool.slabSize() * 2, huge.length());
                assertEquals(before + pool.slabSize() * 2, pool.registeredBytes());
            }
            assertEquals(before, pool.registeredBytes(), "a large buffer is deregistered when given back");
            assertThrows(IllegalStateException.class, () -> b0.segment());
            pool.close();
            assertThrows(IllegalStateException.class, () -> pool.allocate(8));
        }
    }
}
