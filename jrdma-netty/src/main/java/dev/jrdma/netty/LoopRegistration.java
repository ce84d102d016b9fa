package dev.jrdma.netty;

import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.SingleThreadEventLoop;

/**
 * A channel's registration with its event loop, the same for a connection and a server channel: with the loop's RDMA
 * I/O handler when it has one (the registration kept, to cancel at deregistration); any other single-threaded loop
 * needs nothing.
 */
final class LoopRegistration {
    private IoRegistration registration;

    /** {@return whether a channel whose unsafe is a {@code handleType} can be registered with {@code loop}} */
    static boolean isCompatible(EventLoop loop, Class<? extends RdmaIoHandle> handleType) {
        return loop instanceof SingleThreadEventLoop || (loop instanceof IoEventLoop io && io.isCompatible(handleType));
    }

    /** Registers {@code handle} with {@code loop}'s I/O handler when it has one, then completes {@code promise}. */
    void register(EventLoop loop, RdmaIoHandle handle, ChannelPromise promise) {
        if (loop instanceof IoEventLoop io && io.isCompatible(handle.getClass())) {
            io.register(handle).addListener(f -> {
                if (f.isSuccess()) {
                    registration = (IoRegistration) f.getNow();
                    promise.setSuccess();
                } else {
                    promise.setFailure(f.cause());
                }
            });
        } else {
            promise.setSuccess();
        }
    }

    /** Cancels the registration with the I/O handler, if there is one. */
    void cancel() {
        IoRegistration r = registration;
        registration = null;
        if (r != null) r.cancel();
    }
}
