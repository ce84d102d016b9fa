package dev.jrdma.soft;

import dev.jrdma.verbs.AhAttr;

import java.io.Serial;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Where a QP's (or a UD address handle's) packets go: the peer's UDP address and the IP header fields its address
 * vector asks for, as rxe puts them on the wire: traffic class (IPv4: TOS), IPv6 flow label, hop limit (IPv4: TTL).
 * The ICRC masks all three, so they are the link's business: {@link LinuxUdpLink} sends them with {@code sendmsg}
 * (control messages, the flow label in {@code sin6_flowinfo}), {@link RawIpv4Link} writes them into its header; the
 * NIO {@link UdpLink} cannot set them per packet and sends with the kernel's. It is an {@link InetSocketAddress} so that
 * every link keeps taking the one destination object a QP hands it (links cache a destination's native form by identity).
 */
final class Destination extends InetSocketAddress {
    @Serial
    private static final long serialVersionUID = 1L;
    /** The hop limit (TTL) the links' sockets send with by default; an address vector's 0 stands for it too. */
    static final int DEFAULT_HOP_LIMIT = 64;

    /** 8 bits (IPv4: the whole TOS byte, DSCP and ECN). */
    final int trafficClass;
    /** 20 bits; 0: the kernel's choice (IPv6 automatic flow labels), as for any socket. */
    final int flowLabel;
    /** 1..255. */
    final int hopLimit;

    /** The kernel's header fields: what a destination without an address vector (tests, raw sends) gets. */
    Destination(InetAddress address, int port) {
        this(address, port, 0, 0, DEFAULT_HOP_LIMIT);
    }

    /** {@code av}'s traffic class, flow label and hop limit (0: {@link #DEFAULT_HOP_LIMIT}). */
    Destination(InetAddress address, int port, AhAttr av) {
        this(address, port, av.trafficClass, av.flowLabel, av.hopLimit);
    }

    Destination(InetAddress address, int port, int trafficClass, int flowLabel, int hopLimit) {
        super(address, port);
        this.trafficClass = trafficClass & 0xFF;
        this.flowLabel = flowLabel & 0xFFFFF;
        this.hopLimit = (hopLimit & 0xFF) == 0 ? DEFAULT_HOP_LIMIT : hopLimit & 0xFF;
    }

    /** Whether a socket's defaults already give these header fields (then no control message is needed). */
    boolean kernelDefaults() {
        return trafficClass == 0 && hopLimit == DEFAULT_HOP_LIMIT;
    }

    /** The hop limit (TTL) of {@code to}'s packets: its own for a destination, else the default. */
    static int hopLimit(InetSocketAddress to) {
        return to instanceof Destination d ? d.hopLimit : DEFAULT_HOP_LIMIT;
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
