package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class ProviderTest {
    @Test
    void registeredAsAServiceAndNamesDevicesByInterface() {
        VerbsProvider p = ServiceLoader.load(VerbsProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(x -> x instanceof SoftProvider)
                .findFirst()
                .orElseThrow();
        List<Device> devices = p.devices();
        assertTrue(p.unavailableReason().isEmpty());
        SoftDevice lo = (SoftDevice) devices.stream()
                .filter(d -> d.name().equals("soft_lo"))
                .findFirst()
                .orElseThrow();
        assertEquals(Gid.parse("::ffff:127.0.0.1"), lo.gid());
        assertEquals(
                SoftProvider.configuredPort(),
                lo.port()); // 4791 unless jrdma.soft.port says otherwise (the build: 0, a free one)
        assertEquals("soft", lo.provider());
        assertSame(lo, p.lookup("soft_lo").orElseThrow());
        // the default (first) device: non-loopback when there is one
        // the device on jrdma.soft.address comes first (the build sets 127.0.0.1), else a non-loopback one
        String pinned = System.getProperty("jrdma.soft.address");
        if (pinned != null)
            assertEquals(pinned, ((SoftDevice) devices.getFirst()).address().getHostAddress());
        else if (devices.size() > 1)
            assertFalse(((SoftDevice) devices.getFirst()).address().isLoopbackAddress());
    }

    @Test
    void systemPropertiesPickAddressAndPort() {
        SoftProvider p = new SoftProvider();
        String address = System.getProperty("jrdma.soft.address"), port = System.getProperty("jrdma.soft.port");
        try {
            System.setProperty("jrdma.soft.address", "127.0.0.2");
            System.setProperty("jrdma.soft.port", "4800");
            SoftDevice first = (SoftDevice) p.devices().getFirst();
            assertEquals(SoftDevices.B, first.address());
            assertEquals(4800, first.port());
            SoftDevice explicit = (SoftDevice) p.lookup("soft@127.0.0.3").orElseThrow();
            assertEquals(4800, explicit.port());
            assertEquals("soft@127.0.0.3", explicit.name());
            assertEquals(4801, ((SoftDevice) p.lookup("soft@127.0.0.3:4801").orElseThrow()).port());
            System.setProperty("jrdma.soft.port", "70000");
            assertThrows(VerbsException.class, SoftProvider::configuredPort);
        } finally { // the build's settings (127.0.0.1, a free port) stay for the tests after this one
            restore("jrdma.soft.address", address);
            restore("jrdma.soft.port", port);
        }
        assertEquals(
                "soft@[::1]",
                p.lookup("soft@::1").orElseThrow().name(),
                "an IPv6 device (names only: nothing is bound)");
        assertThrows(VerbsException.class, () -> p.lookup("soft@300.1.2.3"));
        assertThrows(VerbsException.class, () -> p.lookup("soft@[::1"));
    }

    private static void restore(String key, String value) {
        if (value == null) System.clearProperty(key);
        else System.setProperty(key, value);
    }

    /**
     * Port 0 (what the build sets for every module's tests): one free port for the whole JVM, written back to the
     * property so that child processes given it reach this JVM's devices; devices open on it.
     */
    @Test
    void portZeroIsOneFreePortForTheWholeJvm() throws Exception {
        String port = System.getProperty("jrdma.soft.port");
        try {
            System.setProperty("jrdma.soft.port", "0");
            int chosen = SoftProvider.configuredPort();
            assertTrue(chosen > 0 && chosen < 65536, "chosen " + chosen);
            assertNotEquals(SoftProvider.DEFAULT_PORT, chosen);
            assertEquals(
                    Integer.toString(chosen),
                    System.getProperty("jrdma.soft.port"),
                    "written back for child processes");
            System.setProperty("jrdma.soft.port", "0");
            assertEquals(chosen, SoftProvider.configuredPort(), "the same port for every device of the JVM");
            SoftDevice device =
                    (SoftDevice) new SoftProvider().lookup("soft@127.0.0.9").orElseThrow();
            assertEquals(chosen, device.port());
            try (dev.jrdma.verbs.Context ctx = device.open()) {
                assertEquals(chosen, ((SoftContext) ctx).transport.port);
            }
        } finally {
            restore("jrdma.soft.port", port);
        }
    }

    @Test
    void providerListsDevicesAndPortsLookLikeRoce() {
        var provider = Verbs.provider("soft").orElseThrow();
        assertTrue(
                provider.devices().stream().anyMatch(d -> d.name().equals("soft_lo")),
                () -> "devices: " + provider.devices());
        Device d = Verbs.device("soft@127.0.0.2:" + PORT);
        assertEquals("soft", d.provider());
        try (var ctx = d.open()) {
            assertEquals(Gid.parse("::ffff:127.0.0.2"), ctx.queryGid(1, 0));
            assertEquals(
                    "0000:0000:0000:0000:0000:ffff:7f00:0002",
                    ctx.queryGid(1, 0).toString());
            PortAttr pa = ctx.queryPort(1);
            assertEquals(PortState.ACTIVE, pa.state());
            assertEquals(LinkLayer.ETHERNET, pa.linkLayer());
            assertEquals(Mtu.MTU_4096, pa.maxMtu());
            assertEquals(Mtu.MTU_4096, pa.activeMtu(), "loopback's MTU (65536) holds 4096-byte payloads");
            assertTrue(ctx.gidTable(1).getFirst().isRoceV2());
            assertTrue(ctx.queryDevice().supportsMemoryWindows());
            assertThrows(VerbsException.class, () -> ctx.queryPort(2));
            assertThrows(VerbsException.class, () -> ctx.queryGid(1, SoftContext.GID_TABLE_LEN));
        }
        assertThrows(VerbsException.class, () -> Verbs.device("soft@not-an-address"));
    }

    @Test
    void activeMtuFollowsTheInterfaceMtuAsRxe() {
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(65536), "loopback");
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(9000), "jumbo frames");
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(4096 + 80), "4096 and the RoCEv2 headers fit exactly");
        assertEquals(Mtu.MTU_2048, LinkFactory.activeMtuFor(4096 + 79));
        assertEquals(Mtu.MTU_1024, LinkFactory.activeMtuFor(1500), "Ethernet");
        assertEquals(Mtu.MTU_512, LinkFactory.activeMtuFor(1000));
        assertEquals(Mtu.MTU_256, LinkFactory.activeMtuFor(200), "never below the smallest IB MTU");
        String old = System.getProperty("jrdma.soft.mtu");
        try {
            System.setProperty("jrdma.soft.mtu", "2048");
            assertEquals(
                    Mtu.MTU_2048,
                    LinkFactory.configuredMtu(java.net.InetAddress.getLoopbackAddress()),
                    "the property wins");
            System.setProperty("jrdma.soft.mtu", "3000");
            assertEquals(
                    Mtu.MTU_4096,
                    LinkFactory.configuredMtu(java.net.InetAddress.getLoopbackAddress()),
                    "an invalid property: the interface decides");
        } finally {
            if (old == null) System.clearProperty("jrdma.soft.mtu");
            else System.setProperty("jrdma.soft.mtu", old);
        }
    }

    @Test
    void confinedMemoryIsRefusedWithAnExplanation() {
        try (RcPair p = pair();
                var confined = java.lang.foreign.Arena.ofConfined()) {
            VerbsException e = assertThrows(
                    VerbsException.class, () -> p.a.pd.registerMemory(confined.allocate(64), Access.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("Arena.ofShared"), e.getMessage());
            assertThrows(
                    VerbsException.class,
                    () -> p.a.pd.createQueuePair(QpInitAttr.builder(p.a.cq)
                            .type(dev.jrdma.verbs.QpType.UC)
                            .build()));
        }
    }
}
