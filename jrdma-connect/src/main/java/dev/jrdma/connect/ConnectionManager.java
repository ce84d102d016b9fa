package dev.jrdma.connect;

/** How endpoints set up connections. */
public enum ConnectionManager {
    /** rdma_cm on a native device where librdmacm works; the TCP exchange otherwise (the software device). */
    AUTO,
    /** The out-of-band TCP exchange of {@link ConnParams} (any device; both sides must use it). */
    TCP,
    /** librdmacm: address and route resolution, connect/accept with private data, disconnect events (native devices). */
    RDMA_CM
}
