package dev.jrdma.verbs;

/** Flags of a send work request ({@code enum ibv_send_flags}). */
public enum SendFlag {
    /** {@code IBV_SEND_FENCE}: wait for prior RDMA READ and atomic operations to complete before this one starts. */
    FENCE(1),
    /**
     * {@code IBV_SEND_SIGNALED}: generate a completion for this work request (without it, only errors complete, unless
     * {@code sq_sig_all}).
     */
    SIGNALED(2),
    /** {@code IBV_SEND_SOLICITED}: ask the receiver to raise a solicited completion event. */
    SOLICITED(4),
    /**
     * {@code IBV_SEND_INLINE}: copy the payload into the work request at post time; the buffers may be reused as soon as the
     * post returns. Up to the QP's max_inline_data bytes. Portable code points the SGEs at registered memory of the QP's PD
     * (the software device requires it; a hardware device ignores the lkey).
     */
    INLINE(8),
    /**
     * {@code IBV_SEND_IP_CSUM}: let the device compute the IP and TCP/UDP checksums (raw packet and UD QPs of devices
     * that offer it).
     */
    IP_CSUM(16);

    /** The {@code IBV_SEND_*} bit of this flag in {@code send_flags}. */
    public final int bit;

    SendFlag(int bit) {
        this.bit = bit;
    }
}
