package dev.jrdma.verbs;

/** Work completion opcodes ({@code enum ibv_wc_opcode}). */
public enum WcOpcode {
    SEND(0), RDMA_WRITE(1), RDMA_READ(2), COMP_SWAP(3), FETCH_ADD(4), BIND_MW(5), LOCAL_INV(6), TSO(7),
    ATOMIC_WRITE(9), RECV(128), RECV_RDMA_WITH_IMM(129);

    public final int code;

    WcOpcode(int code) {
        this.code = code;
    }

    private static final WcOpcode[] BY_CODE = new WcOpcode[130];

    static {
        for (WcOpcode o : values()) BY_CODE[o.code] = o;
    }

    /** Never allocates; null for a code libibverbs does not define. */
    public static WcOpcode of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    public boolean isReceive() {
        return code >= 128;
    }
}
