package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.connect.RdmaException;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.WcStatus;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Back-pressure, half-close, close, connect failures and completion errors of the channels. */
class ChannelBehaviourTest {
    static {
        NettyTestSupport.config();
    }

    private static EventLoopGroup group;

    @BeforeAll
    static void start() {
        group = new RdmaEventLoopGroup(2);
    }

    @AfterAll
    static void stop() {
        NettyTestSupport.shutdown(group);
    }

    private static Channel server(SharedChildHandler childHandler, boolean autoRead, boolean halfClosure)
            throws Exception {
        return new ServerBootstrap()
                .group(group)
                .channel(RdmaServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, halfClosure)
                .childHandler(childHandler)
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
    }

    private static Channel client(Channel server, ChannelInboundHandlerAdapter handler) throws Exception {
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        return new Bootstrap()
                .group(group)
                .channel(RdmaChannel.class)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(64 * 1024, 256 * 1024))
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                .handler(handler)
                .connect(NettyTestSupport.host(), port)
                .sync()
                .channel();
    }

    /** A child handler the accepted channels share: the bootstrap adds this one instance to each. */
    @ChannelHandler.Sharable
    private static class SharedChildHandler extends ChannelInboundHandlerAdapter {}

    /** A shared child handler that hands out the server's side of the connection once it is active. */
    private static class AcceptingHandler extends SharedChildHandler {
        final CompletableFuture<Channel> accepted = new CompletableFuture<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            accepted.complete(ctx.channel());
        }
    }

    /** {@return a client handler that puts each message it reads, as UTF-8 text, on {@code replies}} */
    private static ChannelInboundHandlerAdapter readingTextInto(BlockingQueue<String> replies) {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                replies.add(((ByteBuf) msg).toString(StandardCharsets.UTF_8));
                ((ByteBuf) msg).release();
            }
        };
    }

    @Test
    void aReaderThatStopsReadingMakesItsWriterUnwritableUntilItReadsAgain() throws Exception {
        AtomicLong received = new AtomicLong();
        AcceptingHandler serverSide = new AcceptingHandler() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                received.addAndGet(((ByteBuf) msg).readableBytes());
                ((ByteBuf) msg).release();
            }
        };
        Channel server = server(serverSide, false, false);
        AtomicInteger unwritable = new AtomicInteger(), writable = new AtomicInteger();
        Channel client = client(server, new ChannelInboundHandlerAdapter() {
            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                (ctx.channel().isWritable() ? writable : unwritable).incrementAndGet();
            }
        });
        try {
            Channel accepted = serverSide.accepted.get(10, TimeUnit.SECONDS);
            long total = 4L << 20; // far more than the peer's 32 receive buffers of 16 KiB
            byte[] chunk = new byte[8192];
            CompletableFuture<Void> written = new CompletableFuture<>();
            client.eventLoop().execute(() -> {
                for (long sent = 0; sent < total; sent += chunk.length) client.write(Unpooled.wrappedBuffer(chunk));
                client.flush();
                written.complete(null);
            });
            written.get(10, TimeUnit.SECONDS);
            // nothing is read on the other side: the credits run out, the outbound buffer fills past the high mark
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (client.isWritable() && System.nanoTime() < deadline) Thread.sleep(10);
            assertFalse(client.isWritable(), "the writer stayed writable although nobody reads");
            assertTrue(unwritable.get() >= 1, "channelWritabilityChanged was not fired");
            assertEquals(0, received.get());
            Thread.sleep(300);
            assertTrue(client.isWritable() == false && client.isActive(), "the stalled writer must wait, not fail");
            // the reader reads again: everything arrives and the writer becomes writable again
            accepted.config().setAutoRead(true);
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (received.get() < total && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(total, received.get());
            assertTrue(client.isWritable());
            assertTrue(writable.get() >= 1);
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    @Test
    void shutdownOutputIsAHalfCloseThePeerSeesAndCanStillAnswer() throws Exception {
        CountDownLatch inputShutdown = new CountDownLatch(1);
        Channel server = server(
                new SharedChildHandler() {
                    private final StringBuilder got = new StringBuilder();

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        got.append(((ByteBuf) msg).toString(StandardCharsets.UTF_8));
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        if (evt instanceof ChannelInputShutdownEvent) {
                            inputShutdown.countDown();
                            // the request is complete: answer on the still-open output, then close
                            ctx.writeAndFlush(Unpooled.copiedBuffer("got " + got, StandardCharsets.UTF_8))
                                    .addListener(f -> ctx.close());
                        }
                    }
                },
                true,
                true);
        LinkedBlockingQueue<String> replies = new LinkedBlockingQueue<>();
        Channel client = client(server, readingTextInto(replies));
        try {
            client.writeAndFlush(Unpooled.copiedBuffer("request", StandardCharsets.UTF_8))
                    .sync();
            ((RdmaChannel) client).shutdownOutput().sync();
            assertTrue(((RdmaChannel) client).isOutputShutdown());
            assertTrue(inputShutdown.await(10, TimeUnit.SECONDS), "the server did not see the half-close");
            assertEquals("got request", replies.poll(10, TimeUnit.SECONDS));
            assertTrue(client.closeFuture().await(10, TimeUnit.SECONDS), "the server's close did not close the client");
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    @Test
    void closingOneSideEndsTheOther() throws Exception {
        CountDownLatch inactive = new CountDownLatch(1);
        AcceptingHandler serverSide = new AcceptingHandler() {
            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                inactive.countDown();
            }
        };
        Channel server = server(serverSide, true, false);
        Channel client = client(server, new ChannelInboundHandlerAdapter());
        try {
            Channel accepted = serverSide.accepted.get(10, TimeUnit.SECONDS);
            assertTrue(accepted.isActive());
            assertEquals(client.localAddress() instanceof InetSocketAddress, true);
            client.close().sync();
            assertFalse(client.isOpen());
            assertTrue(inactive.await(10, TimeUnit.SECONDS), "the server side did not become inactive");
            assertFalse(accepted.isOpen());
            // writing on a closed channel fails like any Netty channel
            ChannelFuture w =
                    client.writeAndFlush(Unpooled.wrappedBuffer(new byte[8])).await();
            assertFalse(w.isSuccess());
        } finally {
            server.close().sync();
        }
    }

    @Test
    void closingTheServerChannelKeepsAcceptedConnections() throws Exception {
        AcceptingHandler serverSide = new AcceptingHandler() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ctx.writeAndFlush(msg);
            }
        };
        Channel server = server(serverSide, true, false);
        LinkedBlockingQueue<String> replies = new LinkedBlockingQueue<>();
        Channel client = client(server, readingTextInto(replies));
        try {
            serverSide.accepted.get(10, TimeUnit.SECONDS);
            server.close().sync();
            client.writeAndFlush(Unpooled.copiedBuffer("still here", StandardCharsets.UTF_8))
                    .sync();
            assertEquals("still here", replies.poll(10, TimeUnit.SECONDS));
        } finally {
            client.close().sync();
        }
    }

    @Test
    void connectTimesOutAgainstAServerThatNeverAnswers() throws Exception {
        // the silent peer is a TCP listener: it stalls the TCP exchange; rdma_cm (native devices) would see a reject
        org.junit.jupiter.api.Assumptions.assumeTrue(
                dev.jrdma.verbs.Verbs.defaultDevice().provider().equals("soft"),
                "a silent TCP listener stalls only the TCP exchange (software device); rdma_cm gets a reject from it");
        // a TCP listener that accepts and stays silent: the jrdma handshake never completes
        try (ServerSocket silent = new ServerSocket(0, 50, java.net.InetAddress.getByName(NettyTestSupport.host()))) {
            long t0 = System.nanoTime();
            ChannelFuture f = new Bootstrap()
                    .group(group)
                    .channel(RdmaChannel.class)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 300)
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(NettyTestSupport.host(), silent.getLocalPort());
            assertTrue(f.await(5, TimeUnit.SECONDS));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertInstanceOf(ConnectTimeoutException.class, f.cause());
            assertTrue(ms >= 250 && ms < 3000, "timed out after " + ms + " ms, expected about 300");
            assertTrue(
                    f.channel().closeFuture().await(5, TimeUnit.SECONDS), "a channel whose connect failed must close");
        }
    }

    @Test
    void connectToNothingFailsWithAConnectException() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName(NettyTestSupport.host()))) {
            port = s.getLocalPort();
        }
        ChannelFuture f = new Bootstrap()
                .group(group)
                .channel(RdmaChannel.class)
                .handler(new ChannelInboundHandlerAdapter())
                .connect(NettyTestSupport.host(), port);
        assertTrue(f.await(10, TimeUnit.SECONDS));
        ConnectException e = assertInstanceOf(ConnectException.class, f.cause());
        assertTrue(e.getMessage().contains(String.valueOf(port)), e.getMessage());
        assertTrue(f.channel().closeFuture().await(5, TimeUnit.SECONDS), "a channel whose connect failed must close");
    }

    @Test
    void aFailedCompletionReachesExceptionCaughtWithItsStatusAndExplanation() throws Exception {
        Channel server = server(new SharedChildHandler(), true, false);
        LinkedBlockingQueue<Throwable> errors = new LinkedBlockingQueue<>();
        Channel client = client(server, new ChannelInboundHandlerAdapter() {
            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                errors.add(cause);
            }
        });
        try {
            // break the connection under the channel: its posted receives complete with WR_FLUSH_ERR
            ((RdmaChannel) client).endpoint().queuePair().modify(new QpAttr().state(QpState.ERR));
            Throwable t = errors.poll(10, TimeUnit.SECONDS);
            assertNotNull(t, "no exception reached the pipeline");
            RdmaChannelException e = assertInstanceOf(RdmaChannelException.class, t);
            assertEquals(WcStatus.WR_FLUSH_ERR, e.status());
            assertEquals(RdmaException.Kind.COMPLETION_ERROR, e.kind());
            assertTrue(e.getMessage().contains(WcStatus.WR_FLUSH_ERR.describe()), e.getMessage());
            assertTrue(client.closeFuture().await(10, TimeUnit.SECONDS), "a broken channel must close");
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * Netty's SocketChannelNotYetConnectedTest#readMustBePendingUntilChannelIsActive with a jrdma server (the
     * testsuite's own case needs a NIO server): a read asked for before the channel is connected, with auto-read
     * off, is done once it is, and delivers what the server wrote on activation.
     */
    @Test
    void aReadBeforeConnectIsDoneOnceConnected() throws Exception {
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(RdmaServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        ctx.writeAndFlush(Unpooled.copyInt(42));
                    }
                })
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
        LinkedBlockingQueue<Integer> received = new LinkedBlockingQueue<>();
        AtomicInteger activeAtRead = new AtomicInteger(-1);
        Channel client = new Bootstrap()
                .group(group)
                .channel(RdmaChannel.class)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void handlerAdded(ChannelHandlerContext ctx) {
                        activeAtRead.set(ctx.channel().isActive() ? 1 : 0);
                        ctx.read();
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ByteBuf buf = (ByteBuf) msg;
                        try {
                            received.add(buf.readInt());
                        } finally {
                            buf.release();
                        }
                    }
                })
                .connect(server.localAddress())
                .sync()
                .channel();
        try {
            assertEquals(0, activeAtRead.get(), "the read must have been asked for before the channel was active");
            assertEquals(42, received.poll(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS));
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }

    /**
     * Netty's SocketShutdownOutputBySelfTest#testShutdownOutputAfterClosed with a jrdma server (the testsuite's
     * peer is a java.net.ServerSocket): after the close, shutting either direction down fails as a closed channel.
     */
    @Test
    void shutdownAfterCloseFailsWithClosedChannelException() throws Exception {
        Channel server = server(new SharedChildHandler(), true, false);
        try {
            RdmaChannel client = (RdmaChannel) client(server, new ChannelInboundHandlerAdapter());
            assertTrue(client.isActive());
            client.close().sync();
            ChannelFuture input = client.shutdownInput().await();
            assertInstanceOf(java.nio.channels.ClosedChannelException.class, input.cause());
            ChannelFuture output = client.shutdownOutput().await();
            assertInstanceOf(java.nio.channels.ClosedChannelException.class, output.cause());
        } finally {
            server.close().sync();
        }
    }
}
