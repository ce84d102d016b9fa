package dev.jrdma.verbs;

/** Queue pair states ({@code enum ibv_qp_state}), in the order of their libibverbs values. */
public enum QpState {
    /** {@code IBV_QPS_RESET} (0): just created, or reset: no work request can be posted yet. */
    RESET,
    /** {@code IBV_QPS_INIT} (1): port and access set; receives may be posted, not sends. */
    INIT,
    /** {@code IBV_QPS_RTR} (2): ready to receive: the peer is known and incoming packets are handled. */
    RTR,
    /** {@code IBV_QPS_RTS} (3): ready to send: sends and receives are processed. */
    RTS,
    /** {@code IBV_QPS_SQD} (4): send queue drain: requests in flight finish, new ones wait; some attributes can change. */
    SQD,
    /** {@code IBV_QPS_SQE} (5): send queue error (UC and UD): a send failed; receives still work; move back to RTS. */
    SQE,
    /** {@code IBV_QPS_ERR} (6): error: every outstanding and new request completes with WR_FLUSH_ERR. */
    ERR;

    /** {@return the {@code enum ibv_qp_state} value (the ordinal)} */
    public int code() {
        return ordinal();
    }

    /**
     * The state of a libibverbs value.
     *
     * @param code an {@code enum ibv_qp_state} value, 0..6
     * @return its state
     * @throws IllegalArgumentException for another value
     */
    public static QpState of(int code) {
        QpState[] v = values();
        if (code < 0 || code >= v.length) throw new IllegalArgumentException("unknown QP state " + code);
        return v[code];
    }
}
