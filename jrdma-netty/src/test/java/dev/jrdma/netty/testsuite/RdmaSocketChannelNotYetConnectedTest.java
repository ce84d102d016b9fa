package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketChannelNotYetConnectedTest;
import java.util.List;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Netty's {@link SocketChannelNotYetConnectedTest} over jrdma channels. */
public class RdmaSocketChannelNotYetConnectedTest extends SocketChannelNotYetConnectedTest {
    @Test
    @Disabled("its server is a NIO socket server, which a jrdma channel cannot connect to; "
            + "ChannelBehaviourTest#readBeforeConnectIsDoneOnceConnected checks the same over jrdma")
    @Override
    public void readMustBePendingUntilChannelIsActive(TestInfo info) {}

    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.clientSocket();
    }
}
