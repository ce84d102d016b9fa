package dev.jrdma.verbs;

/** {@code enum ibv_transport_type}. */
public enum TransportType {
    UNKNOWN(-1), IB(0), IWARP(1), USNIC(2), USNIC_UDP(3), UNSPECIFIED(4);

    public final int code;

    TransportType(int code) {
        this.code = code;
    }

    public static TransportType of(int code) {
        for (TransportType t : values()) if (t.code == code) return t;
        return UNKNOWN;
    }
}
