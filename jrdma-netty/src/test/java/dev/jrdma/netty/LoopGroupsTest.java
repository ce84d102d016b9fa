package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.connect.EndpointConfig;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client channels of one RDMA event loop share one endpoint group per local address and settings: the loop can
 * sleep on one group's completion channel only, so a message arriving on another group waited for the loop's
 * multi-group sleep cap (200 us) — netty-bench's bimodal p50. A channel given its local address builds a copy of its
 * config ({@code toBuilder().localAddress(..)}); the copies must be equal for the channels to find the shared group.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LoopGroupsTest {
    static {
        NettyTestSupport.init();
    }

    /** A handler that does nothing, on every channel. */
    @io.netty.channel.ChannelHandler.Sharable
    static final class Idle extends ChannelInboundHandlerAdapter {}

    @Test
    void clientChannelsWithTheirLocalAddressShareTheLoopsGroup() throws Exception {
        Assumptions.assumeTrue(
                System.getProperty("jrdma.netty.test.host") == null,
                "the software device on loopback: rdma_cm connections (the guest's rxe0) have groups of their own");
        EndpointConfig cfg = NettyTestSupport.config().build();
        EventLoopGroup serverLoop = new RdmaEventLoopGroup(1), clientLoop = new RdmaEventLoopGroup(1);
        List<Channel> clients = new ArrayList<>();
        Channel server = null;
        try {
            server = new ServerBootstrap()
                    .group(serverLoop)
                    .channel(RdmaServerChannel.class)
                    .childOption(RdmaChannelOption.ENDPOINT_CONFIG, cfg)
                    .childHandler(new Idle())
                    .bind(NettyTestSupport.host(), 0)
                    .sync()
                    .channel();
            InetSocketAddress remote = (InetSocketAddress) server.localAddress();
            Bootstrap b = new Bootstrap()
                    .group(clientLoop)
                    .channel(RdmaChannel.class)
                    .option(RdmaChannelOption.ENDPOINT_CONFIG, cfg)
                    .handler(new Idle());
            for (int i = 0; i < 3; i++) {
                clients.add(b.connect(remote, new InetSocketAddress(NettyTestSupport.host(), 0))
                        .sync()
                        .channel());
            }
            int groups = clientLoop
                    .next()
                    .submit(() -> RdmaIoHandler.current().drivenGroups())
                    .get(30, TimeUnit.SECONDS);
            assertEquals(1, groups, "three client channels from one address with one config: one group on their loop");
        } finally {
            for (Channel c : clients) c.close().syncUninterruptibly();
            if (server != null) server.close().syncUninterruptibly();
            NettyTestSupport.shutdown(clientLoop, serverLoop);
        }
    }
}
