package dev.jrdma.verbs;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of receive requests that any number of QPs created on it
 * ({@link QpInitAttr.Builder#srq}) consume from, in the order they were posted. Those QPs have no receive queue of
 * their own: post receives here, not on the QP.
 */
public interface SharedReceiveQueue extends AutoCloseable {
    /** {@return the protection domain the SRQ was created in} */
    ProtectionDomain pd();

    /**
     * {@code ibv_query_srq}.
     *
     * @return its capacities as rounded by the provider, and the armed limit (0 = none)
     */
    SrqAttr query();

    /**
     * {@code ibv_modify_srq} with {@code IBV_SRQ_LIMIT}: arms the limit. When the number of receives the SRQ holds
     * drops below {@code limit}, the context raises {@link AsyncEventType#SRQ_LIMIT_REACHED} once and the limit is
     * disarmed (0) until armed again.
     *
     * @param limit the number of receives to warn below; 0 disarms
     * @throws VerbsException (EINVAL) for a limit above the SRQ's capacity or a negative one
     */
    void modifyLimit(int limit);

    /**
     * {@code ibv_post_srq_recv} of a chain of receive requests linked through {@code next}. Allocates nothing.
     *
     * @param wr the first request of the chain
     * @throws PostException when a request was refused (a full queue, too many SGEs): the requests before
     *         {@link PostException#badIndex()} were posted
     */
    void postRecv(RecvWorkRequest wr);

    /** {@return whether it was destroyed (directly or with its protection domain)} */
    boolean isClosed();

    /** {@code ibv_destroy_srq}, after closing the QPs created on it. Idempotent. */
    @Override
    void close();
}
