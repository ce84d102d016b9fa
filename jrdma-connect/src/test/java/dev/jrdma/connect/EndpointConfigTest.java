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
}
