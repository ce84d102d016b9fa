package dev.jrdma.verbs;

/** An RDMA device ({@code struct ibv_device}), found through {@link Verbs#devices()}. Opening it gives a {@link Context}. */
public interface Device {
    /** The device name, e.g. {@code mlx5_0}, {@code rxe0} or {@code soft_lo}. */
    String name();

    /** The provider that serves it: {@code native} or {@code soft}. */
    String provider();

    /** The node GUID, in host order (ibv_devices prints it as 16 hex digits). */
    long nodeGuid();

    NodeType nodeType();

    TransportType transportType();

    /** Opens the device ({@code ibv_open_device}). */
    Context open();

    /** The node GUID as ibv_devices prints it. */
    default String nodeGuidString() {
        return String.format("%016x", nodeGuid());
    }
}
