package dev.jrdma.connect;

import java.net.SocketAddress;

/**
 * The side channel of a connection after set-up: the goodbye of a graceful close, its acknowledgement, and the
 * news that the peer is gone. TCP (the out-of-band socket) or rdma_cm (its disconnect events).
 */
interface Control {
    SocketAddress remoteAddress();

    SocketAddress localAddress();

    /** Tells the peer this side closes. Never throws. */
    void bye();

    /** Tells a closing peer that this side has nothing in flight any more. Never throws. */
    void byeAck();

    /** Starts watching: calls {@link Endpoint#peerBye()}, {@link Endpoint#peerAcked()}, {@link Endpoint#peerLost()}. */
    void start(Endpoint ep);

    /** Releases the channel. Idempotent. */
    void close();
}
