package dev.jrdma.netty.testsuite;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketAddressesTest;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;

/** Netty's {@link SocketAddressesTest} over jrdma channels: both ends' addresses are loopback with a port. */
public class RdmaSocketAddressesTest extends SocketAddressesTest {
    @Override
    protected void assertAddress(SocketAddress address) {
        InetSocketAddress a = assertInstanceOf(InetSocketAddress.class, address);
        assertTrue(a.getPort() > 0, "port of " + a);
        assertFalse(a.getAddress().isAnyLocalAddress(), "address of " + a);
        assertTrue(a.getAddress().isLoopbackAddress(), "address of " + a);
    }

    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
