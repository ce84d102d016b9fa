/**
 * A Netty 4.2 transport over jrdma connections: {@link dev.jrdma.netty.RdmaEventLoopGroup},
 * {@link dev.jrdma.netty.RdmaChannel} and {@link dev.jrdma.netty.RdmaServerChannel} take the place of Netty's
 * NIO/epoll classes, on either provider.
 */
module dev.jrdma.netty {
    requires transitive dev.jrdma.connect;
    requires transitive io.netty.transport;
    requires transitive io.netty.buffer;
    requires transitive io.netty.common;

    exports dev.jrdma.netty;
}
