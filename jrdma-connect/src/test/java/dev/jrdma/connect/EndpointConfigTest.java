package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/** A config is a value: copies are equal (groups shared by settings are found by it), the private data by content. */
class EndpointConfigTest {
    @Test
    void copiesWithTheSameSettingsAreEqual() throws Exception {
        EndpointConfig a =
                EndpointConfig.builder().privateData(new byte[] {1, 2, 3}).build();
        EndpointConfig copy = a.toBuilder().build();
        assertNotSame(a, copy);
        assertEquals(a, copy);
        assertEquals(a.hashCode(), copy.hashCode());
        InetAddress local = InetAddress.getLoopbackAddress();
        assertEquals(
                EndpointConfig.defaults().toBuilder().localAddress(local).build(),
                EndpointConfig.defaults().toBuilder().localAddress(local).build());
    }

    @Test
    void anySettingThatDiffersMakesThemDiffer() {
        EndpointConfig a =
                EndpointConfig.builder().privateData(new byte[] {1, 2, 3}).build();
        assertNotEquals(a, a.toBuilder().privateData(new byte[] {1, 2, 4}).build());
        assertNotEquals(a, a.toBuilder().messageSize(8192).build());
        assertNotEquals(a, a.toBuilder().pollMode(PollMode.BUSY).build());
    }

    /** The per-source cap follows the overall cap until it is set, through the builder, a copy and the constructors. */
    @Test
    void thePerSourceCapFollowsTheOverallCapUntilSet() {
        assertEquals(
                EndpointConfig.DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE,
                EndpointConfig.defaults().maxPendingHandshakesPerSource());
        EndpointConfig four = EndpointConfig.builder().maxPendingHandshakes(4).build();
        assertEquals(4, four.maxPendingHandshakesPerSource());
        assertEquals(2, four.toBuilder().maxPendingHandshakes(2).build().maxPendingHandshakesPerSource());
        assertEquals(
                EndpointConfig.DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE,
                four.toBuilder().maxPendingHandshakes(100).build().maxPendingHandshakesPerSource());
        EndpointConfig three =
                EndpointConfig.builder().maxPendingHandshakesPerSource(3).build();
        assertEquals(3, three.toBuilder().maxPendingHandshakes(100).build().maxPendingHandshakesPerSource());
        EndpointConfig d = EndpointConfig.defaults();
        EndpointConfig withoutPerSource = new EndpointConfig(
                d.sendQueueDepth(),
                d.recvQueueDepth(),
                d.inlineSize(),
                d.messageSize(),
                d.slabSize(),
                d.cqSize(),
                d.pollMode(),
                d.timeout(),
                null,
                null,
                null,
                false,
                null,
                null,
                10,
                5);
        assertEquals(5, withoutPerSource.maxPendingHandshakesPerSource());
    }
}
