package dev.jrdma.verbs;

/** Flags of a send work request ({@code enum ibv_send_flags}). */
public enum SendFlag {
    /** Wait for prior RDMA READ and atomic operations to complete before this one starts. */
    FENCE(1),
    /** Generate a completion for this work request (without it, only errors complete, unless sq_sig_all). */
    SIGNALED(2),
    /** Ask the receiver to raise a solicited completion event. */
    SOLICITED(4),
    /** Copy the payload into the work request at post time; the buffers need no lkey and may be reused at once. */
    INLINE(8),
    IP_CSUM(16);

    public final int bit;

    SendFlag(int bit) {
        this.bit = bit;
    }
}
