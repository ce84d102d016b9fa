package dev.jrdma.verbs;

/** The kind of node a device is ({@code enum ibv_node_type}), from {@link Device#nodeType()}. */
public enum NodeType {
    /** {@code IBV_NODE_UNKNOWN} (-1): a value this library does not know. */
    UNKNOWN(-1),
    /** {@code IBV_NODE_CA} (1): a channel adapter, InfiniBand or RoCE (rxe, mlx5 and the software device are CAs). */
    CA(1),
    /** {@code IBV_NODE_SWITCH} (2): an InfiniBand switch. */
    SWITCH(2),
    /** {@code IBV_NODE_ROUTER} (3): an InfiniBand router. */
    ROUTER(3),
    /** {@code IBV_NODE_RNIC} (4): an iWARP adapter. */
    RNIC(4),
    /** {@code IBV_NODE_USNIC} (5): a Cisco usNIC. */
    USNIC(5),
    /** {@code IBV_NODE_USNIC_UDP} (6): a Cisco usNIC over UDP. */
    USNIC_UDP(6),
    /** {@code IBV_NODE_UNSPECIFIED} (7): the driver does not say. */
    UNSPECIFIED(7);

    /** The {@code enum ibv_node_type} value. */
    public final int code;

    NodeType(int code) {
        this.code = code;
    }

    /**
     * The node type of a libibverbs value.
     *
     * @param code an {@code enum ibv_node_type} value
     * @return its type, or {@link #UNKNOWN} for a value this library does not know
     */
    public static NodeType of(int code) {
        for (NodeType t : values()) if (t.code == code) return t;
        return UNKNOWN;
    }
}
