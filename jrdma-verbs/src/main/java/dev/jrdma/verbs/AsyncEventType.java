package dev.jrdma.verbs;

/**
 * The kinds of asynchronous event ({@code enum ibv_event_type}), with what each is about: a queue pair, a completion
 * queue, a shared receive queue, a port, or the whole device.
 */
public enum AsyncEventType {
    /**
     * {@code IBV_EVENT_CQ_ERR}: a CQ overran or failed: completions were lost; the CQ is no longer usable as it was.
     */
    CQ_ERR(0, Scope.CQ),
    /**
     * {@code IBV_EVENT_QP_FATAL}: a QP went to ERR on its own (a local error the requester or responder could not report
     * in a completion).
     */
    QP_FATAL(1, Scope.QP),
    /**
     * {@code IBV_EVENT_QP_REQ_ERR}: the responder saw an invalid request (an opcode out of sequence, an unsupported
     * operation) and went to ERR.
     */
    QP_REQ_ERR(2, Scope.QP),
    /**
     * {@code IBV_EVENT_QP_ACCESS_ERR}: the responder refused a remote access (rkey, bounds, rights) and went to ERR.
     */
    QP_ACCESS_ERR(3, Scope.QP),
    /**
     * {@code IBV_EVENT_COMM_EST}: a QP in RTR received its first packet: communication is established (a CM can then move
     * it to RTS).
     */
    COMM_EST(4, Scope.QP),
    /**
     * {@code IBV_EVENT_SQ_DRAINED}: a QP moved to SQD with {@code en_sqd_async_notify} has no send request in flight any
     * more.
     */
    SQ_DRAINED(5, Scope.QP),
    /** {@code IBV_EVENT_PATH_MIG}: the QP migrated to its alternate path (path migration; not used by jrdma). */
    PATH_MIG(6, Scope.QP),
    /** {@code IBV_EVENT_PATH_MIG_ERR}: a migration to the alternate path failed. */
    PATH_MIG_ERR(7, Scope.QP),
    /** {@code IBV_EVENT_DEVICE_FATAL}: the device failed: every object of the context is unusable; close it. */
    DEVICE_FATAL(8, Scope.DEVICE),
    /** {@code IBV_EVENT_PORT_ACTIVE}: the port became ACTIVE (link up). */
    PORT_ACTIVE(9, Scope.PORT),
    /** {@code IBV_EVENT_PORT_ERR}: the port left ACTIVE (link down): QPs through it will time out. */
    PORT_ERR(10, Scope.PORT),
    /** {@code IBV_EVENT_LID_CHANGE}: the port's LID changed (InfiniBand). */
    LID_CHANGE(11, Scope.PORT),
    /** {@code IBV_EVENT_PKEY_CHANGE}: the port's P_Key table changed. */
    PKEY_CHANGE(12, Scope.PORT),
    /** {@code IBV_EVENT_SM_CHANGE}: the subnet manager of the port changed (InfiniBand). */
    SM_CHANGE(13, Scope.PORT),
    /** {@code IBV_EVENT_SRQ_ERR}: a shared receive queue failed. */
    SRQ_ERR(14, Scope.SRQ),
    /**
     * {@code IBV_EVENT_SRQ_LIMIT_REACHED}: a shared receive queue holds fewer receives than its armed limit; the limit is
     * disarmed (re-arm with {@link SharedReceiveQueue#modifyLimit}).
     */
    SRQ_LIMIT_REACHED(15, Scope.SRQ),
    /**
     * {@code IBV_EVENT_QP_LAST_WQE_REACHED}: a QP on a shared receive queue went to ERR and will consume no more of the
     * SRQ's receives.
     */
    QP_LAST_WQE_REACHED(16, Scope.QP),
    /**
     * {@code IBV_EVENT_CLIENT_REREGISTER}: the subnet manager asks clients to register their subscriptions again
     * (InfiniBand).
     */
    CLIENT_REREGISTER(17, Scope.PORT),
    /** {@code IBV_EVENT_GID_CHANGE}: the port's GID table changed (an address was added or removed on RoCE). */
    GID_CHANGE(18, Scope.PORT),
    /** {@code IBV_EVENT_WQ_FATAL}: a work queue ({@code struct ibv_wq}, not used by jrdma) failed. */
    WQ_FATAL(19, Scope.WQ),
    /**
     * jrdma-specific (no libibverbs value; the software device raises it, a native device never does): a connected QP
     * received a burst of packets that no peer of its connection sends: PSNs far outside its window, or packets from
     * another UDP source port than its peer's. Someone is forging packets for this QP (sweeping PSNs to find its
     * window). The QP stays up: the forgeries were dropped and counted, and for a while it obeys a NAK only when it
     * names the oldest unacknowledged PSN. Informational; the code lies outside the {@code ibv_event_type} range.
     */
    QP_FORGERY_SUSPECTED(0x1_0000, Scope.QP);

    /** What an event of this kind is about. */
    public enum Scope {
        /** A queue pair: {@link AsyncEvent#queuePair()}. */
        QP,
        /** A completion queue: {@link AsyncEvent#completionQueue()}. */
        CQ,
        /** A shared receive queue: {@link AsyncEvent#sharedReceiveQueue()}. */
        SRQ,
        /** A work queue, which jrdma does not model: the event names none. */
        WQ,
        /** A port: {@link AsyncEvent#port()}. */
        PORT,
        /** The whole device. */
        DEVICE
    }

    /** The {@code enum ibv_event_type} value. */
    public final int code;
    /** What events of this kind are about. */
    public final Scope scope;

    AsyncEventType(int code, Scope scope) {
        this.code = code;
        this.scope = scope;
    }

    /**
     * The type of a libibverbs value.
     *
     * @param code an {@code enum ibv_event_type} value
     * @return its type, or null for a code this library does not know (a newer kernel's)
     */
    public static AsyncEventType of(int code) {
        for (AsyncEventType t : values()) if (t.code == code) return t;
        return null;
    }
}
