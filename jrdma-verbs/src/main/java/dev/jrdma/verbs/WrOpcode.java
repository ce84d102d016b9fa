package dev.jrdma.verbs;

/** Send work request opcodes ({@code enum ibv_wr_opcode}). */
public enum WrOpcode {
    RDMA_WRITE(0),
    RDMA_WRITE_WITH_IMM(1),
    SEND(2),
    SEND_WITH_IMM(3),
    RDMA_READ(4),
    ATOMIC_CMP_AND_SWP(5),
    ATOMIC_FETCH_AND_ADD(6),
    LOCAL_INV(7),
    BIND_MW(8),
    SEND_WITH_INV(9);

    public final int code;

    WrOpcode(int code) {
        this.code = code;
    }

    public static WrOpcode of(int code) {
        for (WrOpcode o : values()) if (o.code == code) return o;
        throw new IllegalArgumentException("unknown work request opcode " + code);
    }

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** The opcode that a successful completion of this request reports. */
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
