package dev.jrdma.verbs;

/** A completion queue ({@code struct ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {
    Context context();

    /** The number of completions it holds (at least what was asked for). */
    int capacity();

    /**
     * {@code ibv_resize_cq}: makes the CQ hold at least {@code cqe} completions; {@link #capacity()} says what it
     * holds now. The completions in it stay. Fails (EINVAL) below the number it holds.
     */
    void resize(int cqe);

    /** The channel its events go to, or null. */
    CompletionChannel channel();

    /**
     * {@code ibv_poll_cq}: fills up to {@code wcs.length} completions, oldest first, and returns how many.
     * Allocates nothing. Throws {@link VerbsException} (ENOSPC) once completions were lost because the queue
     * overflowed (make it larger or poll more often): a CQ overrun is reported, never silent.
     */
    int poll(WorkCompletion[] wcs);

    /** Polls into at most the first {@code max} elements. */
    int poll(WorkCompletion[] wcs, int max);

    /** {@code ibv_req_notify_cq}: arm the CQ for one event on its channel, for any completion or only solicited ones. */
    void requestNotify(boolean solicitedOnly);

    /** {@code ibv_ack_cq_events}: acknowledge events received from the channel (all must be acked before close). */
    void ackEvents(int n);

    boolean isClosed();

    /** {@code ibv_destroy_cq}. Idempotent. */
    @Override
    void close();
}
