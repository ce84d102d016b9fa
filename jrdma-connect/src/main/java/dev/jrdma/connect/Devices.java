package dev.jrdma.connect;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Optional;

/**
 * Which device an endpoint uses, so that connecting to an address just works: a device named in the config
 * (or by {@code jrdma.device}) wins; otherwise, when the default device's provider serves per-address devices
 * (the software device: {@code soft@<ipv4>}), the device of the local address the connection uses; otherwise
 * the default device.
 */
public final class Devices {
    private Devices() {}

    /**
     * The device for a connection from {@code local}.
     *
     * @param local        the local address the connection uses (a wildcard or IPv6 address: the default device)
     * @param explicitName a device name from the configuration, or null/blank for none
     * @return the named device; else the default device when {@code jrdma.device} / {@code JRDMA_DEVICE} names one;
     *         else the default provider's device for {@code local} when it has one; else the default device
     * @throws dev.jrdma.verbs.VerbsException (ENODEV) when {@code explicitName} names no device
     */
    public static Device forLocalAddress(InetAddress local, String explicitName) {
        if (explicitName != null && !explicitName.isBlank()) return Verbs.device(explicitName.trim());
        String named = System.getProperty("jrdma.device", System.getenv("JRDMA_DEVICE"));
        Device def = Verbs.defaultDevice();
        if (named != null && !named.isBlank()) return def;
        if (local instanceof Inet4Address && !local.isAnyLocalAddress()) {
            Optional<VerbsProvider> p = Verbs.provider(def.provider());
            if (p.isPresent()) {
                Optional<Device> d = p.get().lookup(def.provider() + "@" + local.getHostAddress());
                if (d.isPresent()) return d.get();
            }
        }
        return def;
    }
}
