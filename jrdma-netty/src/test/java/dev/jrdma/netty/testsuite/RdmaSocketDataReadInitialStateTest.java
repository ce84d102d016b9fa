package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketDataReadInitialStateTest;
import java.util.List;

/** Netty's {@link SocketDataReadInitialStateTest} over jrdma channels. */
public class RdmaSocketDataReadInitialStateTest extends SocketDataReadInitialStateTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
