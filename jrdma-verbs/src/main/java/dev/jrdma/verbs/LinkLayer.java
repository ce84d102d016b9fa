package dev.jrdma.verbs;

/** {@code IBV_LINK_LAYER_*}: what the port runs on. */
public enum LinkLayer {
    /** {@code IBV_LINK_LAYER_UNSPECIFIED} (0): the driver does not say; also what an unknown value maps to. */
    UNSPECIFIED(0),
    /** {@code IBV_LINK_LAYER_INFINIBAND} (1): InfiniBand: ports are addressed by LID. */
    INFINIBAND(1),
    /** {@code IBV_LINK_LAYER_ETHERNET} (2): Ethernet (RoCE): ports are addressed by GID. */
    ETHERNET(2);

    /** The {@code IBV_LINK_LAYER_*} value. */
    public final int code;

    LinkLayer(int code) {
        this.code = code;
    }

    /**
     * The link layer of a libibverbs value.
     *
     * @param code an {@code IBV_LINK_LAYER_*} value
     * @return its link layer, or {@link #UNSPECIFIED} for a value this library does not know
     */
    public static LinkLayer of(int code) {
        for (LinkLayer l : values()) if (l.code == code) return l;
        return UNSPECIFIED;
    }

    /** {@return the name as {@code ibv_devinfo} prints it: InfiniBand, Ethernet or Unknown} */
    public String ibvName() {
        return switch (this) {
            case INFINIBAND -> "InfiniBand";
            case ETHERNET -> "Ethernet";
            case UNSPECIFIED -> "Unknown";
        };
    }
}
