package dev.jrdma.verbs;

/** An RDMA device ({@code struct ibv_device}), found through {@link Verbs#devices()}. Opening it gives a {@link Context}. */
public interface Device {
    /** {@return the device name, e.g. {@code mlx5_0}, {@code rxe0} or {@code soft_lo}} */
    String name();

    /** {@return the name of the provider that serves it: {@code native} or {@code soft}} */
    String provider();

    /** {@return the node GUID, in host order (ibv_devices prints it as 16 hex digits)} */
    long nodeGuid();

    /** {@return the kind of node ({@code node_type}): a channel adapter for RoCE and InfiniBand devices} */
    NodeType nodeType();

    /** {@return the transport ({@code transport_type}): IB for RoCE and InfiniBand devices} */
    TransportType transportType();

    /**
     * Opens the device ({@code ibv_open_device}).
     *
     * @return a new context; close it when done
     * @throws VerbsException when the device cannot be opened (gone, no permission on its character device)
     */
    Context open();

    /** {@return the node GUID as ibv_devices prints it: 16 lower-case hex digits} */
    default String nodeGuidString() {
        return String.format("%016x", nodeGuid());
    }
}
