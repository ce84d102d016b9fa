package dev.jrdma.verbs;

/** The logical state of a port ({@code enum ibv_port_state}), from {@link PortAttr#state()}. */
public enum PortState {
    /** {@code IBV_PORT_NOP} (0): no state change; also what an unknown value maps to. */
    NOP(0),
    /** {@code IBV_PORT_DOWN} (1): the link is down. */
    DOWN(1),
    /** {@code IBV_PORT_INIT} (2): the link is up but the port is not configured (InfiniBand: no subnet manager yet). */
    INIT(2),
    /** {@code IBV_PORT_ARMED} (3): configured, waiting to become active. */
    ARMED(3),
    /** {@code IBV_PORT_ACTIVE} (4): the port passes traffic. */
    ACTIVE(4),
    /** {@code IBV_PORT_ACTIVE_DEFER} (5): active, but recovering from a link error. */
    ACTIVE_DEFER(5);

    /** The {@code enum ibv_port_state} value. */
    public final int code;

    PortState(int code) {
        this.code = code;
    }

    /**
     * The state of a libibverbs value.
     *
     * @param code an {@code enum ibv_port_state} value
     * @return its state, or {@link #NOP} for a value this library does not know
     */
    public static PortState of(int code) {
        for (PortState s : values()) if (s.code == code) return s;
        return NOP;
    }

    /** {@return the name as {@code ibv_devinfo} prints it, e.g. {@code PORT_ACTIVE}} */
    public String ibvName() {
        return "PORT_" + name();
    }
}
