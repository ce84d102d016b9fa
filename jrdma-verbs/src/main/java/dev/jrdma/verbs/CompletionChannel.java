package dev.jrdma.verbs;

import java.time.Duration;

/**
 * A completion event channel ({@code struct ibv_comp_channel}). A thread blocks in {@link #awaitEvent} until an
 * armed CQ gets a completion, instead of spinning on poll. The pattern, as in C:
 * <pre>{@code
 * cq.requestNotify(false);
 * CompletionQueue ready = channel.awaitEvent(Duration.ofSeconds(5));
 * ready.ackEvents(1);
 * ready.requestNotify(false);   // re-arm, then poll until empty
 * while ((n = ready.poll(wcs)) > 0) { ... }
 * }</pre>
 */
public interface CompletionChannel extends AutoCloseable {
    /** {@return the context the channel was created in} */
    Context context();

    /**
     * {@code ibv_get_cq_event}: waits for the next event.
     *
     * @param timeout how long to wait; null waits for good
     * @return the CQ that had the event, or null when the timeout passed first or {@link #wakeup()} was called
     */
    CompletionQueue awaitEvent(Duration timeout);

    /**
     * Makes an {@link #awaitEvent} blocked on another thread return null at once, or, when none is blocked, the next
     * one (like {@code Selector.wakeup}): a thread waiting for completions can be stopped or given other work without
     * waiting on a timer. Several wakeups before an await count as one.
     */
    void wakeup();

    /** {@return whether it was destroyed (directly or with its context)} */
    boolean isClosed();

    /** {@code ibv_destroy_comp_channel}. Idempotent. */
    @Override
    void close();
}
