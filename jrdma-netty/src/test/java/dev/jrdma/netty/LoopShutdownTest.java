package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Timeout;

/**
 * An RDMA event loop shut down while its channels are open closes them, as Netty's own loops do, and their handlers
 * see {@code channelInactive} before the loop ends. The graceful close runs on a closer thread and hands the loop the
 * channel's last events at its end: a loop that ended first (a quiet period of 0, as netty-bench shuts its groups
 * down) rejected that task ({@code RejectedExecutionException: event executor terminated}, logged by Netty) and the
 * accepted channel never went inactive. And Netty's loop calls {@code prepareToDestroy} only when it sees the shutdown
 * between its I/O and its tasks: a shutdown begun just after that look ended the loop without it, the channels still
 * open ({@code RdmaIoHandler} closes them from a shutdown hook as well).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LoopShutdownTest {
    static {
        NettyTestSupport.init();
    }

    /** Counts a channel's activation and its end. */
    static final class Lifecycle extends ChannelInboundHandlerAdapter {
        final CountDownLatch active = new CountDownLatch(1), inactive = new CountDownLatch(1);

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            active.countDown();
            ctx.fireChannelActive();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            inactive.countDown();
            ctx.fireChannelInactive();
        }
    }

    @RepeatedTest(3) // the missed prepareToDestroy came in most repetitions in one JVM (31 of 40 before the fix)
    void aLoopShutDownWithOpenChannelsClosesThemBeforeItEnds() throws Exception {
        EventLoopGroup serverLoop = new RdmaEventLoopGroup(1), clientLoop = new RdmaEventLoopGroup(1);
        Lifecycle child = new Lifecycle(), client = new Lifecycle();
        try {
            Channel server = new ServerBootstrap()
                    .group(serverLoop)
                    .channel(RdmaServerChannel.class)
                    .childOption(
                            RdmaChannelOption.ENDPOINT_CONFIG,
                            NettyTestSupport.config().build())
                    .childHandler(child)
                    .bind(NettyTestSupport.host(), 0)
                    .sync()
                    .channel();
            new Bootstrap()
                    .group(clientLoop)
                    .channel(RdmaChannel.class)
                    .option(
                            RdmaChannelOption.ENDPOINT_CONFIG,
                            NettyTestSupport.config().build())
                    .handler(client)
                    .connect(
                            (InetSocketAddress) server.localAddress(),
                            new InetSocketAddress(NettyTestSupport.host(), 0))
                    .sync();
            assertTrue(child.active.await(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS), "accepted");
            // no channel closed by hand: the loop's shutdown closes them (quiet period 0: it ends as soon as it may)
            serverLoop.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
            assertEquals(0, child.inactive.getCount(), "the accepted channel went inactive before its loop ended");
            assertTrue(
                    client.inactive.await(NettyTestSupport.patienceSeconds(), TimeUnit.SECONDS),
                    "and the client saw it close");
            clientLoop.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        } finally {
            NettyTestSupport.shutdown(clientLoop, serverLoop);
        }
    }
}
