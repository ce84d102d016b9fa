package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;

/**
 * The senders {@link LinuxUdpLink} decoded lately from native {@code sockaddr}s: a known sender gives the same
 * {@link InetSocketAddress}, without allocating.
 */
final class SockaddrCache {
    private static final int AF_INET = 2, AF_INET6 = 10, CACHED = 8;
    private static final ValueLayout.OfShort NET_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt NET_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    final int[] families = new int[CACHED], ports = new int[CACHED];
    final long[] highs = new long[CACHED], lows = new long[CACHED]; // the address: IPv4 in low, IPv6 in both
    final InetSocketAddress[] known = new InetSocketAddress[CACHED];
    int last, next;

    /** The sender in the sockaddr at {@code at} of {@code sa}. */
    InetSocketAddress decode(MemorySegment sa, long at) throws IOException {
        int fam = sa.get(ValueLayout.JAVA_SHORT, at);
        int port = Short.toUnsignedInt(sa.get(NET_SHORT, at + 2));
        long high, low;
        if (fam == AF_INET) {
            high = 0;
            low = Integer.toUnsignedLong(sa.get(NET_INT, at + 4));
        } else if (fam == AF_INET6) {
            high = sa.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 8);
            low = sa.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 16);
        } else {
            throw new IOException("a datagram from address family " + fam);
        }
        for (int k = 0, i = last; k < CACHED; k++, i = (i + 1) % CACHED) {
            if (known[i] != null && families[i] == fam && ports[i] == port && highs[i] == high && lows[i] == low) {
                last = i;
                return known[i];
            }
        }
        byte[] bytes = fam == AF_INET ? new byte[4] : new byte[16];
        MemorySegment.copy(sa, ValueLayout.JAVA_BYTE, at + (fam == AF_INET ? 4 : 8), bytes, 0, bytes.length);
        InetAddress a;
        try {
            a = fam == AF_INET
                    ? InetAddress.getByAddress(bytes)
                    : Inet6Address.getByAddress(null, bytes, sa.get(ValueLayout.JAVA_INT_UNALIGNED, at + 24));
        } catch (UnknownHostException e) {
            throw new IOException(e);
        }
        int i = next;
        next = (i + 1) % CACHED;
        families[i] = fam;
        ports[i] = port;
        highs[i] = high;
        lows[i] = low;
        last = i;
        return known[i] = new InetSocketAddress(a, port);
    }
}
