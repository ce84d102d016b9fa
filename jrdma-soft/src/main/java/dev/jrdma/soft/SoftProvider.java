package dev.jrdma.soft;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.VerbsProvider;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The software RoCEv2 provider: one device per local IPv4 address, speaking RoCEv2 RC over UDP.
 *
 * <p>Device names: {@code soft_<ifname>} for the first IPv4 address of each interface that is up
 * ({@code soft_<ifname>_<n>} for further addresses), and {@code soft@<ipv4>[:<port>]} for a device on any
 * explicit local address (e.g. {@code soft@127.0.0.2}), created on demand by {@link #lookup}. The UDP port is
 * 4791 unless the system property {@code jrdma.soft.port} (or env {@code JRDMA_SOFT_PORT}) says otherwise;
 * all devices that talk to each other must use the same port. The first device listed, hence the default
 * one, is the one on the address named by {@code jrdma.soft.address} / {@code JRDMA_SOFT_ADDRESS}, else the
 * first non-loopback address, else loopback.
 */
public final class SoftProvider implements VerbsProvider {
    public static final String NAME = "soft";
    public static final int DEFAULT_PORT = 4791;

    /** Devices are shared JVM-wide by name, address and port (devices on one address share one socket). */
    private static final Map<String, SoftDevice> DEVICES = new ConcurrentHashMap<>();

    @Override
    public String name() { return NAME; }

    @Override
    public int priority() { return 0; }

    /** The configured UDP port. */
    public static int configuredPort() {
        String p = System.getProperty("jrdma.soft.port", System.getenv("JRDMA_SOFT_PORT"));
        if (p == null || p.isBlank()) return DEFAULT_PORT;
        try {
            int v = Integer.parseInt(p.trim());
            if (v > 0 && v < 65536) return v;
        } catch (NumberFormatException ignored) {
        }
        throw new VerbsException("soft provider", VerbsException.EINVAL, "jrdma.soft.port='" + p + "' is not a UDP port (1..65535)");
    }

    @Override
    public List<Device> devices() {
        try {
            return listDevices();
        } catch (RuntimeException | SocketException e) {
            return List.of();
        }
    }

    private List<Device> listDevices() throws SocketException {
        int port = configuredPort();
        List<SoftDevice> loop = new ArrayList<>(), other = new ArrayList<>();
        for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!ni.isUp()) continue;
            int n = 0;
            for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
                if (!(ia.getAddress() instanceof Inet4Address a)) continue;
                String name = "soft_" + ni.getName() + (n == 0 ? "" : "_" + n);
                n++;
                SoftDevice d = device(name, a, port);
                (a.isLoopbackAddress() ? loop : other).add(d);
            }
        }
        List<Device> all = new ArrayList<>(other);
        all.addAll(loop);
        String pick = System.getProperty("jrdma.soft.address", System.getenv("JRDMA_SOFT_ADDRESS"));
        if (pick != null && !pick.isBlank()) {
            Inet4Address a = parseIpv4(pick.trim());
            Device chosen = null;
            for (Device d : all) if (((SoftDevice) d).address().equals(a)) chosen = d;
            if (chosen == null) chosen = device("soft@" + a.getHostAddress(), a, port);
            all.remove(chosen);
            all.addFirst(chosen);
        }
        return List.copyOf(all);
    }

    @Override
    public Optional<String> unavailableReason() {
        return devices().isEmpty() ? Optional.of("no IPv4 address on any interface that is up") : Optional.empty();
    }

    @Override
    public Optional<Device> lookup(String name) {
        if (name.startsWith("soft@")) {
            String rest = name.substring(5);
            int port = configuredPort();
            int colon = rest.lastIndexOf(':');
            if (colon > 0) {
                try {
                    port = Integer.parseInt(rest.substring(colon + 1));
                } catch (NumberFormatException e) {
                    throw new VerbsException("ibv_get_device_list", VerbsException.EINVAL, "'" + name + "': the port after ':' is not a number (soft@<ipv4>[:<port>])");
                }
                rest = rest.substring(0, colon);
            }
            return Optional.of(open(parseIpv4(rest), port));
        }
        for (Device d : devices()) if (d.name().equals(name)) return Optional.of(d);
        return Optional.empty();
    }

    /** The device on an explicit local IPv4 address and UDP port, named {@code soft@addr[:port]}. */
    public static SoftDevice open(Inet4Address address, int port) {
        String name = "soft@" + address.getHostAddress() + (port == configuredPort() ? "" : ":" + port);
        return device(name, address, port);
    }

    private static SoftDevice device(String name, Inet4Address a, int port) {
        return DEVICES.computeIfAbsent(name + "|" + a.getHostAddress() + ":" + port, k -> new SoftDevice(name, a, port));
    }

    static Inet4Address parseIpv4(String s) {
        try {
            InetAddress a = InetAddress.ofLiteral(s);
            if (a instanceof Inet4Address v4) return v4;
        } catch (IllegalArgumentException ignored) {
        }
        throw new VerbsException("ibv_get_device_list", VerbsException.EINVAL, "'" + s + "' is not an IPv4 address literal (the soft device needs one, e.g. 127.0.0.2)");
    }
}
