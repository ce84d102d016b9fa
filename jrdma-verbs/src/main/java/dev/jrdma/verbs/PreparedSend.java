package dev.jrdma.verbs;

/**
 * A send work request (or chain) checked and written into the provider's format once, to post again and again: the
 * fast path for a loop that posts the same request with at most a new {@code wr_id}, as perftest's loops do (DiSNI
 * calls this a stateful verb call). Made by {@link QueuePair#prepareSend}; it is a snapshot: changing the
 * {@link SendWorkRequest} afterwards does not change it (prepare it again). Posting allocates nothing.
 *
 * <p>A post is as safe as {@link QueuePair#postSend}: it is refused once the QP is closed, once a memory region its
 * SGEs name lost its memory (its arena was closed), and once a region its inline data comes from, or the address
 * handle of a UD request, was closed. Nothing to close: its native copy is freed with the object.
 */
public interface PreparedSend {
    /** {@return the queue pair it posts to} */
    QueuePair qp();

    /**
     * {@code ibv_post_send} of the prepared request(s), with the {@code wr_id} they were prepared with.
     *
     * @throws PostException when the provider refused a request (QP state, a full queue), or a region it names was
     *         closed since: the requests before {@link PostException#badIndex()} were posted
     * @throws ClosedException when the QP is closed
     */
    void post();

    /**
     * {@code ibv_post_send} of the prepared request(s), the first with {@code wrId} as its {@code wr_id} this time (the
     * others, and a later {@link #post()}, keep the prepared ones).
     *
     * @param wrId the identifier the first request's completion carries
     * @throws PostException as {@link #post()}
     * @throws ClosedException when the QP is closed
     */
    void post(long wrId);
}
