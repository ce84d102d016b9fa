package dev.jrdma.examples;

import dev.jrdma.netty.RdmaChannel;
import dev.jrdma.netty.RdmaChannelOption;
import dev.jrdma.netty.RdmaEventLoopGroup;
import dev.jrdma.netty.RdmaServerChannel;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * gRPC-java over RDMA: grpc-netty with jrdma's Netty channels ({@code channelType(RdmaChannel.class)},
 * {@code eventLoopGroup(new RdmaEventLoopGroup())}). A greeter with a unary call and a server-streaming call;
 * messages are UTF-8 strings (a marshaller of a few lines instead of generated protobuf code).
 * <pre>
 *   jrdma example grpc                     both sides here
 *   jrdma example grpc --server            on host A
 *   jrdma example grpc --connect A         on host B
 * </pre>
 */
public final class GrpcExample {
    /** The TCP port the gRPC server listens on unless {@code --port} says otherwise. */
    public static final int DEFAULT_PORT = 18614;
    /** The full name of the greeter service. */
    public static final String SERVICE = "jrdma.Greeter";

    /** UTF-8 strings as gRPC messages. */
    public static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    /** One request, one answer. */
    public static final MethodDescriptor<String, String> SAY_HELLO =
            method("SayHello", MethodDescriptor.MethodType.UNARY);
    /** One request, {@code n} answers ("count:N:name"). */
    public static final MethodDescriptor<String, String> COUNT =
            method("Count", MethodDescriptor.MethodType.SERVER_STREAMING);

    private static MethodDescriptor<String, String> method(String name, MethodDescriptor.MethodType type) {
        return MethodDescriptor.<String, String>newBuilder()
                .setType(type)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(UTF8)
                .setResponseMarshaller(UTF8)
                .build();
    }

    /**
     * {@return the greeter service: {@link #SAY_HELLO} answers "hello NAME", {@link #COUNT} streams N numbered answers}
     */
    public static ServerServiceDefinition service() {
        return ServerServiceDefinition.builder(SERVICE)
                .addMethod(SAY_HELLO, ServerCalls.asyncUnaryCall((String name, StreamObserver<String> out) -> {
                    out.onNext("hello " + name);
                    out.onCompleted();
                }))
                .addMethod(COUNT, ServerCalls.asyncServerStreamingCall((String req, StreamObserver<String> out) -> {
                    String[] p = req.split(":", 2);
                    int n = Integer.parseInt(p[0]);
                    for (int i = 1; i <= n; i++) out.onNext(p[1] + " #" + i);
                    out.onCompleted();
                }))
                .build();
    }

    /**
     * A gRPC server on jrdma channels: grpc-netty with {@link RdmaServerChannel} as its channel type.
     *
     * @param address where to listen
     * @param group   the event loops of both the acceptor and the connections, e.g. a {@link RdmaEventLoopGroup}
     * @param cfg     the endpoint settings of the connections, or null for the channel's defaults
     * @return the started server
     * @throws IOException when the server cannot bind
     */
    public static Server startServer(
            InetSocketAddress address, EventLoopGroup group, dev.jrdma.connect.EndpointConfig cfg) throws IOException {
        NettyServerBuilder b = NettyServerBuilder.forAddress(address)
                .channelType(RdmaServerChannel.class) // the one change from a TCP gRPC server ...
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group) // ... and its event loops
                .addService(service());
        if (cfg != null) b.withOption(RdmaChannelOption.ENDPOINT_CONFIG, cfg);
        return b.build().start();
    }

    /**
     * A gRPC client channel on jrdma channels: grpc-netty with {@link RdmaChannel} as its channel type, plaintext.
     *
     * @param host  the server's host
     * @param port  the server's port
     * @param group the event loops of the connection
     * @param cfg   the endpoint settings, or null for the channel's defaults
     * @return the channel; it connects on the first call
     */
    public static ManagedChannel channel(
            String host, int port, EventLoopGroup group, dev.jrdma.connect.EndpointConfig cfg) {
        NettyChannelBuilder b = NettyChannelBuilder.forAddress(host, port)
                .channelType(RdmaChannel.class)
                .eventLoopGroup(group)
                .usePlaintext();
        if (cfg != null) {
            b.withOption(RdmaChannelOption.ENDPOINT_CONFIG, cfg);
            // jrdma's set-up ends within the endpoint timeout with its own reason: Netty's timer only backs it up
            b.withOption(io.netty.channel.ChannelOption.CONNECT_TIMEOUT_MILLIS, (int)
                    Math.min(Integer.MAX_VALUE, cfg.timeout().toMillis() + 5000));
        }
        return b.build();
    }

    private GrpcExample() {} // only static entry points

    /**
     * Runs the example from the command line and exits with its status.
     *
     * @param args the {@link ExampleOptions} flags
     * @throws Exception when set-up or a call fails
     */
    public static void main(String[] args) throws Exception {
        System.exit(run(ExampleOptions.parse(args, DEFAULT_PORT), System.out));
    }

    /**
     * Runs the server, the client or both: a unary call and a streaming call of {@code --count} answers (100 by default).
     *
     * @param o   the parsed options
     * @param out where the calls' results are printed
     * @return 0 when every answer was right, 1 otherwise
     * @throws Exception when set-up or a call fails
     */
    public static int run(ExampleOptions o, PrintStream out) throws Exception {
        int count = o.count < 0 ? 100 : Math.max(1, o.count);
        EventLoopGroup group = new RdmaEventLoopGroup(2);
        try {
            if (o.role == ExampleOptions.Role.CLIENT) return client(o, o.serverHost(), o.port, count, group, out);
            if (o.role == ExampleOptions.Role.BOTH) o.port = 0;
            Server server = startServer(o.serverAddress(), group, o.config().build());
            try {
                out.printf("gRPC server on %s over jrdma%n", server.getListenSockets());
                if (o.role == ExampleOptions.Role.SERVER) {
                    server.awaitTermination();
                    return 0;
                }
                return client(o, o.serverHost(), server.getPort(), count, group, out);
            } finally {
                server.shutdown();
                if (!server.awaitTermination(o.timeout.toSeconds(), TimeUnit.SECONDS)) server.shutdownNow();
            }
        } finally {
            group.shutdownGracefully(100, 2000, TimeUnit.MILLISECONDS).syncUninterruptibly();
        }
    }

    private static int client(ExampleOptions o, String host, int port, int count, EventLoopGroup group, PrintStream out)
            throws Exception {
        ManagedChannel ch = channel(
                host, port, group, o.config().localAddress(o.clientLocal(0)).build());
        try {
            CallOptions call = CallOptions.DEFAULT.withDeadlineAfter(o.timeout.toMillis(), TimeUnit.MILLISECONDS);
            long[] rtt = new long[count];
            for (int i = 0; i < count; i++) {
                long t0 = System.nanoTime();
                String reply = ClientCalls.blockingUnaryCall(ch, SAY_HELLO, call, "jrdma " + i);
                rtt[i] = System.nanoTime() - t0;
                if (!reply.equals("hello jrdma " + i)) {
                    out.printf("client: FAILED, call %d answered \"%s\"%n", i, reply);
                    return 1;
                }
            }
            Arrays.sort(rtt);
            out.printf(
                    "client: %d unary calls ok; latency min %.1f us, median %.1f us, 99%% %.1f us%n",
                    count, rtt[0] / 1e3, rtt[count / 2] / 1e3, rtt[Math.min(count - 1, (int) (count * 0.99))] / 1e3);
            List<String> streamed = new ArrayList<>();
            Iterator<String> it = ClientCalls.blockingServerStreamingCall(ch, COUNT, call, "5:stream");
            it.forEachRemaining(streamed::add);
            if (!streamed.equals(List.of("stream #1", "stream #2", "stream #3", "stream #4", "stream #5"))) {
                out.printf("client: FAILED, the stream brought %s%n", streamed);
                return 1;
            }
            out.printf("client: server-streaming call ok: %s%n", String.join(", ", streamed));
            return 0;
        } finally {
            ch.shutdown();
            if (!ch.awaitTermination(5, TimeUnit.SECONDS)) ch.shutdownNow();
        }
    }
}
