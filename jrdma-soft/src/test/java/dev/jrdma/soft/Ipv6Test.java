package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.UdWalk;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.net.DatagramSocket;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * RoCEv2 over IPv6 on the host: a soft device on {@code ::1} (its QPs talk to each other through its own socket,
 * every packet a real IPv6 UDP datagram whose IPv6 ICRC is computed and checked), the {@code soft@[v6]} names, the
 * GID checks of address vectors. Two hosts over IPv6 (a veth between namespaces, the ICRCs checked on the wire) are
 * in {@link NetnsTest}; rxe over IPv6 GIDs in the guest ({@code src/test/guest/rxe-interop.sh}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Ipv6Test {
    static InetAddress loopback6;
    static int port;

    @BeforeAll
    static void ipv6Loopback() throws Exception {
        loopback6 = InetAddress.ofLiteral("::1");
        try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(loopback6, 0))) {
            port = s.getLocalPort(); // free now; the device binds it next
        } catch (java.net.SocketException e) {
            Assumptions.abort("no IPv6 on loopback here: " + e.getMessage());
        }
    }

    private static Device device() {
        return Verbs.device("soft@[::1]:" + port);
    }

    @Test
    void namesAndGidsOfAnIpv6Device() {
        Device d = device();
        assertEquals("soft@[::1]:" + port, d.name());
        assertEquals(
                "soft@[::1]",
                Verbs.device("soft@::1").name(),
                "a bare IPv6 literal (no port: the colons are the address's)");
        assertEquals(loopback6, ((SoftDevice) d).address());
        assertEquals(Gid.parse("::1"), ((SoftDevice) d).gid());
        assertThrows(VerbsException.class, () -> Verbs.device("soft@[::1"), "an unclosed bracket");
        assertThrows(VerbsException.class, () -> Verbs.device("soft@[::1]x"), "junk after the bracket");
        assertThrows(VerbsException.class, () -> Verbs.device("soft@[::1]:port"), "a port that is no number");
        try (Context c = d.open()) {
            // loopback has no MAC, so no default GID: its IPv4 address, then ::1, as rxe would list them
            var table = c.gidTable(1);
            assertEquals(Gid.parse("::ffff:127.0.0.1"), table.get(0).gid(), table::toString);
            assertEquals(Gid.parse("::1"), table.get(1).gid(), table::toString);
            assertTrue(table.stream().allMatch(e -> "RoCE v2".equals(e.type())));
            assertEquals(1, c.defaultGidIndex(1), "the device sends from its own address's GID");
            assertEquals(Gid.parse("::1"), c.queryGid(1, 1));
            assertEquals(Gid.ZERO, c.queryGid(1, 5), "an unused entry reads zero, as rxe's");
            assertThrows(VerbsException.class, () -> c.queryGid(1, SoftContext.GID_TABLE_LEN));
        }
    }

    @Test
    void rcOverIpv6EveryOperationAndTheIcrcChecked() {
        try (RcPair p = pair(device(), device(), o -> {})) {
            MemoryRegion a = p.a.mrAll(16384), b = p.b.mrAll(16384);
            fill(a.segment(), 5000, 3);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(b, 0, 8192));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND_WITH_IMM)
                    .immData(77)
                    .signaled(true)
                    .buffer(a, 0, 5000));
            WorkCompletion s = poll(p.a.cq), r = poll(p.b.cq);
            if (s.wrId == 1) {
                WorkCompletion t = s;
                s = r;
                r = t;
            }
            assertEquals(WcStatus.SUCCESS, s.status, s::toString);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(5000, r.byteLen);
            assertEquals(77, r.immData);
            assertFilled(b.segment(), 0, 5000, 3);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(a, 0, 3000)
                    .remote(b.address() + 8192, b.rkey()));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(b.segment(), 8192, 3000, 3);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(4)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(a, 8192, 3000)
                    .remote(b.address() + 8192, b.rkey()));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(a.segment(), 8192, 3000, 3);
            b.segment().set(ValueLayout.JAVA_LONG, 12288, 40);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(5)
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .signaled(true)
                    .buffer(a, 12288, 8)
                    .atomic(b.address() + 12288, b.rkey(), 2, 0));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertEquals(40, a.segment().get(ValueLayout.JAVA_LONG, 12288));
            assertEquals(42, b.segment().get(ValueLayout.JAVA_LONG, 12288));
            var n = p.a.ctx.counters();
            assertTrue(n.get("rx_packets") >= 12, n::toString);
            assertEquals(0, n.get("rx_bad_icrc"), n::toString);
            assertEquals(0, n.get("rx_icrc_ipv4_id_recovered"), "no IPv4 identification to solve for over IPv6");

            // a packet whose IPv6 ICRC is wrong (one payload bit flipped after the ICRC was computed) is dropped and
            // counted
            Transport t = ((SoftContext) p.a.ctx).transport;
            ByteBuffer bad = ByteBuffer.allocateDirect(64);
            int len = RocePacket.writeBth(
                            bad,
                            0,
                            Opcode.RDMA_WRITE_ONLY.code(),
                            false,
                            Bth.DEFAULT_PKEY,
                            p.b.qp.qpNum(),
                            false,
                            5000,
                            8)
                    + 0;
            new dev.jrdma.soft.wire.Icrc()
                    .generateIpv6(bad, 0, len, t.local.hi, t.local.lo, t.local.hi, t.local.lo, t.port, t.port);
            bad.put(len - 5, (byte) (bad.get(len - 5) ^ 1));
            long before = p.a.ctx.counters().get("rx_bad_icrc");
            try {
                t.sendRaw(bad.limit(len).position(0), new InetSocketAddress(loopback6, t.port));
            } catch (java.io.IOException e) {
                fail(e);
            }
            long end = System.nanoTime() + 5_000_000_000L;
            while (p.a.ctx.counters().get("rx_bad_icrc") == before && System.nanoTime() < end)
                p.a.cq.poll(WorkCompletion.array(1));
            assertEquals(before + 1, p.a.ctx.counters().get("rx_bad_icrc"));
        }
    }

    @Test
    void udOverIpv6PutsTheIpv6HeaderInTheGrhArea() {
        try (Context c = device().open();
                var arena = java.lang.foreign.Arena.ofShared()) {
            var pd = c.allocPd();
            CompletionQueue cq = c.createCq(16, null);
            QueuePair
                    x =
                            pd.createQueuePair(
                                    QpInitAttr.builder(cq).type(QpType.UD).build()),
                    y =
                            pd.createQueuePair(
                                    QpInitAttr.builder(cq).type(QpType.UD).build());
            for (QueuePair q : new QueuePair[] {x, y}) UdWalk.walk(q, 1, 0x1111, 1);
            MemoryRegion m = pd.registerMemory(arena.allocate(4096, 64), dev.jrdma.verbs.Access.LOCAL_WRITE);
            int gidIndex = c.defaultGidIndex(1);
            AddressHandle ah = pd.createAddressHandle(new AhAttr().portNum(1).global(Gid.parse("::1"), gidIndex));
            y.postRecv(new RecvWorkRequest().wrId(9).buffer(m, 1024, Grh.BYTES + 100));
            fill(m.segment(), 100, 5);
            x.postSend(new SendWorkRequest()
                    .wrId(8)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(m, 0, 100)
                    .ud(ah, y.qpNum(), 0x1111));
            WorkCompletion w1 = poll(cq), w2 = poll(cq);
            WorkCompletion recv = w1.wrId == 9 ? w1 : w2;
            assertEquals(WcStatus.SUCCESS, recv.status, recv::toString);
            assertEquals(Grh.BYTES + 100, recv.byteLen);
            var g = m.segment().asSlice(1024, Grh.BYTES);
            assertEquals(6, (g.get(ValueLayout.JAVA_BYTE, 0) & 0xF0) >> 4, "IP version 6");
            assertFalse(Grh.isIpv4(g, 0));
            assertEquals(17, g.get(ValueLayout.JAVA_BYTE, 6), "next header UDP");
            assertEquals(Gid.parse("::1"), Grh.sourceGid(g, 0));
            assertFilled(m.segment(), 1024 + Grh.BYTES, 100, 5);
            // answering from the completion: the address handle it makes sends from the device's own GID
            AddressHandle back = pd.createAddressHandleFromWc(recv, g, 1);
            assertEquals(gidIndex, back.attr().sgidIndex);
            assertEquals(Gid.parse("::1"), back.attr().dgid);
        }
    }

    @Test
    void addressVectorsNameTheDevicesOwnGidAndAPeerOfItsIpVersion() {
        try (Side s = Side.open(device().open(), q -> q, 16)) {
            RcWalk walk = new RcWalk()
                    .access(dev.jrdma.verbs.Access.REMOTE_WRITE)
                    .to(5, 1)
                    .minRnrTimer(1)
                    .maxDestRdAtomic(1);
            walk.toInit(s.qp);
            VerbsException v4peer = assertThrows(
                    VerbsException.class,
                    () -> walk.ah(new AhAttr().global(Gid.parse("::ffff:127.0.0.1"), 1))
                            .toRtr(s.qp));
            assertTrue(v4peer.getMessage().contains("IPv4"), v4peer.getMessage());
            VerbsException otherGid = assertThrows(
                    VerbsException.class,
                    () -> walk.ah(new AhAttr().global(Gid.parse("::1"), 0)).toRtr(s.qp));
            assertTrue(
                    otherGid.getMessage().contains("soft@127.0.0.1"),
                    "names the device that sends from GID 0: " + otherGid.getMessage());
            assertThrows(
                    VerbsException.class,
                    () -> s.pd.createAddressHandle(new AhAttr().portNum(1).global(Gid.parse("::1"), 7)));
            // header fields that do not fit the IPv6 header: refused, not cut
            int own = s.ctx.defaultGidIndex(1);
            AhAttr tc = new AhAttr().portNum(1).global(Gid.parse("::1"), own), flow = tc.copy(), hop = tc.copy();
            tc.trafficClass = 256;
            flow.flowLabel = 1 << 20;
            hop.hopLimit = -1;
            for (AhAttr bad : new AhAttr[] {tc, flow, hop}) {
                VerbsException e = assertThrows(VerbsException.class, () -> s.pd.createAddressHandle(bad));
                assertTrue(e.getMessage().contains("must fit 8, 20 and 8 bits"), e.getMessage());
            }
            assertEquals(QpState.INIT, s.qp.query().state(), "a refused move changes nothing");
        }
        // and an IPv4 device refuses an IPv6 peer
        try (Side s = Side.open(devA().open(), q -> q, 16)) {
            assertThrows(
                    VerbsException.class,
                    () -> s.pd.createAddressHandle(new AhAttr().portNum(1).global(Gid.parse("::1"), 0)));
        }
    }

    @Test
    void linkLocalAddressesGetTheirInterfacesScope() throws Exception {
        IpAddress local = IpAddress.of(InetAddress.ofLiteral("fe80::1%1"));
        IpAddress peer = IpAddress.ofGid(Gid.parse("fe80::2"), local);
        assertTrue(peer.isLinkLocal());
        assertEquals(
                1,
                ((Inet6Address) peer.inet).getScopeId(),
                "a link-local peer is reached through the device's interface");
        assertEquals("[fe80::2%1]", peer.literal());
        assertEquals(
                IpAddress.of(InetAddress.ofLiteral("fe80::2")),
                peer,
                "the scope is not part of the address's identity");
        assertEquals(
                "[fd98::2]", IpAddress.of(InetAddress.ofLiteral("fd98:0:0::2")).literal());
        assertEquals(
                "10.1.2.3",
                IpAddress.of(InetAddress.ofLiteral("::ffff:10.1.2.3")).literal(),
                "IPv4-mapped is IPv4");
        assertTrue(IpAddress.ofGid(Gid.parse("::ffff:10.1.2.3"), local).isIpv4());
    }
}
