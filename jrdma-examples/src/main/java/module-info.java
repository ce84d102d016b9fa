/**
 * The example programs: the first RDMA application, echo, key-value, remote-lock and gRPC examples.
 */
@SuppressWarnings("requires-automatic") // gRPC's jars are automatic modules, named by their manifests
module dev.jrdma.examples {
    requires dev.jrdma.connect;
    requires dev.jrdma.netty;
    requires io.grpc;
    requires io.grpc.netty;
    requires io.grpc.stub;

    exports dev.jrdma.examples;
}
