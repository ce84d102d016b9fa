package dev.jrdma.soft;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * Checks each received packet and hands it to its QP, as rxe's {@code rxe_recv.c} does: the address family, the
 * ICRC, the headers, the destination QP. Every packet that is not delivered is counted in one drop counter, so a
 * forged, stray or stale packet is never silent. The per-thread scratch (ICRC state, packet view, sender cache) is
 * the {@link Receiver}'s, so two driving threads check packets at once without sharing any.
 */
final class PacketDispatch implements ProgressEngine.PacketHandler {
    private final IpAddress local;
    private final int port;
    private final QpTable qps;
    private final Counter.Set counters;

    PacketDispatch(IpAddress local, int port, QpTable qps, Counter.Set counters) {
        this.local = local;
        this.port = port;
        this.qps = qps;
        this.counters = counters;
    }

    /**
     * {@inheritDoc} {@code repeat}: the packet is handled a second time at a takeover
     * ({@link ProgressEngine}): counted nowhere (its first handling counts it), and delivered only when it is an RC
     * packet (UD and UC have no duplicate detection: the QP would get it twice).
     */
    @Override
    public boolean handle(
            Receiver r, InetSocketAddress from, ByteBuffer buf, MemorySegment seg, int len, boolean repeat) {
        if (len == RxBatch.DOORBELL)
            return false; // it woke the receive thread for the same-host ring: done (counted by the link)
        if (!repeat) counters.add(Counter.RX_PACKETS);
        if (len == RxBatch.TRUNCATED) return drop(Counter.RX_MALFORMED, repeat);
        IpAddress src = r.sender(from);
        int srcPort = from.getPort();
        if (src.isIpv4() != local.isIpv4())
            return drop(
                    Counter.RX_MALFORMED, repeat); // a socket of one family hears no other; never trust that blindly
        if (src.isIpv4()) {
            // the IPv4 identification is not visible to a UDP socket: accept the packet if some identification makes
            // its ICRC right (16 of the 32 check bits remain; the kernel has checked the UDP checksum when one was set)
            int ipId = r.icrc.recoverId(buf, 0, len, src.ipv4(), local.ipv4(), srcPort, port);
            if (ipId == Icrc.NO_ID) return drop(Counter.RX_BAD_ICRC, repeat);
            if (ipId != 0 && !repeat) counters.add(Counter.RX_ICRC_IPV4_ID_RECOVERED);
        } else if (!r.icrc.verifyIpv6(buf, 0, len, src.hi, src.lo, local.hi, local.lo, srcPort, port)) {
            return drop(
                    Counter.RX_BAD_ICRC,
                    repeat); // over IPv6 the whole ICRC is checked: nothing in it is the kernel's choice
        }
        if (len < Bth.BYTES + Icrc.BYTES) return drop(Counter.RX_MALFORMED, repeat);
        SoftQp qp = qps.get(Bth.destQp(buf, 0));
        PacketAuth auth = qp == null ? null : qp.auth;
        if (auth != null) { // the authenticated mode: the tag first, before the headers, PSN or memory are looked at
            if (!auth.verify(buf, len, qp.destQpn, src)) return drop(Counter.RX_BAD_MAC, repeat);
            len -= PacketAuth.TAG_BYTES; // the packet as it was signed: its ICRC's place now holds the tag's first
            // bytes, checked above
        }
        if (r.pkt.wrap(buf, 0, len) != RocePacket.OK) return drop(Counter.RX_MALFORMED, repeat);
        if (repeat && !Opcode.isRc(r.pkt.opcode())) return false; // UD and UC have no duplicate detection
        if (qp == null) return drop(Counter.RX_UNKNOWN_QP, repeat);
        if (r.pkt.opcode() == Opcode.CNP.code()) {
            if (!repeat) qp.congestion.receiveCnp(src, srcPort);
            return true;
        }
        if (r.ecn == Ecn.CE && !repeat) qp.congestion.receiveCeMarked(src, srcPort, len);
        qp.receive(r.pkt, seg, src, srcPort);
        return true;
    }

    private boolean drop(Counter reason, boolean repeat) {
        if (!repeat) counters.add(reason);
        return false;
    }
}
