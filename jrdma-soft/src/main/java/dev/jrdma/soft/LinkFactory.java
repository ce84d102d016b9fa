package dev.jrdma.soft;

import dev.jrdma.verbs.Mtu;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;

/**
 * What a software device's packets travel through, chosen from system properties (rxe's {@code rxe_net.c}): the UDP
 * socket's implementation, whether IPv4 packets leave through a raw socket, and the port's active MTU from its
 * interface's MTU.
 */
final class LinkFactory {
    private LinkFactory() {}

    /**
     * The device's link: its UDP socket, sending through a {@link RawIpv4Link} where the packets may reach another RoCE
     * implementation (a non-loopback address) and the process may open a raw socket, so that their ICRC covers the
     * identification they carry. {@code jrdma.soft.ipv4.send}: {@code auto} (that rule, the default), {@code udp}
     * (always the UDP socket) or {@code raw} (the raw socket, or an error without CAP_NET_RAW). An IPv6 device always
     * sends through its UDP socket: the IPv6 ICRC covers nothing the kernel chooses.
     */
    static Link openLink(InetAddress address, int port) throws IOException {
        String mode = System.getProperty("jrdma.soft.ipv4.send", "auto").trim();
        if (!mode.equals("auto") && !mode.equals("udp") && !mode.equals("raw"))
            throw new IOException("jrdma.soft.ipv4.send='" + mode + "' is not auto, udp or raw");
        Link udp = openUdp(address, port);
        if (!(address instanceof Inet4Address v4)
                || mode.equals("udp")
                || mode.equals("auto") && address.isLoopbackAddress()) return udp;
        RawIpv4Link raw = RawIpv4Link.open(v4, port, udp);
        if (raw != null) return raw;
        if (mode.equals("raw")) {
            udp.close();
            throw new IOException(
                    "jrdma.soft.ipv4.send=raw needs a raw socket (CAP_NET_RAW), which this process cannot open");
        }
        return udp;
    }

    /**
     * The UDP socket: through libc ({@link LinuxUdpLink}: bursts in one system call, no JDK locks) or NIO's
     * ({@link UdpLink}). {@code jrdma.soft.udp}: {@code auto} (the default: libc where available, i.e. on Linux with
     * native access enabled for this module), {@code libc} (an error where it is not) or {@code nio}. IPv6 needs libc
     * to talk to rxe or a RoCE NIC: they send a zero UDP checksum, which only a socket with {@code UDP_NO_CHECK6_RX}
     * accepts, and NIO cannot set it. Over IPv4 libc is faster (jrdma-bench/README.md, "Measured on this machine") and
     * allocates nothing per packet either ({@code LinuxUdpLinkTest}).
     */
    static Link openUdp(InetAddress address, int port) throws IOException {
        String impl = System.getProperty("jrdma.soft.udp", "auto").trim();
        switch (impl) {
            case "nio" -> {
                return new UdpLink(address, port);
            }
            case "libc" -> {
                return LinuxUdpLink.open(address, port);
            }
            case "auto", "" -> {
                return LinuxUdpLink.AVAILABLE ? LinuxUdpLink.open(address, port) : new UdpLink(address, port);
            }
            default -> throw new IOException("jrdma.soft.udp='" + impl + "' is not nio, libc or auto");
        }
    }

    // ---- MTU ---------------------------------------------------------------------------------------

    /**
     * The most header bytes a RoCEv2 packet carries around its payload (rxe's RXE_MAX_HDR_LENGTH: IPv6 + UDP + BTH
     * + the largest extension headers + ICRC): what the interface's MTU must hold besides the IB payload.
     */
    static final int ROCE_MAX_HEADERS = 80;

    /** The active MTU for an interface MTU, as rxe sets it: the largest IB MTU that fits beside the headers, at most 4096, at least 256. */
    static Mtu activeMtuFor(int interfaceMtu) {
        int room = interfaceMtu - ROCE_MAX_HEADERS;
        Mtu m = Mtu.MTU_256;
        for (Mtu candidate : Mtu.values()) if (candidate.bytes <= room) m = candidate;
        return m;
    }

    /** The MTU of the interface that holds {@code address}, or -1 when it cannot be found (then 1500 is assumed). */
    static int interfaceMtu(InetAddress address) {
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(address);
            // 127.0.0.2 and the like belong to the loopback interface without being listed on it
            if (ni == null && address.isLoopbackAddress())
                ni = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
            return ni == null ? -1 : ni.getMTU();
        } catch (SocketException e) {
            return -1;
        }
    }

    /** {@code -Djrdma.soft.mtu} (256..4096) when set and valid, else the MTU that the interface of {@code address} allows. */
    static Mtu configuredMtu(InetAddress address) {
        String s = System.getProperty("jrdma.soft.mtu");
        if (s != null && !s.isBlank()) {
            try {
                return Mtu.ofBytes(Integer.parseInt(s.trim()));
            } catch (IllegalArgumentException e) {
                System.getLogger("dev.jrdma.soft")
                        .log(
                                System.Logger.Level.WARNING,
                                "-Djrdma.soft.mtu=" + s
                                        + " is not 256, 512, 1024, 2048 or 4096: the interface's MTU decides");
            }
        }
        int ifMtu = interfaceMtu(address);
        return activeMtuFor(ifMtu > 0 ? ifMtu : 1500);
    }
}
