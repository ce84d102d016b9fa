package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.VerbsProvider;

import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class ProviderTest {
    @Test
    void registeredAsAServiceAndNamesDevicesByInterface() {
        VerbsProvider p = ServiceLoader.load(VerbsProvider.class).stream().map(ServiceLoader.Provider::get)
                .filter(x -> x instanceof SoftProvider).findFirst().orElseThrow();
        List<Device> devices = p.devices();
        assertTrue(p.unavailableReason().isEmpty());
        SoftDevice lo = (SoftDevice) devices.stream().filter(d -> d.name().equals("soft_lo")).findFirst().orElseThrow();
        assertEquals(Gid.parse("::ffff:127.0.0.1"), lo.gid());
        assertEquals(SoftProvider.DEFAULT_PORT, lo.port());
        assertEquals("soft", lo.provider());
        assertSame(lo, p.lookup("soft_lo").orElseThrow());
        // the default (first) device: non-loopback when there is one
        // the device on jrdma.soft.address comes first (the build sets 127.0.0.1), else a non-loopback one
        String pinned = System.getProperty("jrdma.soft.address");
        if (pinned != null) assertEquals(pinned, ((SoftDevice) devices.getFirst()).address().getHostAddress());
        else if (devices.size() > 1) assertFalse(((SoftDevice) devices.getFirst()).address().isLoopbackAddress());
    }

    @Test
    void systemPropertiesPickAddressAndPort() {
        SoftProvider p = new SoftProvider();
        try {
            System.setProperty("jrdma.soft.address", "127.0.0.2");
            System.setProperty("jrdma.soft.port", "4800");
            SoftDevice first = (SoftDevice) p.devices().getFirst();
            assertEquals(Fixture.B, first.address());
            assertEquals(4800, first.port());
            SoftDevice explicit = (SoftDevice) p.lookup("soft@127.0.0.3").orElseThrow();
            assertEquals(4800, explicit.port());
            assertEquals("soft@127.0.0.3", explicit.name());
            assertEquals(4801, ((SoftDevice) p.lookup("soft@127.0.0.3:4801").orElseThrow()).port());
            System.setProperty("jrdma.soft.port", "70000");
            assertThrows(VerbsException.class, SoftProvider::configuredPort);
        } finally {
            System.clearProperty("jrdma.soft.address");
            System.clearProperty("jrdma.soft.port");
        }
        assertEquals("soft@[::1]", p.lookup("soft@::1").orElseThrow().name(), "an IPv6 device (names only: nothing is bound)");
        assertThrows(VerbsException.class, () -> p.lookup("soft@300.1.2.3"));
        assertThrows(VerbsException.class, () -> p.lookup("soft@[::1"));
    }
}
