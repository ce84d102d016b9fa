package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.RegisteredBuffer;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Writes of buffers from the channel's own allocator go out from their registered memory without a copy, held until
 * their sends complete; other buffers are copied once into the send ring; mixed, the bytes arrive whole and in order.
 * The channel's counters of copied and in-place bytes tell the two paths apart.
 */
class ZeroCopyWriteTest {
    static {
        NettyTestSupport.config();
    }

    private static EventLoopGroup group;
    private static Channel server;
    private static Sink sink;

    /** The server side: collects what arrives (one connection sends at a time). */
    @Sharable
    static final class Sink extends ChannelInboundHandlerAdapter {
        private final ByteArrayOutputStream got = new ByteArrayOutputStream();
        private int expected;
        private CompletableFuture<byte[]> done = new CompletableFuture<>();

        synchronized CompletableFuture<byte[]> expect(int n) {
            got.reset();
            expected = n;
            done = new CompletableFuture<>();
            return done;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            synchronized (this) {
                byte[] part = new byte[b.readableBytes()];
                b.readBytes(part);
                got.writeBytes(part);
                if (got.size() >= expected) done.complete(got.toByteArray());
            }
            b.release();
        }
    }

    @BeforeAll
    static void start() throws Exception {
        group = new RdmaEventLoopGroup(2);
        sink = new Sink();
        server = new ServerBootstrap()
                .group(group)
                .channel(RdmaServerChannel.class)
                .childOption(
                        RdmaChannelOption.ENDPOINT_CONFIG,
                        NettyTestSupport.config().build())
                .childHandler(sink)
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) server.close().sync();
        NettyTestSupport.shutdown(group);
    }

    private static RdmaChannel connect() throws Exception {
        return connect(NettyTestSupport.config().build());
    }

    private static RdmaChannel connect(dev.jrdma.connect.EndpointConfig cfg) throws Exception {
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        return (RdmaChannel) new Bootstrap()
                .group(group)
                .channel(RdmaChannel.class)
                .option(RdmaChannelOption.ENDPOINT_CONFIG, cfg)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                .handler(new ChannelInboundHandlerAdapter())
                .connect(NettyTestSupport.host(), port)
                .sync()
                .channel();
    }

    private static <T> T onLoop(Channel ch, Callable<T> c) throws Exception {
        return ch.eventLoop().submit(c).get(10, TimeUnit.SECONDS);
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** A buffer of the channel's allocator filled with {@code data}; it must be registered memory of the connection. */
    private static ByteBuf registered(RdmaChannel ch, byte[] data) {
        ByteBuf b = ch.alloc().directBuffer(data.length).writeBytes(data);
        RegisteredByteBuf r =
                assertInstanceOf(RegisteredByteBuf.class, b, "the channel's allocator gives registered buffers");
        assertNotNull(r.registeredIn(ch.endpoint().pool()), "the buffer is memory of the connection's pool");
        return b;
    }

    private static void awaitReleased(ByteBuf... bufs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(NettyTestSupport.patienceSeconds());
        for (ByteBuf b : bufs) {
            while (b.refCnt() != 0) {
                assertTrue(
                        System.nanoTime() < deadline,
                        "a buffer sent in place was not released after its send: refCnt " + b.refCnt());
                Thread.sleep(2);
            }
        }
    }

    @Test
    void aRegisteredBufferIsSentWithoutACopyAndReleasedAfterItsSends() throws Exception {
        RdmaChannel ch = connect();
        try {
            byte[] data = random(40_000, 1); // two full messages of 16 KiB and a part: three sends from one buffer
            int poolInUse = onLoop(ch, () -> ch.endpoint().pool().inUse());
            CompletableFuture<byte[]> arrived = sink.expect(data.length);
            ByteBuf buf = onLoop(ch, () -> {
                ByteBuf b = registered(ch, data);
                ch.writeAndFlush(b);
                return b;
            });
            assertArrayEquals(data, arrived.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
            awaitReleased(buf);
            assertEquals(0L, (long) onLoop(ch, ch::bytesCopied), "no byte was copied into the send ring");
            assertEquals(data.length, (long) onLoop(ch, ch::bytesSentInPlace));
            assertEquals(
                    poolInUse,
                    (int) onLoop(ch, () -> ch.endpoint().pool().inUse()),
                    "the buffer's memory went back to the pool");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void aBufferThatGrowsStaysRegisteredAndGivesBackAllItsMemory() throws Exception {
        RdmaChannel ch = connect();
        try {
            byte[] data = random(40_000, 9);
            int poolInUse = onLoop(ch, () -> ch.endpoint().pool().inUse());
            CompletableFuture<byte[]> arrived = sink.expect(data.length);
            ByteBuf buf = onLoop(ch, () -> {
                ByteBuf b = ch.alloc().buffer(64); // grows twice or more while it is written: new memory each time
                for (int off = 0; off < data.length; off += 1000)
                    b.writeBytes(data, off, Math.min(1000, data.length - off));
                assertNotNull(
                        ((RegisteredByteBuf) b).registeredIn(ch.endpoint().pool()),
                        "grown within a slab: still registered");
                ch.writeAndFlush(b);
                return b;
            });
            assertArrayEquals(data, arrived.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
            awaitReleased(buf);
            assertEquals(data.length, (long) onLoop(ch, ch::bytesSentInPlace));
            assertEquals(
                    poolInUse,
                    (int) onLoop(ch, () -> ch.endpoint().pool().inUse()),
                    "every slice it held went back to the pool");
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void heapBuffersAreCopiedOnceAndMixedWritesArriveInOrder() throws Exception {
        RdmaChannel ch = connect();
        try {
            byte[] smallHeap = random(100, 2),
                    big = random(20_000, 3),
                    heap = random(3_000, 4),
                    sliced = random(2_000, 5),
                    smallRegistered = random(500, 6);
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            for (byte[] part : new byte[][] {smallHeap, big, heap, sliced, smallRegistered}) all.writeBytes(part);
            CompletableFuture<byte[]> arrived = sink.expect(all.size());
            ByteBuf[] held = onLoop(ch, () -> {
                ByteBuf bigBuf = registered(ch, big);
                ByteBuf whole = registered(ch, random(4_000, 7))
                        .writerIndex(0)
                        .writeBytes(sliced)
                        .writeZero(2_000);
                ByteBuf slice = whole.retainedSlice(0, sliced.length); // a view of registered memory: sent in place too
                whole.release();
                ByteBuf small = registered(ch, smallRegistered);
                ch.write(Unpooled.wrappedBuffer(smallHeap));
                ch.write(bigBuf);
                ch.write(Unpooled.wrappedBuffer(heap));
                ch.write(slice);
                ch.write(small);
                ch.flush();
                return new ByteBuf[] {bigBuf, whole, small};
            });
            assertArrayEquals(all.toByteArray(), arrived.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
            awaitReleased(held);
            // in place: the 20,000-byte buffer (a full message and the rest) and the 2,000-byte slice; copied: the
            // heap buffers, and the registered buffer below RdmaChannel.IN_PLACE_MIN (gathered, not a message of its
            // own)
            assertEquals(big.length + sliced.length, (long) onLoop(ch, ch::bytesSentInPlace));
            assertEquals(smallHeap.length + heap.length + smallRegistered.length, (long) onLoop(ch, ch::bytesCopied));
        } finally {
            ch.close().sync();
        }
    }

    @Test
    void anotherConnectionsRegisteredBufferIsCopiedNotSentWithAForeignKey() throws Exception {
        RdmaChannel first = connect();
        // other settings (a longer timeout): another endpoint group, so another protection domain and pool, whichever
        // loop it lands on (client channels of one loop with one address and one config share a group)
        RdmaChannel second = connect(NettyTestSupport.config()
                .timeout(java.time.Duration.ofSeconds(6))
                .build());
        try {
            byte[] data = random(10_000, 8);
            ByteBuf foreign = onLoop(first, () -> registered(first, data));
            assertNull(
                    ((RegisteredByteBuf) foreign).registeredIn(second.endpoint().pool()),
                    "a connection with other settings has a protection domain and pool of its own");
            CompletableFuture<byte[]> arrived = sink.expect(data.length);
            onLoop(second, () -> second.writeAndFlush(foreign));
            assertArrayEquals(data, arrived.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
            awaitReleased(foreign);
            assertEquals(data.length, (long) onLoop(second, second::bytesCopied));
            assertEquals(0L, (long) onLoop(second, second::bytesSentInPlace));
        } finally {
            first.close().sync();
            second.close().sync();
        }
    }

    @Test
    void aSmallBufferReleasedIsTheNextOfItsSizeEmptyAndWithOneReference() throws Exception {
        RdmaChannel ch = connect();
        RegisteredByteBufAllocator alloc = (RegisteredByteBufAllocator) ch.alloc();
        ByteBuf heldOverTheClose;
        RegisteredBuffer kept1, kept2, held;
        try {
            BufferPool pool = onLoop(ch, () -> ch.endpoint().pool());
            ByteBuf[] bufs = onLoop(ch, () -> {
                int poolInUse = pool.inUse();
                ByteBuf a = ch.alloc().directBuffer(64, 100);
                a.writeBytes(new byte[10]).readByte();
                a.markReaderIndex();
                assertTrue(a.release());
                assertEquals(poolInUse + 1, pool.inUse(), "kept for reuse: its slice stays taken");
                ByteBuf b = ch.alloc().directBuffer(64);
                assertSame(a, b, "the released buffer of that capacity");
                assertEquals(1, b.refCnt());
                assertEquals(0, b.readerIndex());
                assertEquals(0, b.writerIndex());
                assertEquals(Integer.MAX_VALUE, b.maxCapacity(), "this request's limit, not the first one's");
                b.writeBytes(new byte[3]).resetReaderIndex();
                assertEquals(0, b.readerIndex(), "the old mark is gone");
                ByteBuf other = ch.alloc().directBuffer(128);
                assertNotSame(b, other, "another capacity: another buffer");
                ByteBuf grown = ch.alloc().directBuffer(64);
                assertNotSame(b, grown);
                grown.writeBytes(new byte[2048]); // grows: its first memory goes back at once
                b.release();
                other.release();
                grown.release();
                assertEquals(poolInUse + 2, pool.inUse(), "the two that never grew are kept");
                assertEquals(2, alloc.recycledCount());
                return new ByteBuf[] {b, other, ch.alloc().directBuffer(256)};
            });
            kept1 = ((RegisteredByteBuf) bufs[0]).registeredIn(pool);
            kept2 = ((RegisteredByteBuf) bufs[1]).registeredIn(pool);
            heldOverTheClose = bufs[2];
            held = ((RegisteredByteBuf) heldOverTheClose).registeredIn(pool);
            // small buffers are copied into the send ring and released: the next of their size reuses one, and what
            // each carried arrives whole
            byte[] data = random(64 * 200, 12);
            CompletableFuture<byte[]> arrived = sink.expect(data.length);
            onLoop(ch, () -> {
                for (int off = 0; off < data.length; off += 64) {
                    ch.write(ch.alloc().directBuffer(64).writeBytes(data, off, 64));
                    if (off % 640 == 0) ch.flush();
                }
                ch.flush();
                return null;
            });
            assertArrayEquals(data, arrived.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
            assertEquals(data.length, (long) onLoop(ch, ch::bytesCopied));
        } finally {
            ch.close().sync();
        }
        // the pool is the loop's group's, shared by its connections: a closed channel keeps none of its memory
        assertEquals(0, alloc.recycledCount());
        assertTrue(kept1.isReleased() && kept2.isReleased(), "the kept buffers gave their memory back at the close");
        assertTrue(!held.isReleased());
        assertTrue(heldOverTheClose.release());
        assertTrue(held.isReleased(), "released after the close: its memory goes back at once");
    }

    @Test
    void beforeTheConnectionTheAllocatorGivesPlainBuffers() throws Exception {
        RdmaChannel ch = new RdmaChannel();
        ByteBuf b = ch.alloc().directBuffer(4096);
        try {
            assertTrue(b.isDirect());
            assertTrue(!(b instanceof RegisteredByteBuf), "no connection, no registered memory yet");
        } finally {
            b.release();
        }
    }
}
