package dev.jrdma.netty.testsuite;

import dev.jrdma.netty.NettyTestSupport;
import dev.jrdma.netty.RdmaChannel;
import dev.jrdma.netty.RdmaEventLoopGroup;
import dev.jrdma.netty.RdmaServerChannel;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketTestPermutation;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.List;

/**
 * The bootstraps Netty's socket testsuite runs over: {@link RdmaServerChannel} and {@link RdmaChannel} on
 * {@link RdmaEventLoopGroup}s, the software device on loopback (the tests bind {@code NetUtil.LOCALHOST}, 127.0.0.1).
 * epoll's {@code EpollSocketTestPermutation} and io_uring's are the model: a boss loop and worker loops.
 */
public final class RdmaSocketTestPermutation extends SocketTestPermutation {
    static final RdmaSocketTestPermutation INSTANCE = new RdmaSocketTestPermutation();

    static {
        NettyTestSupport.init();
    }

    private final EventLoopGroup boss =
            new RdmaEventLoopGroup(1, new DefaultThreadFactory("testsuite-rdma-boss", true));
    private final EventLoopGroup workers =
            new RdmaEventLoopGroup(NUM_THREADS, new DefaultThreadFactory("testsuite-rdma-worker", true));

    private RdmaSocketTestPermutation() {}

    @Override
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socket() {
        return combo(serverSocket(), clientSocket());
    }

    @Override
    public List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socketWithFastOpen() {
        return socket(); // no TCP fast open over RDMA: the plain combination
    }

    @Override
    public List<BootstrapFactory<ServerBootstrap>> serverSocket() {
        return List.of(() -> new ServerBootstrap().group(boss, workers).channel(RdmaServerChannel.class));
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> clientSocket() {
        return List.of(() -> new Bootstrap()
                .group(workers)
                .channel(RdmaChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, NettyTestSupport.connectTimeoutMillis()));
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> clientSocketWithFastOpen() {
        return clientSocket();
    }

    @Override
    public List<BootstrapComboFactory<Bootstrap, Bootstrap>> datagram(SocketProtocolFamily family) {
        throw new UnsupportedOperationException("jrdma-netty has no datagram channel");
    }

    @Override
    public List<BootstrapFactory<Bootstrap>> datagramSocket() {
        throw new UnsupportedOperationException("jrdma-netty has no datagram channel");
    }
}
