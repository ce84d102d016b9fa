package dev.jrdma.verbs;

/** A completion queue ({@code struct ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {
    /** {@return the context the CQ was created in} */
    Context context();

    /** {@return the number of completions it holds (at least what was asked for)} */
    int capacity();

    /**
     * {@code ibv_resize_cq}: makes the CQ hold at least {@code cqe} completions; {@link #capacity()} says what it
     * holds now. The completions in it stay.
     *
     * @param cqe the new minimum capacity
     * @throws VerbsException (EINVAL) below the number of completions it holds now, or above the device's limit
     */
    void resize(int cqe);

    /** {@return the channel its events go to, or null} */
    CompletionChannel channel();

    /**
     * {@code ibv_poll_cq}: fills up to {@code wcs.length} completions, oldest first, and returns how many.
     * Allocates nothing.
     *
     * @param wcs where to put them
     * @return how many completions were filled in, from the first element; 0 when there are none
     * @throws VerbsException (ENOSPC) once completions were lost because the queue overflowed (make it larger or poll
     *         more often): a CQ overrun is reported, never silent
     */
    int poll(WorkCompletion[] wcs);

    /**
     * Polls into at most the first {@code max} elements; see {@link #poll(WorkCompletion[])}.
     *
     * @param wcs where to put them
     * @param max the most completions to take, at most {@code wcs.length}
     * @return how many completions were filled in
     * @throws VerbsException (ENOSPC) once completions were lost because the queue overflowed
     */
    int poll(WorkCompletion[] wcs, int max);

    /**
     * {@code ibv_poll_cq} into {@link Completions}, read in place: the fast path for a loop that polls often and reads
     * a few fields of each completion (the native provider's poll_cq writes straight into its memory; nothing is
     * copied or decoded). Allocates nothing.
     *
     * @param out where the provider writes them
     * @param max the most completions to take, at most {@code out.capacity()}
     * @return how many entries of {@code out} were filled, from the first; 0 when there are none
     * @throws VerbsException (ENOSPC) once completions were lost because the queue overflowed
     */
    default int poll(Completions out, int max) {
        WorkCompletion[] wcs = out.scratch();
        int n = poll(wcs, Math.min(max, out.capacity()));
        for (int i = 0; i < n; i++) out.set(i, wcs[i]);
        return n;
    }

    /**
     * {@code ibv_req_notify_cq}: arm the CQ for one event on its channel.
     *
     * @param solicitedOnly true for an event only on a solicited receive or an error; false for any completion
     */
    void requestNotify(boolean solicitedOnly);

    /**
     * {@code ibv_ack_cq_events}: acknowledge events received from the channel (all must be acked before close).
     *
     * @param n how many events of this CQ to acknowledge
     */
    void ackEvents(int n);

    /** {@return whether it was closed (directly or with its context)} */
    boolean isClosed();

    /** {@code ibv_destroy_cq}. Idempotent. */
    @Override
    void close();
}
