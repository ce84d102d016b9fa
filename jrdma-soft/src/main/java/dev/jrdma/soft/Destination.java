package dev.jrdma.soft;

import dev.jrdma.verbs.AhAttr;
import java.io.Serial;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Where a QP's (or a UD address handle's) packets go: the peer's UDP address and the IP header fields its address
 * vector asks for that RoCE devices put on the wire: traffic class (IPv4: TOS) and the IPv6 flow label. The hop limit
 * (IPv4: TTL) is the route's, whatever the address vector says: Linux replaces it with the route's for every RoCEv2
 * GID when a QP or address handle is set up (ib_core's {@code ib_resolve_unicast_gid_dmac}), so rxe and RoCE NICs
 * send the route's, and an application's hop limit of 1 (rc_pingpong's) still crosses routers.
 * The ICRC masks these fields, so they are the link's business: {@link LinuxUdpLink} sends them with {@code sendmsg}
 * (a control message; the flow label in {@code sin6_flowinfo}), {@link RawIpv4Link} writes them into its header; the
 * NIO {@link UdpLink} cannot set them per packet and sends with the kernel's. It is an {@link InetSocketAddress} so
 * that every link keeps taking the one destination object a QP hands it (links cache its native form by identity).
 */
final class Destination extends InetSocketAddress {
    @Serial
    private static final long serialVersionUID = 1L;

    /** 8 bits (IPv4: the whole TOS byte, DSCP and ECN). */
    final int trafficClass;
    /** 20 bits; 0: the kernel's choice (IPv6 automatic flow labels), as for any socket. */
    final int flowLabel;

    /** {@code av}'s traffic class and flow label. */
    Destination(InetAddress address, int port, AhAttr av) {
        this(address, port, av.trafficClass, av.flowLabel);
    }

    Destination(InetAddress address, int port, int trafficClass, int flowLabel) {
        super(address, port);
        this.trafficClass = trafficClass & 0xFF;
        this.flowLabel = flowLabel & 0xFFFFF;
    }

    /** The traffic class (TOS) of {@code to}'s packets: its own for a destination, else 0. */
    static int trafficClass(InetSocketAddress to) {
        return to instanceof Destination d ? d.trafficClass : 0;
    }

    /** The IPv6 flow label of {@code to}'s packets: its own for a destination, else 0 (the kernel's choice). */
    static int flowLabel(InetSocketAddress to) {
        return to instanceof Destination d ? d.flowLabel : 0;
    }
}
