package dev.jrdma.verbs;

/** Queue pair states ({@code enum ibv_qp_state}), in the order of their libibverbs values. */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERR;

    public int code() {
        return ordinal();
    }

    public static QpState of(int code) {
        QpState[] v = values();
        if (code < 0 || code >= v.length) throw new IllegalArgumentException("unknown QP state " + code);
        return v[code];
    }
}
