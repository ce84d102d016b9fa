package dev.jrdma.verbs;

/**
 * The kinds of asynchronous event ({@code enum ibv_event_type}), with what each is about: a queue pair, a completion
 * queue, a shared receive queue, a port, or the whole device.
 */
public enum AsyncEventType {
    /** A CQ overran or failed: completions were lost; the CQ is no longer usable as it was. */
    CQ_ERR(0, Scope.CQ),
    /** A QP went to ERR on its own (a local error the requester or responder could not report in a completion). */
    QP_FATAL(1, Scope.QP),
    /** The responder saw an invalid request (an opcode out of sequence, an unsupported operation) and went to ERR. */
    QP_REQ_ERR(2, Scope.QP),
    /** The responder refused a remote access (rkey, bounds, rights) and went to ERR. */
    QP_ACCESS_ERR(3, Scope.QP),
    /** A QP in RTR received its first packet: communication is established (a CM can then move it to RTS). */
    COMM_EST(4, Scope.QP),
    /** A QP moved to SQD with {@code en_sqd_async_notify} has no send request in flight any more. */
    SQ_DRAINED(5, Scope.QP),
    PATH_MIG(6, Scope.QP),
    PATH_MIG_ERR(7, Scope.QP),
    /** The device failed: every object of the context is unusable; close it. */
    DEVICE_FATAL(8, Scope.DEVICE),
    PORT_ACTIVE(9, Scope.PORT),
    /** The port left ACTIVE (link down): QPs through it will time out. */
    PORT_ERR(10, Scope.PORT),
    LID_CHANGE(11, Scope.PORT),
    PKEY_CHANGE(12, Scope.PORT),
    SM_CHANGE(13, Scope.PORT),
    /** A shared receive queue failed. */
    SRQ_ERR(14, Scope.SRQ),
    /** A shared receive queue holds fewer receives than its armed limit; the limit is disarmed (re-arm with modifySrq). */
    SRQ_LIMIT_REACHED(15, Scope.SRQ),
    /** A QP on a shared receive queue went to ERR and will consume no more of the SRQ's receives. */
    QP_LAST_WQE_REACHED(16, Scope.QP),
    CLIENT_REREGISTER(17, Scope.PORT),
    /** The port's GID table changed (an address was added or removed on RoCE). */
    GID_CHANGE(18, Scope.PORT),
    WQ_FATAL(19, Scope.WQ);

    /** What an event of this kind is about. */
    public enum Scope { QP, CQ, SRQ, WQ, PORT, DEVICE }

    public final int code;
    public final Scope scope;

    AsyncEventType(int code, Scope scope) {
        this.code = code;
        this.scope = scope;
    }

    /** The type of a code, or null for a code this library does not know (a newer kernel's). */
    public static AsyncEventType of(int code) {
        for (AsyncEventType t : values()) if (t.code == code) return t;
        return null;
    }
}
