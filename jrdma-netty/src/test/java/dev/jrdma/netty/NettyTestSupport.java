package dev.jrdma.netty;

import dev.jrdma.connect.EndpointConfig;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Settings shared by the tests: the software device on loopback with a UDP port of its own, no RNR retries. Public
 * for the runs of Netty's testsuite ({@code dev.jrdma.netty.testsuite}).
 */
public final class NettyTestSupport {
    private NettyTestSupport() {}

    static {
        // flow control (credits) must keep a sender from ever meeting an empty receive queue
        System.setProperty("jrdma.connect.rnrRetry", "0");
    }

    /** Applies the settings above (they apply when the class loads). */
    public static void init() {}

    /** Where the tests listen: loopback, or the address given with -Djrdma.netty.test.host (rxe0's in the guest). */
    static String host() {
        return System.getProperty("jrdma.netty.test.host", "127.0.0.1");
    }

    /** Netty's connect timeout for the tests' clients: 30 s, or above the endpoint's own where the run raised that. */
    public static int connectTimeoutMillis() {
        return (int) Math.max(
                30_000, 2 * RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.timeout().toMillis());
    }

    /**
     * How long a test waits for an echo or a response: 30 s, or three endpoint timeouts where the run raised them
     * ({@code -Djrdma.connect.timeoutMs}: the guest, a QEMU machine without KVM, where a cold JVM's first rdma_cm
     * set-up alone can take more than the default 10 s).
     */
    static long patienceSeconds() {
        return Math.max(
                30, 3 * RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.timeout().toSeconds());
    }

    static EndpointConfig.Builder config() {
        return RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder().timeout(Duration.ofSeconds(5));
    }

    /** Netty's usual event loops (NIO): the RDMA channels run on them unchanged. */
    static EventLoopGroup nioGroup(int threads) {
        return new MultiThreadIoEventLoopGroup(threads, NioIoHandler.newFactory());
    }

    static void shutdown(EventLoopGroup... groups) {
        for (EventLoopGroup g : groups) {
            if (g != null)
                g.shutdownGracefully(200, 3000, TimeUnit.MILLISECONDS).syncUninterruptibly();
        }
    }
}
