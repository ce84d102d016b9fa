package dev.jrdma.verbs;

/** Flags of a send work request ({@code enum ibv_send_flags}). */
public enum SendFlag {
    /** Wait for prior RDMA READ and atomic operations to complete before this one starts. */
    FENCE(1),
    /** Generate a completion for this work request (without it, only errors complete, unless sq_sig_all). */
    SIGNALED(2),
    /** Ask the receiver to raise a solicited completion event. */
    SOLICITED(4),
    /**
     * Copy the payload into the work request at post time; the buffers may be reused as soon as the post returns.
     * Up to the QP's max_inline_data bytes. Portable code points the SGEs at registered memory of the QP's PD
     * (the software device requires it; a hardware device ignores the lkey).
     */
    INLINE(8),
    IP_CSUM(16);

    public final int bit;

    SendFlag(int bit) {
        this.bit = bit;
    }
}
