package dev.jrdma.soft;

import dev.jrdma.verbs.Gid;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The GID table of a software device's port, in the order and with the types Linux rxe gives the same interface, so
 * that a GID index ({@code -x}) means the same on both. The kernel's RoCE GID management fills an rxe port's table
 * at registration: the default GID at index 0 (reserved: {@code fe80::} with the interface identifier made from the
 * MAC address, EUI-64), then one GID per IPv4 address ({@code ::ffff:a.b.c.d}) in the interface's order, then one
 * per IPv6 address in the order the kernel keeps them (larger scope first: global before link-local); an address
 * equal to a GID already listed (the EUI-64 link-local address is the default GID) is not listed again. rxe speaks
 * RoCE v2 only, so every entry is "RoCE v2".
 *
 * <p>What this cannot reproduce: the kernel orders IPv6 addresses of equal scope newest first, and an address added
 * after rxe was registered takes the first free index when it appears; Java sees neither the age of an address
 * nor the history of the table, so several global IPv6 addresses (or addresses added later) may be listed in another
 * order than rxe's. An interface without a MAC address (loopback) has no default GID.
 *
 * <p>A device on an address that no interface lists (127.0.0.2 on loopback, say) has a one-entry table: its own GID.
 */
final class GidTable {
    private GidTable() {}

    /** The GIDs of the interface that holds {@code own}, in rxe's order; {@code own}'s GID alone when no interface lists it. */
    static List<Gid> of(IpAddress own) {
        NetworkInterface ni = null;
        try {
            ni = NetworkInterface.getByInetAddress(own.inet);
        } catch (SocketException ignored) {
        }
        List<Gid> table = ni == null ? List.of() : of(ni);
        return table.contains(own.gid()) ? table : List.of(own.gid());
    }

    /** The GIDs rxe lists for interface {@code ni}. */
    static List<Gid> of(NetworkInterface ni) {
        List<Gid> table = new ArrayList<>();
        try {
            byte[] mac = ni.getHardwareAddress();
            if (mac != null && mac.length == 6) table.add(defaultGid(mac));
        } catch (SocketException ignored) {
        }
        List<InetAddress> v6 = new ArrayList<>();
        for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
            InetAddress a = ia.getAddress();
            if (a instanceof Inet4Address) add(table, a);
            else if (a instanceof Inet6Address) v6.add(a);
        }
        // the kernel keeps an interface's IPv6 addresses by scope, largest first (global, then link-local, then host)
        v6.sort((x, y) -> Integer.compare(scopeRank(x), scopeRank(y)));
        for (InetAddress a : v6) add(table, a);
        return Collections.unmodifiableList(table);
    }

    private static void add(List<Gid> table, InetAddress a) {
        Gid g = Gid.fromInetAddress(a);
        if (!table.contains(g)) table.add(g);
    }

    private static int scopeRank(InetAddress a) {
        if (a.isLoopbackAddress()) return 2;
        return a.isLinkLocalAddress() ? 1 : 0;
    }

    /** The default GID of an Ethernet interface: {@code fe80::} and the EUI-64 of its MAC (the universal/local bit flipped). */
    static Gid defaultGid(byte[] mac) {
        byte[] g = new byte[16];
        g[0] = (byte) 0xFE;
        g[1] = (byte) 0x80;
        g[8] = (byte) (mac[0] ^ 0x02);
        g[9] = mac[1];
        g[10] = mac[2];
        g[11] = (byte) 0xFF;
        g[12] = (byte) 0xFE;
        g[13] = mac[3];
        g[14] = mac[4];
        g[15] = mac[5];
        return Gid.of(g);
    }
}
