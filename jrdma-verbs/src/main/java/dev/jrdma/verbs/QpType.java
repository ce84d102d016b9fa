package dev.jrdma.verbs;

/** Queue pair transport types ({@code enum ibv_qp_type}). */
public enum QpType {
    /** {@code IBV_QPT_RC} (2): reliable connected: one peer QP, acknowledged, in order; SEND, RDMA WRITE/READ and atomics. */
    RC(2),
    /** {@code IBV_QPT_UC} (3): unreliable connected: one peer QP, no acknowledgements; SEND and RDMA WRITE. */
    UC(3),
    /** {@code IBV_QPT_UD} (4): unreliable datagram: any peer per send (an address handle), messages of at most one MTU. */
    UD(4);

    /** The {@code enum ibv_qp_type} value. */
    public final int code;

    QpType(int code) {
        this.code = code;
    }

    /**
     * The QP type of a libibverbs value.
     *
     * @param code an {@code enum ibv_qp_type} value: 2, 3 or 4
     * @return its type
     * @throws IllegalArgumentException for a type jrdma does not support
     */
    public static QpType of(int code) {
        for (QpType t : values()) if (t.code == code) return t;
        throw new IllegalArgumentException("unknown QP type " + code);
    }
}
