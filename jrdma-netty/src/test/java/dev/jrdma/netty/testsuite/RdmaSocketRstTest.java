package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketRstTest;
import java.util.List;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Netty's {@link SocketRstTest} over jrdma channels: a close sends no reset (the peer sees the end of the stream).
 * {@code SO_LINGER} 0 (a TCP reset) has no counterpart: a jrdma close is always graceful.
 */
public class RdmaSocketRstTest extends SocketRstTest {
    @Test
    @Disabled("SO_LINGER 0 asks for a TCP reset on close: a jrdma close is always graceful (see jrdma-netty/README.md)")
    @Override
    public void testSoLingerZeroCausesOnlyRstOnClose(TestInfo testInfo) {}

    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
