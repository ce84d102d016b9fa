package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Gid;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The soft device's GID table in rxe's order, checked against this host's interfaces: the default GID (fe80:: and
 * the MAC's EUI-64) first where there is a MAC, then every IPv4 address, then the IPv6 addresses by scope (global
 * before link-local), each GID once. The comparison with rxe's own table for the same interface runs in the guest
 * ({@code src/test/guest/rxe-interop.sh}).
 */
class GidTableTest {

    @Test
    void defaultGidIsTheEui64OfTheMac() {
        // 02:fc:00:00:00:01 -> fe80::fc:ff:fe00:1 (the universal/local bit flipped, ff:fe in the middle)
        assertEquals(Gid.parse("fe80::fc:ff:fe00:1"), GidTable.defaultGid(new byte[] {2, (byte) 0xfc, 0, 0, 0, 1}));
        assertEquals(
                Gid.parse("fe80::5054:ff:fe12:3456"),
                GidTable.defaultGid(new byte[] {0x52, 0x54, 0, 0x12, 0x34, 0x56}));
    }

    @Test
    void everyInterfaceListedInRxesOrder() throws Exception {
        int checked = 0;
        for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!ni.isUp()) continue;
            List<Gid> table = GidTable.of(ni);
            assertEquals(table.size(), new HashSet<>(table).size(), ni + ": a GID listed twice: " + table);
            int at = 0;
            byte[] mac = ni.getHardwareAddress();
            if (mac != null && mac.length == 6)
                assertEquals(GidTable.defaultGid(mac), table.get(at++), ni + ": the default GID first");
            List<Gid> v4 = new ArrayList<>(),
                    v6global = new ArrayList<>(),
                    v6link = new ArrayList<>(),
                    v6host = new ArrayList<>();
            for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
                InetAddress a = ia.getAddress();
                Gid g = Gid.fromInetAddress(a);
                if (a instanceof Inet4Address) v4.add(g);
                else if (a instanceof Inet6Address)
                    (a.isLoopbackAddress() ? v6host : a.isLinkLocalAddress() ? v6link : v6global).add(g);
            }
            Set<Gid> seen = new HashSet<>(table.subList(0, at));
            for (List<Gid> group : List.of(v4, v6global, v6link, v6host)) {
                Set<Gid> want = new HashSet<>(group);
                want.removeAll(seen);
                Set<Gid> got = new HashSet<>(table.subList(at, at + want.size()));
                assertEquals(want, got, ni + " " + table);
                at += want.size();
                seen.addAll(want);
            }
            assertEquals(table.size(), at, ni + ": nothing else listed: " + table);
            checked++;
        }
        assertTrue(checked > 0, "no interface is up");
    }

    @Test
    void anAddressNoInterfaceListsHasItsOwnGidAlone() throws Exception {
        IpAddress a = IpAddress.of(InetAddress.ofLiteral("127.0.0.2"));
        assertEquals(List.of(Gid.parse("::ffff:127.0.0.2")), GidTable.of(a));
        IpAddress lo = IpAddress.of(InetAddress.ofLiteral("127.0.0.1"));
        assertEquals(Gid.parse("::ffff:127.0.0.1"), GidTable.of(lo).getFirst(), "loopback has no MAC: no default GID");
    }
}
