package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.netty.RdmaChannelConfig;
import dev.jrdma.netty.RdmaEventLoopGroup;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * gRPC-java over jrdma: grpc-netty with {@code channelType(RdmaServerChannel/RdmaChannel)} and an
 * {@link RdmaEventLoopGroup}, on the software device (loopback, free ports). Unary, server-streaming and
 * bidirectional-streaming calls, a large message (many RDMA messages per gRPC frame), and a deadline. The guest runs
 * the same calls on rxe0 over rdma_cm ({@code -Djrdma.device=rxe0 -Djrdma.netty.test.host=<rxe0's address>}, see
 * {@code bin/test-in-guest}).
 */
class GrpcOverRdmaTest {
    static {
        System.setProperty("jrdma.connect.rnrRetry", "0");
    }

    private static final String HOST = System.getProperty("jrdma.netty.test.host", "127.0.0.1");
    /**
     * Deadline of each call (the first one includes the connection's set-up): 20 s, or two endpoint timeouts where the
     * run raised them ({@code -Djrdma.connect.timeoutMs}: the guest, a QEMU machine without KVM, where a cold JVM's
     * first rdma_cm set-up alone can take more than the default 10 s); {@code -Djrdma.netty.test.deadlineSeconds} sets it.
     */
    private static final long DEADLINE_S = Long.getLong(
            "jrdma.netty.test.deadlineSeconds",
            Math.max(20, 2 * RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.timeout().toSeconds()));

    private static final MethodDescriptor<String, String> CHAT = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("jrdma.Chat", "Chat"))
            .setRequestMarshaller(GrpcExample.UTF8)
            .setResponseMarshaller(GrpcExample.UTF8)
            .build();
    private static final MethodDescriptor<String, String> SLOW = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("jrdma.Chat", "Slow"))
            .setRequestMarshaller(GrpcExample.UTF8)
            .setResponseMarshaller(GrpcExample.UTF8)
            .build();

    private static EventLoopGroup group;
    private static Server server;
    private static ManagedChannel channel;

    @BeforeAll
    static void start() throws Exception {
        group = new RdmaEventLoopGroup(2);
        EndpointConfig cfg = RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder()
                .timeout(Duration.ofSeconds(Math.max(10, DEADLINE_S / 2)))
                .build();
        ServerServiceDefinition chat = ServerServiceDefinition.builder("jrdma.Chat")
                .addMethod(CHAT, ServerCalls.asyncBidiStreamingCall(out -> new StreamObserver<String>() {
                    @Override
                    public void onNext(String m) {
                        out.onNext("re: " + m);
                    }

                    @Override
                    public void onError(Throwable t) {}

                    @Override
                    public void onCompleted() {
                        out.onCompleted();
                    }
                }))
                .addMethod(SLOW, ServerCalls.asyncUnaryCall((String req, StreamObserver<String> out) -> {
                    // answers after 2 s: longer than the caller's deadline
                    CompletableFuture.delayedExecutor(2, TimeUnit.SECONDS).execute(() -> {
                        out.onNext(req);
                        out.onCompleted();
                    });
                }))
                .build();
        server = NettyServerBuilder.forAddress(new InetSocketAddress(HOST, 0))
                .channelType(dev.jrdma.netty.RdmaServerChannel.class)
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group)
                .withOption(dev.jrdma.netty.RdmaChannelOption.ENDPOINT_CONFIG, cfg)
                .addService(GrpcExample.service())
                .addService(chat)
                .build()
                .start();
        channel = GrpcExample.channel(HOST, server.getPort(), group, cfg);
    }

    @AfterAll
    static void stop() throws Exception {
        if (channel != null) {
            channel.shutdown();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.shutdown();
            server.awaitTermination(5, TimeUnit.SECONDS);
        }
        if (group != null)
            group.shutdownGracefully(100, 2000, TimeUnit.MILLISECONDS).syncUninterruptibly();
    }

    private static CallOptions call() {
        return CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_S, TimeUnit.SECONDS);
    }

    @Test
    void unaryCalls() {
        for (int i = 0; i < 50; i++) {
            assertEquals(
                    "hello rdma " + i,
                    ClientCalls.blockingUnaryCall(channel, GrpcExample.SAY_HELLO, call(), "rdma " + i));
        }
    }

    @Test
    void aLargeUnaryMessageCrossesManyRdmaMessages() {
        String big = "x".repeat(1 << 20); // 1 MiB: 64 messages of 16 KiB, several credit windows
        assertEquals("hello " + big, ClientCalls.blockingUnaryCall(channel, GrpcExample.SAY_HELLO, call(), big));
    }

    @Test
    void serverStreamingCall() {
        List<String> got = new ArrayList<>();
        Iterator<String> it = ClientCalls.blockingServerStreamingCall(channel, GrpcExample.COUNT, call(), "1000:item");
        it.forEachRemaining(got::add);
        assertEquals(1000, got.size());
        assertEquals("item #1", got.get(0));
        assertEquals("item #1000", got.get(999));
    }

    @Test
    void bidirectionalStreamingCall() throws Exception {
        CompletableFuture<List<String>> done = new CompletableFuture<>();
        List<String> got = new ArrayList<>();
        ClientCall<String, String> c = channel.newCall(CHAT, call());
        StreamObserver<String> requests = ClientCalls.asyncBidiStreamingCall(c, new StreamObserver<>() {
            @Override
            public void onNext(String v) {
                got.add(v);
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                done.complete(got);
            }
        });
        for (int i = 0; i < 200; i++) requests.onNext("m" + i);
        requests.onCompleted();
        List<String> replies = done.get(DEADLINE_S + 10, TimeUnit.SECONDS);
        assertEquals(200, replies.size());
        assertEquals("re: m0", replies.get(0));
        assertEquals("re: m199", replies.get(199));
    }

    @Test
    void aDeadlineEndsACallTheServerDoesNotAnswerInTime() {
        StatusRuntimeException e = assertThrows(
                StatusRuntimeException.class,
                () -> ClientCalls.blockingUnaryCall(
                        channel, SLOW, CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS), "late"));
        assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
        // and the connection still serves the next call
        assertEquals("hello again", ClientCalls.blockingUnaryCall(channel, GrpcExample.SAY_HELLO, call(), "again"));
    }
}
