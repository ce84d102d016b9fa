package dev.jrdma.verbs;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An asynchronous event ({@code struct ibv_async_event}) from {@link Context#awaitAsyncEvent}. Acknowledge each
 * one with {@link #ack()} once it is handled, as {@code ibv_ack_async_event} requires: libibverbs' destroy of a
 * QP, CQ or SRQ waits for the acknowledgement of every event it reported (jrdma acknowledges what is left when the
 * object closes, so a forgotten ack never hangs a close).
 */
public final class AsyncEvent {
    private final AsyncEventType type;
    private final Object element;
    private final Runnable acknowledge;
    private final AtomicBoolean acked = new AtomicBoolean();

    /**
     * For providers.
     *
     * @param type        what happened
     * @param element     the QP, CQ or SRQ the event is about, the port number (an Integer) for port events, or null
     *                    for a device event
     * @param acknowledge run once, by the first {@link #ack()}
     * @throws IllegalArgumentException when {@code element} does not fit the type's {@link AsyncEventType#scope}
     */
    public AsyncEvent(AsyncEventType type, Object element, Runnable acknowledge) {
        this.type = Objects.requireNonNull(type, "type");
        this.acknowledge = Objects.requireNonNull(acknowledge, "acknowledge");
        boolean fits = switch (type.scope) {
            case QP -> element instanceof QueuePair;
            case CQ -> element instanceof CompletionQueue;
            case SRQ -> element instanceof SharedReceiveQueue;
            case PORT -> element instanceof Integer;
            case WQ, DEVICE -> element == null;
        };
        if (!fits) throw new IllegalArgumentException(type + " is about a " + type.scope + ", not " + element);
        this.element = element;
    }

    /** {@return what happened ({@code event_type})} */
    public AsyncEventType type() {
        return type;
    }

    /** {@return the QP the event is about, or null when it is not about a QP} */
    public QueuePair queuePair() {
        return element instanceof QueuePair q ? q : null;
    }

    /** {@return the CQ the event is about, or null} */
    public CompletionQueue completionQueue() {
        return element instanceof CompletionQueue c ? c : null;
    }

    /** {@return the SRQ the event is about, or null} */
    public SharedReceiveQueue sharedReceiveQueue() {
        return element instanceof SharedReceiveQueue s ? s : null;
    }

    /** {@return the port number of a port event, else 0} */
    public int port() {
        return element instanceof Integer p ? p : 0;
    }

    /** {@code ibv_ack_async_event}. Idempotent: only the first call acknowledges. */
    public void ack() {
        if (acked.compareAndSet(false, true)) acknowledge.run();
    }

    /** {@return whether {@link #ack()} was called (or the object's close acknowledged it)} */
    public boolean isAcked() {
        return acked.get();
    }

    @Override
    public String toString() {
        return "AsyncEvent[" + type
                + (element == null
                        ? ""
                        : type.scope == AsyncEventType.Scope.PORT ? " port " + element : " on " + element)
                + "]";
    }
}
