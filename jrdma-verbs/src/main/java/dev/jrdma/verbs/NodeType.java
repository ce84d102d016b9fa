package dev.jrdma.verbs;

/** {@code enum ibv_node_type}. */
public enum NodeType {
    UNKNOWN(-1), CA(1), SWITCH(2), ROUTER(3), RNIC(4), USNIC(5), USNIC_UDP(6), UNSPECIFIED(7);

    public final int code;

    NodeType(int code) {
        this.code = code;
    }

    public static NodeType of(int code) {
        for (NodeType t : values()) if (t.code == code) return t;
        return UNKNOWN;
    }
}
