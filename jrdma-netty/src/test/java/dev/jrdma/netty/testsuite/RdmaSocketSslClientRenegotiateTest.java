package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketSslClientRenegotiateTest;
import java.util.List;

/** Netty's {@link SocketSslClientRenegotiateTest} over jrdma channels. */
public class RdmaSocketSslClientRenegotiateTest extends SocketSslClientRenegotiateTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
