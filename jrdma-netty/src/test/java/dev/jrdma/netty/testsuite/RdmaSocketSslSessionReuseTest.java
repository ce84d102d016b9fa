package dev.jrdma.netty.testsuite;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketSslSessionReuseTest;
import io.netty.util.ReferenceCountUtil;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Netty's {@link SocketSslSessionReuseTest} over jrdma channels. Its OpenSSL case needs netty-tcnative, which is not
 * on this module's class path: that case is skipped (aborted), the JDK ones run.
 */
public class RdmaSocketSslSessionReuseTest extends SocketSslSessionReuseTest {
    @ParameterizedTest(name = "{index}: serverEngine = {0}, clientEngine = {1}")
    @MethodSource("jdkAndOpenSSL")
    @Timeout(value = 30000, unit = TimeUnit.MILLISECONDS)
    @Override
    public void testSslSessionTrustManagerResumption(
            SslContextBuilder serverCtx, SslContextBuilder clientCtx, TestInfo testInfo) throws Throwable {
        try {
            ReferenceCountUtil.release(serverCtx.build());
        } catch (LinkageError e) {
            Assumptions.abort("this SSL provider is not on the class path (netty-tcnative): " + e);
        }
        super.testSslSessionTrustManagerResumption(serverCtx, clientCtx, testInfo);
    }

    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return RdmaSocketTestPermutation.INSTANCE.socket();
    }
}
