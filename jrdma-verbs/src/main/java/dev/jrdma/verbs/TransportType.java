package dev.jrdma.verbs;

/** The transport a device speaks ({@code enum ibv_transport_type}), from {@link Device#transportType()}. */
public enum TransportType {
    /** {@code IBV_TRANSPORT_UNKNOWN} (-1): a value this library does not know. */
    UNKNOWN(-1),
    /** {@code IBV_TRANSPORT_IB} (0): the InfiniBand transport, also used by RoCE (rxe, mlx5, the software device). */
    IB(0),
    /** {@code IBV_TRANSPORT_IWARP} (1): iWARP over TCP. */
    IWARP(1),
    /** {@code IBV_TRANSPORT_USNIC} (2): Cisco usNIC. */
    USNIC(2),
    /** {@code IBV_TRANSPORT_USNIC_UDP} (3): Cisco usNIC over UDP. */
    USNIC_UDP(3),
    /** {@code IBV_TRANSPORT_UNSPECIFIED} (4): the driver does not say. */
    UNSPECIFIED(4);

    /** The {@code enum ibv_transport_type} value. */
    public final int code;

    TransportType(int code) {
        this.code = code;
    }

    /**
     * The transport of a libibverbs value.
     *
     * @param code an {@code enum ibv_transport_type} value
     * @return its transport, or {@link #UNKNOWN} for a value this library does not know
     */
    public static TransportType of(int code) {
        for (TransportType t : values()) if (t.code == code) return t;
        return UNKNOWN;
    }
}
