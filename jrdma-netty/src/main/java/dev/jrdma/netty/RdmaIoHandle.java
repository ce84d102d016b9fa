package dev.jrdma.netty;

import io.netty.channel.IoHandle;

/**
 * What an {@link RdmaIoHandler} serves: the event-loop side of a jrdma channel. Completions arrive on jrdma's
 * completion thread, which hands them to the channel's event loop as tasks; the handle itself receives no I/O events.
 */
public interface RdmaIoHandle extends IoHandle {
    /** Closes the channel at once (its event loop is shutting down). */
    void closeNow();
}
