package dev.jrdma.verbs;

/** {@code IBV_LINK_LAYER_*}: what the port runs on. */
public enum LinkLayer {
    UNSPECIFIED(0), INFINIBAND(1), ETHERNET(2);

    public final int code;

    LinkLayer(int code) {
        this.code = code;
    }

    public static LinkLayer of(int code) {
        for (LinkLayer l : values()) if (l.code == code) return l;
        return UNSPECIFIED;
    }

    public String ibvName() {
        return switch (this) {
            case INFINIBAND -> "InfiniBand";
            case ETHERNET -> "Ethernet";
            case UNSPECIFIED -> "Unknown";
        };
    }
}
