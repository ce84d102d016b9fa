package dev.jrdma.bench.netty;

import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.netty.RdmaChannelConfig;
import dev.jrdma.netty.RdmaChannelOption;
import dev.jrdma.netty.RdmaEventLoopGroup;
import dev.jrdma.netty.RdmaServerChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The server process of {@link GrpcBench}: a gRPC echo service (one unary method, bytes in, the same bytes out) on
 * grpc-netty over epoll or jrdma-netty, one event loop, {@code directExecutor}; a second method answers the
 * process's JIT compilation time so far ({@link #JIT_MILLIS}). It prints {@code LISTENING <port>}
 * once it serves and stops when its standard input closes (its parent ended or is done with it).
 * <pre>
 *   GrpcBenchServer epoll|jrdma HOST
 * </pre>
 */
public final class GrpcBenchServer {
    /** The one method: the request's bytes are the answer. */
    static final MethodDescriptor<byte[], byte[]> ECHO = unaryBytes("Echo");

    /**
     * The server process's JIT so far: the answer is its total compilation time in milliseconds, as decimal text (the
     * client's warm-up waits until this process's JIT is quiet too, not only its own).
     */
    static final MethodDescriptor<byte[], byte[]> JIT_MILLIS = unaryBytes("JitMillis");

    /** A unary method of the {@code jrdma.bench.Echo} service with bytes in and bytes out. */
    private static MethodDescriptor<byte[], byte[]> unaryBytes(String method) {
        return MethodDescriptor.<byte[], byte[]>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName(MethodDescriptor.generateFullMethodName("jrdma.bench.Echo", method))
                .setRequestMarshaller(Bytes.INSTANCE)
                .setResponseMarshaller(Bytes.INSTANCE)
                .build();
    }

    /** The line the server prints before its port once it serves. */
    static final String READY = "LISTENING ";

    private GrpcBenchServer() {}

    /**
     * Serves until standard input closes.
     *
     * @param args the transport ({@code epoll} or {@code jrdma}) and the address to listen on
     * @throws Exception when the server cannot start
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: GrpcBenchServer epoll|jrdma HOST");
            System.exit(2);
        }
        EventLoopGroup group = eventLoops(args[0]);
        NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress(args[1], 0))
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group)
                .directExecutor()
                .addService(ServerServiceDefinition.builder("jrdma.bench.Echo")
                        .addMethod(ECHO, ServerCalls.asyncUnaryCall(GrpcBenchServer::echo))
                        .addMethod(JIT_MILLIS, ServerCalls.asyncUnaryCall(GrpcBenchServer::jitMillis))
                        .build());
        if (args[0].equals("jrdma")) {
            if (GrpcTrace.PREFIX != null) b.channelFactory(() -> GrpcTrace.onServer(new RdmaServerChannel()));
            else b.channelType(RdmaServerChannel.class);
            b.withOption(RdmaChannelOption.ENDPOINT_CONFIG, endpointConfig(null));
        } else {
            if (GrpcTrace.PREFIX != null) b.channelFactory(() -> GrpcTrace.onServer(new EpollServerSocketChannel()));
            else b.channelType(EpollServerSocketChannel.class);
        }
        Server server = b.build().start();
        System.out.println(READY + server.getPort());
        System.out.flush();
        try {
            while (System.in.read() >= 0) {
                // nothing to read: the parent closes our input when it is done
            }
        } finally {
            server.shutdownNow();
            server.awaitTermination(5, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    private static void echo(byte[] request, StreamObserver<byte[]> out) {
        out.onNext(request);
        out.onCompleted();
    }

    private static void jitMillis(byte[] request, StreamObserver<byte[]> out) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long millis = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        out.onNext(Long.toString(millis).getBytes(StandardCharsets.US_ASCII));
        out.onCompleted();
    }

    /**
     * One event loop of the transport's kind.
     *
     * @param transport {@code epoll} or {@code jrdma}
     * @return the group
     */
    static EventLoopGroup eventLoops(String transport) {
        return switch (transport) {
            case "jrdma" -> new RdmaEventLoopGroup(1);
            case "epoll" -> new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
            default -> throw new IllegalArgumentException("unknown transport '" + transport + "': use epoll or jrdma");
        };
    }

    /**
     * The channel defaults with a set-up timeout long enough for a cold JVM.
     *
     * @param localAddress the client's own address (its software device), or null
     * @return the endpoint settings of a benchmark connection
     */
    static EndpointConfig endpointConfig(String localAddress) {
        EndpointConfig.Builder b =
                RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder().timeout(Duration.ofSeconds(30));
        if (localAddress != null) b.localAddress(localAddress);
        return b.build();
    }

    /** gRPC messages that are their bytes. */
    enum Bytes implements MethodDescriptor.Marshaller<byte[]> {
        INSTANCE;

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
