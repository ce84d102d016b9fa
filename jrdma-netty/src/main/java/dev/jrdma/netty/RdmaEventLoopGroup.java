package dev.jrdma.netty;

import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.util.concurrent.ThreadFactory;

/**
 * Event loops for jrdma channels: a {@link MultiThreadIoEventLoopGroup} of {@link RdmaIoHandler}s.
 * {@link RdmaChannel} and {@link RdmaServerChannel} also run on any other single-threaded Netty event loop
 * (NIO's, for instance), so a program can swap only the channel class.
 */
public final class RdmaEventLoopGroup extends MultiThreadIoEventLoopGroup {
    /** As many loops as Netty's default (twice the cores). */
    public RdmaEventLoopGroup() {
        super(RdmaIoHandler.newFactory());
    }

    /**
     * A group of {@code threads} event loops.
     *
     * @param threads the number of loops; 0 picks Netty's default
     */
    public RdmaEventLoopGroup(int threads) {
        super(threads, RdmaIoHandler.newFactory());
    }

    /**
     * A group of {@code threads} event loops on threads made by {@code threadFactory}.
     *
     * @param threads       the number of loops; 0 picks Netty's default
     * @param threadFactory makes the loops' threads
     */
    public RdmaEventLoopGroup(int threads, ThreadFactory threadFactory) {
        super(threads, threadFactory, RdmaIoHandler.newFactory());
    }
}
