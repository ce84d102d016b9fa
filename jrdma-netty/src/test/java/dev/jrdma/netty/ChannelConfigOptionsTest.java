package dev.jrdma.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.connect.EndpointConfig;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelOption;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The channel options of both configs through Netty's generic {@code setOption}/{@code getOption}/{@code getOptions}
 * (what a bootstrap's {@code option(...)} and {@code childOption(...)} call): each reads back what its setter keeps,
 * Netty's own options still reach the superclass, and an option neither knows is refused.
 */
class ChannelConfigOptionsTest {
    private static final EndpointConfig SMALL = EndpointConfig.builder()
            .sendQueueDepth(4)
            .recvQueueDepth(8)
            .messageSize(1000)
            .build();

    @Test
    void aConnectionsOptionsReadBackAsSet() {
        RdmaChannelConfig config = new RdmaChannel().config();
        assertTrue(config.setOption(RdmaChannelOption.ENDPOINT_CONFIG, SMALL));
        assertSame(SMALL, config.getOption(RdmaChannelOption.ENDPOINT_CONFIG));
        assertSame(SMALL, config.getEndpointConfig());
        assertSet(config, ChannelOption.ALLOW_HALF_CLOSURE, true);
        assertSet(config, ChannelOption.SO_KEEPALIVE, true);
        assertSet(config, ChannelOption.SO_LINGER, 7);
        assertSet(config, ChannelOption.IP_TOS, 0x10);
        assertSet(config, ChannelOption.SO_REUSEADDR, true);
        // what has nothing to act on over RDMA is accepted and reads back what the connection has
        assertTrue(config.setOption(ChannelOption.TCP_NODELAY, false));
        assertEquals(true, config.getOption(ChannelOption.TCP_NODELAY));
        assertTrue(config.setOption(ChannelOption.SO_SNDBUF, 1));
        assertEquals(4 * 1000, config.getOption(ChannelOption.SO_SNDBUF));
        assertTrue(config.setOption(ChannelOption.SO_RCVBUF, 1));
        assertEquals(8 * 1000, config.getOption(ChannelOption.SO_RCVBUF));
        assertNettysOwnAndUnknownOptions(config);

        Map<ChannelOption<?>, Object> all = config.getOptions();
        assertEquals(SMALL, all.get(RdmaChannelOption.ENDPOINT_CONFIG));
        assertEquals(7, all.get(ChannelOption.SO_LINGER));
        assertEquals(0x10, all.get(ChannelOption.IP_TOS));
        assertEquals(8 * 1000, all.get(ChannelOption.SO_RCVBUF));
        assertEquals(true, all.get(ChannelOption.ALLOW_HALF_CLOSURE));
        assertEquals(1234, all.get(ChannelOption.CONNECT_TIMEOUT_MILLIS));
    }

    @Test
    void aServersOptionsReadBackAsSetAndTheBacklogIsTheHandshakeCap() {
        RdmaServerChannelConfig config = new RdmaServerChannel().config();
        assertEquals(RdmaServerChannelConfig.DEFAULT_BACKLOG, config.getOption(ChannelOption.SO_BACKLOG));
        assertTrue(config.setOption(RdmaChannelOption.ENDPOINT_CONFIG, SMALL));
        assertSame(SMALL, config.getOption(RdmaChannelOption.ENDPOINT_CONFIG));
        assertSet(config, ChannelOption.SO_BACKLOG, 5);
        assertEquals(5, config.getEndpointConfig().maxPendingHandshakes());
        assertTrue(config.setOption(ChannelOption.SO_BACKLOG, 0)); // a socket's "the system's default"
        assertEquals(RdmaServerChannelConfig.DEFAULT_BACKLOG, config.getOption(ChannelOption.SO_BACKLOG));
        assertThrows(IllegalArgumentException.class, () -> config.setOption(ChannelOption.SO_BACKLOG, -1));
        assertSet(config, ChannelOption.SO_REUSEADDR, true);
        assertTrue(config.setOption(ChannelOption.SO_RCVBUF, 1));
        assertEquals(8 * 1000, config.getOption(ChannelOption.SO_RCVBUF));
        assertNettysOwnAndUnknownOptions(config);
        // a connection's options are not a server's
        assertFalse(config.setOption(ChannelOption.SO_LINGER, 7));
        assertNull(config.getOption(ChannelOption.SO_LINGER));

        Map<ChannelOption<?>, Object> all = config.getOptions();
        assertEquals(RdmaServerChannelConfig.DEFAULT_BACKLOG, all.get(ChannelOption.SO_BACKLOG));
        assertEquals(true, all.get(ChannelOption.SO_REUSEADDR));
        assertEquals(1234, all.get(ChannelOption.CONNECT_TIMEOUT_MILLIS));
        assertFalse(all.containsKey(ChannelOption.SO_LINGER));
    }

    private static <T> void assertSet(ChannelConfig config, ChannelOption<T> option, T value) {
        assertTrue(config.setOption(option, value), option + " was not taken");
        assertEquals(value, config.getOption(option), option + " did not read back");
    }

    /** Netty's own options reach DefaultChannelConfig; one neither config knows is refused; null is no value. */
    private static void assertNettysOwnAndUnknownOptions(ChannelConfig config) {
        assertSet(config, ChannelOption.CONNECT_TIMEOUT_MILLIS, 1234);
        assertFalse(config.setOption(ChannelOption.SO_TIMEOUT, 5));
        assertNull(config.getOption(ChannelOption.SO_TIMEOUT));
        assertThrows(NullPointerException.class, () -> config.setOption(RdmaChannelOption.ENDPOINT_CONFIG, null));
    }
}
