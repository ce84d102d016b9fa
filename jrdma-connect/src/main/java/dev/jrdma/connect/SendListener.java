package dev.jrdma.connect;

/**
 * Told when a send of {@link Endpoint#send(RegisteredBuffer, long, int, SendListener)} is done: the allocation-free
 * counterpart of the future that {@link Endpoint#send(RegisteredBuffer, long, int)} returns. One listener serves any
 * number of sends (sends complete in the order they were made); it runs on the group's owner thread and must not
 * block.
 */
@FunctionalInterface
public interface SendListener {
    /**
     * A send completed.
     *
     * @param failure null when the peer's adapter acknowledged the message, else why the send failed (the same
     *                {@link RdmaException} the future would fail with)
     */
    void sent(RdmaException failure);
}
