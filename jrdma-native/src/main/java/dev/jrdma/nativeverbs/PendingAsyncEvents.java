package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.AsyncEvent;
import dev.jrdma.verbs.AsyncEventType;
import java.util.ArrayList;
import java.util.List;

/**
 * The asynchronous events handed out about one QP, CQ or SRQ and not yet acknowledged. libibverbs' destroy of the
 * object waits until every event it reported was acknowledged, so the object's free calls {@link #close} first:
 * it acknowledges what is left, and any event read after it is acknowledged at once instead of handed out. So a
 * forgotten ack never hangs a close.
 */
final class PendingAsyncEvents {
    private final List<AsyncEvent> events = new ArrayList<>();
    private boolean closed;

    /**
     * Called under the context's asyncLock: the event to hand out, or null when the object is being destroyed
     * (then the event was acknowledged here).
     */
    synchronized AsyncEvent register(AsyncEventType type, Object element, Runnable ack) {
        if (closed) {
            ack.run();
            return null;
        }
        AsyncEvent[] self = new AsyncEvent[1];
        AsyncEvent e = new AsyncEvent(type, element, () -> {
            ack.run();
            forget(self[0]);
        });
        self[0] = e;
        events.add(e);
        return e;
    }

    private synchronized void forget(AsyncEvent e) {
        events.remove(e);
    }

    /** From the object's free, before its ibv_destroy_*: acknowledges every event not yet acknowledged. */
    void close(NativeContext context) {
        List<AsyncEvent> left;
        synchronized (context.asyncLock) { // no register can be between reading the event and handing it out
            synchronized (this) {
                closed = true;
                left = new ArrayList<>(events);
            }
        }
        for (AsyncEvent e : left) e.ack(); // idempotent: an ack by the user on another thread runs the native ack once
    }
}
