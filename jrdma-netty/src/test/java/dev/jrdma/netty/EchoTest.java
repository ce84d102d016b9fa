package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Netty's echo example (io.netty.example.echo: EchoServer with EchoServerHandler, EchoClient with a client
 * handler) with one change: the channel classes. The same code also runs over NIO here, so the test checks the
 * example itself before it checks the transport.
 */
class EchoTest {
    static {
        NettyTestSupport.config();
    }

    /** EchoServerHandler: write back what arrives, flush when a read batch ends. */
    @Sharable
    static final class EchoServerHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            cause.printStackTrace();
            ctx.close();
        }
    }

    /** The client: sends the payload when active, collects the echo, closes when all of it is back. */
    static final class EchoClientHandler extends ChannelInboundHandlerAdapter {
        private final byte[] payload;
        private final ByteBuf received;
        final CompletableFuture<byte[]> done = new CompletableFuture<>();

        EchoClientHandler(byte[] payload) {
            this.payload = payload;
            this.received = Unpooled.buffer(payload.length);
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            // several writes of uneven sizes, one flush: the transport cuts and batches them
            int off = 0, step = 1;
            while (off < payload.length) {
                int n = Math.min(step, payload.length - off);
                ctx.write(Unpooled.wrappedBuffer(payload, off, n));
                off += n;
                step = step * 3 + 7;
            }
            ctx.flush();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            received.writeBytes(b);
            b.release();
            if (received.readableBytes() >= payload.length) {
                byte[] out = new byte[received.readableBytes()];
                received.readBytes(out);
                done.complete(out);
                ctx.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }

        /** A channel that closes before the whole echo came back fails at once, saying how much came (not a timeout). */
        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.completeExceptionally(new IllegalStateException("the channel closed after " + received.readableBytes()
                    + " of " + payload.length + " echoed bytes"));
        }
    }

    private static byte[] echo(
            EventLoopGroup boss,
            EventLoopGroup workers,
            Class<? extends io.netty.channel.ServerChannel> serverClass,
            Class<? extends Channel> clientClass,
            byte[] payload)
            throws Exception {
        ServerBootstrap sb = new ServerBootstrap()
                .group(boss, workers)
                .channel(serverClass)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new EchoServerHandler());
                    }
                });
        Channel server = sb.bind(NettyTestSupport.host(), 0).sync().channel();
        try {
            int port = ((java.net.InetSocketAddress) server.localAddress()).getPort();
            EchoClientHandler handler = new EchoClientHandler(payload);
            Bootstrap b = new Bootstrap()
                    .group(workers)
                    .channel(clientClass)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(handler);
                        }
                    });
            ChannelFuture f = b.connect(NettyTestSupport.host(), port).sync();
            byte[] back = handler.done.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS);
            f.channel().closeFuture().await(10, TimeUnit.SECONDS);
            return back;
        } finally {
            server.close().sync();
        }
    }

    private static byte[] payload(int n) {
        byte[] p = new byte[n];
        new Random(n).nextBytes(p);
        return p;
    }

    @Test
    void echoOverNioFirstSoTheExampleItselfIsRight() throws Exception {
        EventLoopGroup g = NettyTestSupport.nioGroup(2);
        try {
            byte[] p = payload(100_000);
            assertArrayEquals(p, echo(g, g, NioServerSocketChannel.class, NioSocketChannel.class, p));
        } finally {
            NettyTestSupport.shutdown(g);
        }
    }

    @Test
    void echoOverRdmaOnNettysOwnNioEventLoops() throws Exception {
        EventLoopGroup g = NettyTestSupport.nioGroup(2);
        try {
            byte[] p = payload(300_000); // several times the peer's receive buffers: credits must come back
            assertArrayEquals(p, echo(g, g, RdmaServerChannel.class, RdmaChannel.class, p));
        } finally {
            NettyTestSupport.shutdown(g);
        }
    }

    @Test
    void echoOverRdmaOnRdmaEventLoops() throws Exception {
        EventLoopGroup boss = new RdmaEventLoopGroup(1);
        EventLoopGroup workers = new RdmaEventLoopGroup(2);
        try {
            byte[] p = payload(1 << 20);
            assertArrayEquals(p, echo(boss, workers, RdmaServerChannel.class, RdmaChannel.class, p));
        } finally {
            NettyTestSupport.shutdown(boss, workers);
        }
    }

    @Test
    void manyClientsAtOnce() throws Exception {
        EventLoopGroup g = new RdmaEventLoopGroup(2);
        try {
            ServerBootstrap sb = new ServerBootstrap()
                    .group(g)
                    .channel(RdmaServerChannel.class)
                    .childHandler(new EchoServerHandler());
            Channel server = sb.bind(NettyTestSupport.host(), 0).sync().channel();
            int port = ((java.net.InetSocketAddress) server.localAddress()).getPort();
            try {
                EchoClientHandler[] hs = new EchoClientHandler[4];
                for (int i = 0; i < hs.length; i++) {
                    hs[i] = new EchoClientHandler(payload(20_000 + i));
                    new Bootstrap()
                            .group(g)
                            .channel(RdmaChannel.class)
                            .handler(hs[i])
                            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                            .connect(NettyTestSupport.host(), port)
                            .sync();
                }
                for (int i = 0; i < hs.length; i++) {
                    assertArrayEquals(
                            payload(20_000 + i),
                            hs[i].done.get(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS),
                            "client " + i);
                }
            } finally {
                server.close().sync();
            }
            assertTrue(!server.isOpen());
            assertEquals(false, server.isActive());
        } finally {
            NettyTestSupport.shutdown(g);
        }
    }
}
