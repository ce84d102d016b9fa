package dev.jrdma.netty;

import io.netty.channel.IoHandle;

/**
 * What an {@link RdmaIoHandler} serves: the event-loop side of a jrdma channel. The handler drives the endpoint groups
 * of its loop, so completions run on the loop (on another kind of loop they come from the group's own thread, as
 * tasks); the handle itself receives no I/O events.
 */
public interface RdmaIoHandle extends IoHandle {
    /** Closes the channel at once (its event loop is shutting down). */
    void closeNow();
}
