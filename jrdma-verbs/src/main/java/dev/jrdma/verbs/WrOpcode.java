package dev.jrdma.verbs;

/** Send work request opcodes ({@code enum ibv_wr_opcode}). */
public enum WrOpcode {
    /** {@code IBV_WR_RDMA_WRITE}: write the local buffers into remote memory; the peer sees no completion. */
    RDMA_WRITE(0),
    /**
     * {@code IBV_WR_RDMA_WRITE_WITH_IMM}: an RDMA WRITE that also consumes a receive at the peer, which completes with the
     * immediate data.
     */
    RDMA_WRITE_WITH_IMM(1),
    /** {@code IBV_WR_SEND}: send the local buffers into the peer's next posted receive. */
    SEND(2),
    /** {@code IBV_WR_SEND_WITH_IMM}: a SEND whose receive completion also carries 32 bits of immediate data. */
    SEND_WITH_IMM(3),
    /** {@code IBV_WR_RDMA_READ}: read remote memory into the local buffers (RC only). */
    RDMA_READ(4),
    /**
     * {@code IBV_WR_ATOMIC_CMP_AND_SWP}: if the remote 8-byte word equals {@code compareAdd}, write {@code swap}; the
     * original word comes back in the local buffer (RC only).
     */
    ATOMIC_CMP_AND_SWP(5),
    /**
     * {@code IBV_WR_ATOMIC_FETCH_AND_ADD}: add {@code compareAdd} to the remote 8-byte word; the original word comes back in
     * the local buffer (RC only).
     */
    ATOMIC_FETCH_AND_ADD(6),
    /** {@code IBV_WR_LOCAL_INV}: invalidate a type 2 memory window's rkey ({@code invalidateRkey}) locally. */
    LOCAL_INV(7),
    /** {@code IBV_WR_BIND_MW}: bind a type 2 memory window ({@code bindMw} and the other {@code bind*} fields). */
    BIND_MW(8),
    /** {@code IBV_WR_SEND_WITH_INV}: a SEND that also invalidates {@code invalidateRkey} at the peer. */
    SEND_WITH_INV(9);

    /** The {@code enum ibv_wr_opcode} value. */
    public final int code;

    WrOpcode(int code) {
        this.code = code;
    }

    /**
     * The opcode of a libibverbs value.
     *
     * @param code an {@code enum ibv_wr_opcode} value, 0..9
     * @return its opcode
     * @throws IllegalArgumentException for another value
     */
    public static WrOpcode of(int code) {
        for (WrOpcode o : values()) if (o.code == code) return o;
        throw new IllegalArgumentException("unknown work request opcode " + code);
    }

    /** {@return whether this is an atomic operation (compare-and-swap or fetch-and-add)} */
    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** {@return the opcode a successful completion of this request reports} */
    public WcOpcode completionOpcode() {
        return switch (this) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WcOpcode.RDMA_WRITE;
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> WcOpcode.SEND;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> WcOpcode.FETCH_ADD;
            case LOCAL_INV -> WcOpcode.LOCAL_INV;
            case BIND_MW -> WcOpcode.BIND_MW;
        };
    }
}
