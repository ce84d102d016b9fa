package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketConnectionAttemptTest;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Netty's {@link SocketConnectionAttemptTest} over jrdma channels. Its unreachable host (a documentation address
 * by default) is a loopback listener here ({@code io.netty.testsuite.badHost}/{@code badPort}, set by the build):
 * it takes the TCP connection and never answers the jrdma handshake, so a connect waits there as a socket's waits
 * for an unreachable host, until its timeout or its cancellation.
 */
public class RdmaSocketConnectionAttemptTest extends SocketConnectionAttemptTest {
    private static ServerSocket silent;

    @BeforeAll
    static void listenSilently() throws IOException {
        String host = System.getProperty("io.netty.testsuite.badHost", "127.0.0.2");
        int port = Integer.getInteger("io.netty.testsuite.badPort", 65535);
        silent = new ServerSocket();
        silent.bind(new InetSocketAddress(host, port), 64);
    }

    @AfterAll
    static void stopListening() throws IOException {
        if (silent != null) silent.close();
    }

    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.clientSocket();
    }
}
