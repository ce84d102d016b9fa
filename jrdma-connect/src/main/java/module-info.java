/**
 * Connections over jrdma verbs: the out-of-band exchange and rdma_cm set-up, endpoints with credits and futures,
 * buffer pools, the remote lock and memory-window grants ({@code dev.jrdma.connect}), and rdma_cm itself as an API
 * ({@code dev.jrdma.cm}). rdma_cm is reached through FFM: on the module path grant
 * {@code --enable-native-access=dev.jrdma.connect} where rdma_cm is used.
 */
module dev.jrdma.connect {
    requires transitive dev.jrdma.verbs;
    requires jdk.net;
    requires jdk.jfr;

    exports dev.jrdma.connect;
    exports dev.jrdma.cm;
}
