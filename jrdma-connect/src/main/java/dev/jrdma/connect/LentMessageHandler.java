package dev.jrdma.connect;

/**
 * Takes received messages without a copy ({@link Endpoint#onReceiveLent}): each is lent in the registered receive
 * buffer it landed in, and {@link LentMessage#release()} gives that buffer back (reposted, its credit returned to the
 * peer). Both methods run on the group's owner thread and must not block.
 */
public interface LentMessageHandler {
    /**
     * A message arrived; it stays valid until {@link LentMessage#release()}, which must be called once (from any
     * thread). Until then its buffer, and the peer's credit for it, stay taken: a handler that keeps messages slows its
     * peer down, it loses nothing.
     *
     * @param message the lent message (the same object serves its receive buffer again after the release)
     */
    void onMessage(LentMessage message);

    /**
     * No message comes any more: the peer closed (PEER_CLOSED) or went away (PEER_GONE), the endpoint broke, or it
     * was closed (CLOSED). Called once, after every message that came before it.
     *
     * @param cause why the input ended
     */
    void onEnd(RdmaException cause);
}
