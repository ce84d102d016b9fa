package dev.jrdma.soft;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.function.Consumer;

/**
 * The UDP socket of one software device: a non-blocking {@link DatagramChannel} bound to the device's address and
 * port, and a selector the receive thread blocks in while no packet waits.
 *
 * <p>The channel is non-blocking on purpose beyond speed: a non-blocking NIO channel is not closed when the thread
 * using it is interrupted (only blocking operations install the interrupt hook), so an application thread that polls
 * a CQ (and so reads this socket) with its interrupt flag set cannot take the device down.
 */
final class UdpLink implements Link {
    private static final Consumer<SelectionKey> NOTHING = k -> {};

    private final DatagramChannel ch;
    private final Selector selector;
    /**
     * The polling threads' own selector: their readiness checks hold its lock, never the channel's receive lock nor
     * the receive thread's selector, so a poller descheduled in mid-check stops nobody (the JDK serialises receives on
     * one channel with a lock held across the system call).
     */
    private final Selector pollSelector;

    private final String name;

    /** A socket of the address's family (IPv4 or IPv6) bound to {@code address:port}. */
    UdpLink(InetAddress address, int port) throws IOException {
        DatagramChannel c = DatagramChannel.open(
                address instanceof Inet4Address ? StandardProtocolFamily.INET : StandardProtocolFamily.INET6);
        Selector s = null, ps = null;
        try {
            c.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            c.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
            // ECT(0) as RoCEv2 NICs send; the ECN of what arrives stays unknown here (no per-datagram TOS in NIO)
            c.setOption(StandardSocketOptions.IP_TOS, Ecn.outgoing(0));
            c.bind(new InetSocketAddress(address, port));
            c.configureBlocking(false);
            s = Selector.open();
            c.register(s, SelectionKey.OP_READ);
            ps = Selector.open();
            c.register(ps, SelectionKey.OP_READ);
        } catch (IOException e) {
            c.close();
            if (s != null) s.close();
            if (ps != null) ps.close();
            throw e;
        }
        ch = c;
        selector = s;
        pollSelector = ps;
        name = address.getHostAddress() + ":" + port;
    }

    @Override
    public String toString() {
        return "udp " + name + " (nio)";
    }

    /** One system call; false when the socket's send buffer is full. */
    @Override
    public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        return ch.send(b, to) > 0;
    }

    @Override
    public InetSocketAddress receive(ByteBuffer b) throws IOException {
        return (InetSocketAddress) ch.receive(b);
    }

    /** One system call (a zero-timeout epoll_wait) outside the channel's receive lock. */
    @Override
    public boolean readable() throws IOException {
        return pollSelector.selectNow(NOTHING) > 0;
    }

    @Override
    public void await() throws IOException {
        selector.select(NOTHING, 0);
    }

    @Override
    public boolean await(long timeoutNanos) throws IOException {
        selector.select(
                NOTHING, Math.max(1, Math.min(Long.MAX_VALUE / 1_000_000, (timeoutNanos + 999_999) / 1_000_000)));
        return true;
    }

    @Override
    public void wakeup() {
        selector.wakeup();
    }

    @Override
    public void close() {
        try {
            selector.close();
        } catch (IOException ignored) {
        }
        try {
            pollSelector.close();
        } catch (IOException ignored) {
        }
        try {
            ch.close();
        } catch (IOException ignored) {
        }
    }
}
