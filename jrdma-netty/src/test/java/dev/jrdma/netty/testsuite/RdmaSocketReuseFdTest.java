package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.AbstractSocketReuseFdTest;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link AbstractSocketReuseFdTest} over jrdma channels: connections opened and closed again and again. */
public class RdmaSocketReuseFdTest extends AbstractSocketReuseFdTest {
    @Override
    protected SocketAddress newSocketAddress() {
        return new InetSocketAddress("127.0.0.1", 0);
    }

    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
