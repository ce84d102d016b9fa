package dev.jrdma.cm;

/** The events of {@code enum rdma_cm_event_type}, in their numeric order. */
public enum CmEventType {
    /** {@code rdma_resolve_addr} finished: the id is bound to a local device. */
    ADDR_RESOLVED,
    /** Address resolution failed; the status says why. */
    ADDR_ERROR,
    /** {@code rdma_resolve_route} finished: {@code rdma_connect} may follow. */
    ROUTE_RESOLVED,
    /** Route resolution failed. */
    ROUTE_ERROR,
    /** A listening id received a connection request; the event's id is the new connection's. */
    CONNECT_REQUEST,
    /** The server accepted and the QP was not created through rdma_cm: move the QP to RTR/RTS, then {@code establish}. */
    CONNECT_RESPONSE,
    /** Connecting failed after the request was sent. */
    CONNECT_ERROR,
    /** The remote side did not answer (or, for UD, refused the service). */
    UNREACHABLE,
    /** The remote side rejected; the status is the IB CM reject reason, the private data the peer's. */
    REJECTED,
    /** The connection is up (for UD: the SIDR reply with the remote QPN and Q_Key arrived). */
    ESTABLISHED,
    /** The peer disconnected, or answered our disconnect. */
    DISCONNECTED,
    /** The device the id is bound to went away. */
    DEVICE_REMOVAL,
    /** A multicast join finished. */
    MULTICAST_JOIN,
    /** A multicast join failed. */
    MULTICAST_ERROR,
    /** The address the id is bound to changed. */
    ADDR_CHANGE,
    /** The connection's QP left the timewait state: its number can be used again. */
    TIMEWAIT_EXIT,
    /** {@code rdma_resolve_addrinfo} finished (newer librdmacm). */
    ADDRINFO_RESOLVED,
    /** {@code rdma_resolve_addrinfo} failed (newer librdmacm). */
    ADDRINFO_ERROR;

    private static final CmEventType[] BY_CODE = values();

    /** {@return the value of {@code enum rdma_cm_event_type} (the constant's ordinal)} */
    public int code() {
        return ordinal();
    }

    /** {@return librdmacm's name, as {@code rdma_event_str} prints it, e.g. {@code RDMA_CM_EVENT_ESTABLISHED}} */
    public String cName() {
        return "RDMA_CM_EVENT_" + name();
    }

    /**
     * The event type of a code, e.g. {@code rdma_cm_event.event}.
     *
     * @param code an {@code enum rdma_cm_event_type} value
     * @return its event type
     * @throws IllegalArgumentException when the code is not one this library knows
     */
    public static CmEventType of(int code) {
        if (code < 0 || code >= BY_CODE.length)
            throw new IllegalArgumentException("unknown rdma_cm event type " + code);
        return BY_CODE[code];
    }
}
