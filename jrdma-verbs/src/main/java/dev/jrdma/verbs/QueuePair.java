package dev.jrdma.verbs;

import java.util.Set;

/**
 * A queue pair ({@code struct ibv_qp}). Walk it RESET → INIT → RTR → RTS with {@link #modify}, then post.
 * Posting allocates nothing: the work request objects are read, never kept.
 */
public interface QueuePair extends AutoCloseable {
    /** {@return the protection domain the QP was created in} */
    ProtectionDomain pd();

    /** {@return the transport type: RC, UC or UD} */
    QpType type();

    /** {@return the QP number ({@code qp_num}), 24 bits: what a peer puts in its DEST_QPN or UD remote QPN} */
    int qpNum();

    /** {@return the current state: ERR after a failed completion or an error event} */
    QpState state();

    /** {@return the completion queue of the send queue} */
    CompletionQueue sendCq();

    /** {@return the completion queue of the receive queue} */
    CompletionQueue recvCq();

    /** {@return the capacities it was created with, as rounded by the provider} */
    QpCap cap();

    /**
     * {@code ibv_modify_qp}. Checked against {@link QpStateMachine} first.
     *
     * @param attr the attributes to change; its mask says which
     * @throws VerbsException (EINVAL) for an illegal transition or a missing or extra attribute, naming what is legal
     */
    void modify(QpAttr attr);

    /**
     * {@code ibv_query_qp}.
     *
     * @return the QP's current attributes, every one present in the mask
     */
    QpAttr query();

    /**
     * {@code ibv_post_send} of a chain of work requests linked through {@code next}. The requests are copied: they may be
     * changed as soon as the call returns. Allocates nothing.
     *
     * @param wr the first request of the chain
     * @throws PostException when a request was refused (QP state, a full queue, too many SGEs, inline data too long): the
     *         requests before {@link PostException#badIndex()} were posted
     */
    void postSend(SendWorkRequest wr);

    /**
     * Checks a chain of send work requests and writes it into the provider's format once, for {@link PreparedSend#post}
     * to post again and again: the fast path when the same request is posted many times (a benchmark, a ring of
     * buffers each with its own request). The requests are copied: changing them afterwards changes nothing prepared.
     * The default copies the chain and posts it with {@link #postSend}; the native provider checks it once and posts
     * its native copy (what a post then costs: jrdma-bench's README, "The native provider against C").
     *
     * @param wr the first request of the chain
     * @return the prepared request(s)
     * @throws PostException when a request would be refused by {@link #postSend} for its contents (too many SGEs,
     *         inline data too long, a region not of this PD), or is a BIND_MW (not preparable)
     * @throws ClosedException when the QP is closed
     */
    default PreparedSend prepareSend(SendWorkRequest wr) {
        return new CopiedSend(this, wr);
    }

    /**
     * {@code ibv_post_recv} of a chain of work requests linked through {@code next}. Allocates nothing.
     *
     * @param wr the first request of the chain
     * @throws PostException when a request was refused (QP in RESET, a full queue, too many SGEs, a QP on an SRQ): the
     *         requests before {@link PostException#badIndex()} were posted
     */
    void postRecv(RecvWorkRequest wr);

    /**
     * {@code ibv_bind_mw} for a type 1 window: posts a bind on the send queue and returns the window's new rkey.
     * Its completion (BIND_MW) arrives when {@code signaled} is true, or on error.
     *
     * @param mw       the type 1 window
     * @param wrId     the {@code wr_id} of the bind's completion
     * @param signaled whether a successful bind completes
     * @param mr       the region the window opens onto; it needs {@link Access#MW_BIND}
     * @param addr     the window's start address, inside {@code mr}
     * @param length   the window's length in bytes; 0 unbinds
     * @param access   what the window grants the peer, at most what {@code mr} grants
     * @return the rkey a peer uses with the window from now on
     * @throws VerbsException when the window is not type 1 or the bind cannot be posted
     */
    int bindMemoryWindow(
            MemoryWindow mw, long wrId, boolean signaled, MemoryRegion mr, long addr, long length, Set<Access> access);

    /** {@return whether it was closed (directly or with a parent)} */
    boolean isClosed();

    /** {@code ibv_destroy_qp}. Idempotent. */
    @Override
    void close();
}
