package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.connect.Endpoint;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A received buffer a handler never releases is reported: Netty's leak detector cannot see it (it lies in a reused
 * receive slot and is never collected), the endpoint's leak watch does, counted on the endpoint and its group and
 * logged once, with the last handler that got it (the pipeline touches it at each handler). The limit is the
 * shortest the watch resolves (its scans run with the group's timeout checks): the wait is for that event, bounded.
 */
class ReceivedLeakTest {
    static {
        NettyTestSupport.config();
    }

    private static EventLoopGroup group;

    @BeforeAll
    static void start() {
        group = new RdmaEventLoopGroup(1);
    }

    @AfterAll
    static void stop() {
        NettyTestSupport.shutdown(group);
    }

    @Test
    void aReceivedBufferAHandlerKeepsIsReportedOnce() throws Exception {
        CompletableFuture<ByteBuf> kept = new CompletableFuture<>();
        CompletableFuture<Endpoint> served = new CompletableFuture<>();
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(RdmaServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        Endpoint ep = ((RdmaChannel) ctx.channel()).endpoint();
                        ep.group().lentHoldLimit(Duration.ofMillis(1));
                        ep.group().recordLentSites(true);
                        served.complete(ep);
                        // the channel takes the endpoint's messages now: the client sends once it hears this
                        ctx.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {0}));
                        ctx.fireChannelActive();
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        kept.complete((ByteBuf) msg); // kept, never released: a leak
                    }
                })
                .bind(NettyTestSupport.host(), 0)
                .sync()
                .channel();
        Channel client = null;
        try {
            client = new Bootstrap()
                    .group(group)
                    .channel(RdmaChannel.class)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis())
                    .handler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ((ByteBuf) msg).release();
                            ctx.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {1, 2, 3}));
                        }
                    })
                    .connect(NettyTestSupport.host(), ((InetSocketAddress) server.localAddress()).getPort())
                    .sync()
                    .channel();
            ByteBuf buf = kept.get(20, TimeUnit.SECONDS);
            Endpoint ep = served.get();
            assertTrue(buf instanceof ReceivedByteBuf, "read in its receive slot: " + buf.getClass());
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ep.lentLeaks() == 0 && System.nanoTime() < end) Thread.onSpinWait();
            assertEquals(1, ep.lentLeaks(), "held past the limit: reported");
            assertEquals(1, ep.group().lentLeaks());
            buf.release(); // the slot and the peer's credit come back; the count stays
            assertEquals(1, ep.lentLeaks());
        } finally {
            if (client != null) client.close().sync();
            server.close().sync();
        }
    }
}
