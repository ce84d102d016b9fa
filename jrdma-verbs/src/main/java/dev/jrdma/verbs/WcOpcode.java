package dev.jrdma.verbs;

/** Work completion opcodes ({@code enum ibv_wc_opcode}). */
public enum WcOpcode {
    /** {@code IBV_WC_SEND} (0): a SEND, SEND_WITH_IMM or SEND_WITH_INV completed. */
    SEND(0),
    /** {@code IBV_WC_RDMA_WRITE} (1): an RDMA WRITE (with or without immediate) completed. */
    RDMA_WRITE(1),
    /** {@code IBV_WC_RDMA_READ} (2): an RDMA READ completed: the data is in the local buffers. */
    RDMA_READ(2),
    /** {@code IBV_WC_COMP_SWAP} (3): a compare-and-swap completed: the original word is in the local buffer. */
    COMP_SWAP(3),
    /** {@code IBV_WC_FETCH_ADD} (4): a fetch-and-add completed: the original word is in the local buffer. */
    FETCH_ADD(4),
    /** {@code IBV_WC_BIND_MW} (5): a memory window bind completed. */
    BIND_MW(5),
    /** {@code IBV_WC_LOCAL_INV} (6): a local invalidate completed. */
    LOCAL_INV(6),
    /** {@code IBV_WC_TSO} (7): a TCP segmentation offload send completed (raw packet QPs; not used by jrdma). */
    TSO(7),
    /** {@code IBV_WC_ATOMIC_WRITE} (9): an atomic write completed (not posted by jrdma). */
    ATOMIC_WRITE(9),
    /** {@code IBV_WC_RECV} (128): a receive consumed by an incoming SEND. */
    RECV(128),
    /** {@code IBV_WC_RECV_RDMA_WITH_IMM} (129): a receive consumed by an RDMA WRITE with immediate. */
    RECV_RDMA_WITH_IMM(129);

    /** The {@code enum ibv_wc_opcode} value. */
    public final int code;

    WcOpcode(int code) {
        this.code = code;
    }

    private static final WcOpcode[] BY_CODE = new WcOpcode[130];

    static {
        for (WcOpcode o : values()) BY_CODE[o.code] = o;
    }

    /**
     * The opcode of a libibverbs value, without allocating.
     *
     * @param code an {@code enum ibv_wc_opcode} value
     * @return its opcode, or null for a value libibverbs does not define
     */
    public static WcOpcode of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** {@return whether it completes a receive (the {@code IBV_WC_RECV} bit, 128, is set)} */
    public boolean isReceive() {
        return code >= 128;
    }
}
