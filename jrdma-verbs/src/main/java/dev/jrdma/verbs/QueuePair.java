package dev.jrdma.verbs;

import java.util.Set;

/**
 * A queue pair ({@code struct ibv_qp}). Walk it RESET → INIT → RTR → RTS with {@link #modify}, then post.
 * Posting allocates nothing: the work request objects are read, never kept.
 */
public interface QueuePair extends AutoCloseable {
    ProtectionDomain pd();

    QpType type();

    /** The QP number a peer puts in its DEST_QPN. */
    int qpNum();

    /** The current state (ERR after a failed completion). */
    QpState state();

    CompletionQueue sendCq();

    CompletionQueue recvCq();

    /** The capacities it was created with, as rounded by the provider. */
    QpCap cap();

    /** {@code ibv_modify_qp}. Checked against {@link QpStateMachine} first. */
    void modify(QpAttr attr);

    /** {@code ibv_query_qp}. */
    QpAttr query();

    /** {@code ibv_post_send} of a chain of work requests linked through {@code next}. */
    void postSend(SendWorkRequest wr);

    /** {@code ibv_post_recv} of a chain of work requests linked through {@code next}. */
    void postRecv(RecvWorkRequest wr);

    /**
     * {@code ibv_bind_mw} for a type 1 window: posts a bind on the send queue and returns the window's new rkey.
     * Its completion (BIND_MW) arrives when {@code signaled} is true, or on error.
     */
    int bindMemoryWindow(MemoryWindow mw, long wrId, boolean signaled, MemoryRegion mr, long addr, long length, Set<Access> access);

    boolean isClosed();

    /** {@code ibv_destroy_qp}. Idempotent. */
    @Override
    void close();
}
