package dev.jrdma.soft;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.net.Inet4Address;
import java.net.Inet6Address;
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
 * The software RoCEv2 provider: one device per local IP address, speaking RoCEv2 RC and UD over UDP.
 *
 * <p>Device names: {@code soft_<ifname>} for the first IPv4 address of each interface that is up
 * ({@code soft_<ifname>_<n>} for further addresses), and {@code soft@<ipv4>[:<port>]} or
 * {@code soft@[<ipv6>][:<port>]} for a device on any explicit local address (e.g. {@code soft@127.0.0.2},
 * {@code soft@[::1]}, {@code soft@[fe80::1%eth0]}), created on demand by {@link #lookup}; IPv6 devices are reached
 * by name (or {@code jrdma.soft.address}) only, not listed. The UDP port is
 * 4791 unless the system property {@code jrdma.soft.port} (or env {@code JRDMA_SOFT_PORT}) says otherwise;
 * all devices that talk to each other must use the same port; 0 means a free one, chosen once per JVM (see
 * {@link #configuredPort}), which is what tests use. The first device listed, hence the default
 * one, is the one on the address named by {@code jrdma.soft.address} / {@code JRDMA_SOFT_ADDRESS}, else the
 * first non-loopback address, else loopback.
 */
public final class SoftProvider implements VerbsProvider {
    /** The provider's name, as {@code -Djrdma.provider=soft} and {@code Device.provider()} spell it. */
    public static final String NAME = "soft";
    /** The UDP port RoCEv2 uses (IANA), the port unless {@code jrdma.soft.port} says otherwise. */
    public static final int DEFAULT_PORT = 4791;

    /** Devices are shared JVM-wide by name, address and port (devices on one address share one socket). */
    private static final Map<String, SoftDevice> DEVICES = new ConcurrentHashMap<>();

    /** The provider, as {@code ServiceLoader} makes it; its devices are JVM-wide, not per instance. */
    public SoftProvider() {}

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return 0;
    }

    /** The system property that names the UDP port (env {@code JRDMA_SOFT_PORT} when it is unset). */
    public static final String PORT_PROPERTY = "jrdma.soft.port";
    /** The port chosen for port 0 (0: none chosen yet). */
    private static int chosenPort;

    /**
     * The configured UDP port. For 0, a port no socket of this host holds on any address is chosen on the first call
     * and kept for the rest of the JVM's life (tests set 0, so they collide neither with a device on 4791 nor with
     * each other); it is also written back to {@code jrdma.soft.port}, so a child process given that property
     * reaches this JVM's devices.
     *
     * @return {@code jrdma.soft.port} (or env {@code JRDMA_SOFT_PORT}), else {@link #DEFAULT_PORT}
     * @throws VerbsException when the setting is not a port number (1..65535, or 0)
     */
    public static int configuredPort() {
        String p = System.getProperty(PORT_PROPERTY, System.getenv("JRDMA_SOFT_PORT"));
        if (p == null || p.isBlank()) return DEFAULT_PORT;
        try {
            int v = Integer.parseInt(p.trim());
            if (v == 0) return chooseFreePort();
            if (v > 0 && v < 65536) return v;
        } catch (NumberFormatException ignored) {
        }
        throw new VerbsException(
                "soft provider",
                VerbsException.EINVAL,
                PORT_PROPERTY + "='" + p + "' is not a UDP port (1..65535, or 0 for a free one)");
    }

    private static synchronized int chooseFreePort() {
        if (chosenPort == 0) {
            // bound on the wildcard address: free there means no socket holds it on any one address either
            try (java.net.DatagramSocket probe = new java.net.DatagramSocket(0)) {
                chosenPort = probe.getLocalPort();
            } catch (SocketException e) {
                throw new VerbsException(
                        "soft provider",
                        VerbsException.EBUSY,
                        "no free UDP port for " + PORT_PROPERTY + "=0: " + e.getMessage());
            }
        }
        System.setProperty(PORT_PROPERTY, Integer.toString(chosenPort));
        return chosenPort;
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
            InetAddress a = parseAddress(pick.trim());
            Device chosen = null;
            for (Device d : all) if (((SoftDevice) d).address().equals(a)) chosen = d;
            if (chosen == null) chosen = open(a, port);
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
            String addr = rest, portText = null;
            if (rest.startsWith("[")) { // soft@[ipv6][:port]
                int close = rest.indexOf(']');
                if (close < 0 || close + 1 < rest.length() && rest.charAt(close + 1) != ':')
                    throw new VerbsException(
                            "ibv_get_device_list",
                            VerbsException.EINVAL,
                            "'" + name + "' is not soft@[<ipv6>][:<port>]");
                addr = rest.substring(1, close);
                if (close + 1 < rest.length()) portText = rest.substring(close + 2);
            } else if (rest.indexOf(':')
                    == rest.lastIndexOf(':')) { // soft@ipv4[:port]; more colons: a bare IPv6 literal
                int colon = rest.indexOf(':');
                if (colon > 0) {
                    addr = rest.substring(0, colon);
                    portText = rest.substring(colon + 1);
                }
            }
            if (portText != null) {
                try {
                    port = Integer.parseInt(portText);
                } catch (NumberFormatException e) {
                    throw new VerbsException(
                            "ibv_get_device_list",
                            VerbsException.EINVAL,
                            "'" + name
                                    + "': the port after ':' is not a number (soft@<ipv4>[:<port>], soft@[<ipv6>][:<port>])");
                }
            }
            return Optional.of(open(parseAddress(addr), port));
        }
        for (Device d : devices()) if (d.name().equals(name)) return Optional.of(d);
        return Optional.empty();
    }

    /**
     * The device on an explicit local address (IPv4 or IPv6) and UDP port, named {@code soft@addr[:port]} or
     * {@code soft@[addr][:port]}. An IPv6 link-local address without a scope gets that of the interface holding it.
     *
     * @param address a local address of this host (IPv4 or IPv6)
     * @param port    the UDP port
     * @return the device, shared JVM-wide with every other lookup of the same name, address and port
     */
    public static SoftDevice open(InetAddress address, int port) {
        InetAddress a = withScope(address);
        String name = "soft@" + IpAddress.of(a).literal() + (port == configuredPort() ? "" : ":" + port);
        return device(name, a, port);
    }

    private static SoftDevice device(String name, InetAddress a, int port) {
        return DEVICES.computeIfAbsent(
                name + "|" + IpAddress.of(a).literal() + ":" + port, k -> new SoftDevice(name, a, port));
    }

    /** A link-local IPv6 address needs its interface to be bound and sent from: the one that holds it, when none is given. */
    private static InetAddress withScope(InetAddress a) {
        if (!(a instanceof Inet6Address v6) || !v6.isLinkLocalAddress() || v6.getScopeId() != 0) return a;
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(v6);
            if (ni != null) return Inet6Address.getByAddress(null, v6.getAddress(), ni);
        } catch (SocketException | java.net.UnknownHostException ignored) {
        }
        throw new VerbsException(
                "ibv_get_device_list",
                VerbsException.EINVAL,
                "the link-local address " + a.getHostAddress() + " is on no interface here: name one, soft@["
                        + a.getHostAddress() + "%<ifname>]");
    }

    /** An IPv4 or IPv6 literal (IPv6 link-local ones may carry {@code %<ifname>}); an IPv4-mapped IPv6 literal is its IPv4 address. */
    static InetAddress parseAddress(String s) {
        try {
            return IpAddress.of(InetAddress.ofLiteral(s)).inet;
        } catch (IllegalArgumentException ignored) {
        }
        throw new VerbsException(
                "ibv_get_device_list",
                VerbsException.EINVAL,
                "'" + s + "' is not an IP address literal of this host (e.g. 127.0.0.2, ::1, fe80::1%eth0)");
    }
}
