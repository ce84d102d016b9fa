package dev.jrdma.verbs;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of receive requests that any number of QPs created on it
 * ({@link QpInitAttr.Builder#srq}) consume from, in the order they were posted. Those QPs have no receive queue of
 * their own: post receives here, not on the QP.
 */
public interface SharedReceiveQueue extends AutoCloseable {
    ProtectionDomain pd();

    /** {@code ibv_query_srq}: its capacities as rounded by the provider, and the armed limit (0 = none). */
    SrqAttr query();

    /**
     * {@code ibv_modify_srq} with {@code IBV_SRQ_LIMIT}: arms the limit. When the number of receives the SRQ holds
     * drops below {@code limit}, the context raises {@link AsyncEventType#SRQ_LIMIT_REACHED} once and the limit is
     * disarmed (0) until armed again.
     */
    void modifyLimit(int limit);

    /** {@code ibv_post_srq_recv} of a chain of receive requests linked through {@code next}. Allocates nothing. */
    void postRecv(RecvWorkRequest wr);

    boolean isClosed();

    /** {@code ibv_destroy_srq}, after closing the QPs created on it. Idempotent. */
    @Override
    void close();
}
