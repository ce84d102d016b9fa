package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class MiscTest {

    @Test
    void providerListsDevicesAndPortsLookLikeRoce() {
        var provider = Verbs.provider("soft").orElseThrow();
        assertTrue(
                provider.devices().stream().anyMatch(d -> d.name().equals("soft_lo")),
                () -> "devices: " + provider.devices());
        Device d = Verbs.device("soft@127.0.0.2:" + PORT);
        assertEquals("soft", d.provider());
        try (var ctx = d.open()) {
            assertEquals(Gid.parse("::ffff:127.0.0.2"), ctx.queryGid(1, 0));
            assertEquals(
                    "0000:0000:0000:0000:0000:ffff:7f00:0002",
                    ctx.queryGid(1, 0).toString());
            PortAttr pa = ctx.queryPort(1);
            assertEquals(PortState.ACTIVE, pa.state());
            assertEquals(LinkLayer.ETHERNET, pa.linkLayer());
            assertEquals(Mtu.MTU_4096, pa.maxMtu());
            assertEquals(Mtu.MTU_4096, pa.activeMtu(), "loopback's MTU (65536) holds 4096-byte payloads");
            assertTrue(ctx.gidTable(1).getFirst().isRoceV2());
            assertTrue(ctx.queryDevice().supportsMemoryWindows());
            assertThrows(VerbsException.class, () -> ctx.queryPort(2));
            assertThrows(VerbsException.class, () -> ctx.queryGid(1, SoftContext.GID_TABLE_LEN));
        }
        assertThrows(VerbsException.class, () -> Verbs.device("soft@not-an-address"));
    }

    @Test
    void activeMtuFollowsTheInterfaceMtuAsRxe() {
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(65536), "loopback");
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(9000), "jumbo frames");
        assertEquals(Mtu.MTU_4096, LinkFactory.activeMtuFor(4096 + 80), "4096 and the RoCEv2 headers fit exactly");
        assertEquals(Mtu.MTU_2048, LinkFactory.activeMtuFor(4096 + 79));
        assertEquals(Mtu.MTU_1024, LinkFactory.activeMtuFor(1500), "Ethernet");
        assertEquals(Mtu.MTU_512, LinkFactory.activeMtuFor(1000));
        assertEquals(Mtu.MTU_256, LinkFactory.activeMtuFor(200), "never below the smallest IB MTU");
        String old = System.getProperty("jrdma.soft.mtu");
        try {
            System.setProperty("jrdma.soft.mtu", "2048");
            assertEquals(
                    Mtu.MTU_2048,
                    LinkFactory.configuredMtu(java.net.InetAddress.getLoopbackAddress()),
                    "the property wins");
            System.setProperty("jrdma.soft.mtu", "3000");
            assertEquals(
                    Mtu.MTU_4096,
                    LinkFactory.configuredMtu(java.net.InetAddress.getLoopbackAddress()),
                    "an invalid property: the interface decides");
        } finally {
            if (old == null) System.clearProperty("jrdma.soft.mtu");
            else System.setProperty("jrdma.soft.mtu", old);
        }
    }

    @Test
    void memoryWindowType1() {
        try (RcPair p = pair()) {
            MemoryRegion target = p.b.mrBindable(4096), src = p.a.mrAll(4096);
            fill(src.segment(), 4096, 6);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_1);
            int rkey = p.b.qp.bindMemoryWindow(
                    mw,
                    77,
                    true,
                    target,
                    target.address() + 1024,
                    1024,
                    EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ));
            WorkCompletion b = poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, b.status, b::toString);
            assertEquals(WcOpcode.BIND_MW, b.opcode);
            assertEquals(rkey, mw.rkey());
            assertNotEquals(target.rkey(), rkey);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 1024)
                    .remote(target.address() + 1024, rkey));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(target.segment(), 1024, 1024, 6);
            // rebinding changes the rkey; the old one is dead, and the window's bounds hold
            int rkey2 = p.b.qp.bindMemoryWindow(
                    mw, 78, true, target, target.address(), 512, EnumSet.of(Access.REMOTE_READ));
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status);
            assertNotEquals(rkey, rkey2);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) {
            MemoryRegion target = p.b.mrBindable(4096), back = p.a.mrAll(4096);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_1);
            int rkey = p.b.qp.bindMemoryWindow(
                    mw, 1, false, target, target.address(), 512, EnumSet.of(Access.REMOTE_READ));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(back, 0, 512)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(4)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(back, 0, 513)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) { // the region must allow MW_BIND
            MemoryRegion plain = p.b.mr(64, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_1);
            p.b.qp.bindMemoryWindow(mw, 5, true, plain, plain.address(), 64, EnumSet.of(Access.REMOTE_WRITE));
            assertEquals(WcStatus.MW_BIND_ERR, poll(p.b.cq).status);
        }
    }

    @Test
    void memoryWindowType2BindInvalidateAndSendWithInvalidate() {
        try (RcPair p = pair()) {
            MemoryRegion target = p.b.mrBindable(4096), src = p.a.mrAll(4096), rbuf = p.b.mrAll(64);
            fill(src.segment(), 4096, 12);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & ~0xFF) | 0x42;
            SendWorkRequest bind =
                    new SendWorkRequest().wrId(1).opcode(WrOpcode.BIND_MW).signaled(true);
            bind.bindMw = mw;
            bind.bindRkey = rkey;
            bind.bindMr = target;
            bind.bindAddr = target.address();
            bind.bindLength = 2048;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            p.b.qp.postSend(bind);
            assertEquals(WcOpcode.BIND_MW, poll(p.b.cq).opcode);
            assertEquals(rkey, mw.rkey());
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 2048)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(target.segment(), 0, 2048, 12);
            // binding a bound type 2 window again fails
            p.b.qp.postSend(bind.wrId(3));
            assertEquals(WcStatus.MW_BIND_ERR, poll(p.b.cq).status);
        }
        try (RcPair p = pair()) { // bindRkey 0: the provider picks the next key, and rkey() shows it at once
            MemoryRegion target = p.b.mrBindable(4096), src = p.a.mrAll(64);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int before = mw.rkey();
            SendWorkRequest bind =
                    new SendWorkRequest().wrId(1).opcode(WrOpcode.BIND_MW).signaled(true);
            bind.bindMw = mw;
            bind.bindMr = target;
            bind.bindAddr = target.address();
            bind.bindLength = 64;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            p.b.qp.postSend(bind);
            int rkey = mw.rkey();
            assertEquals(before & ~0xFF, rkey & ~0xFF);
            assertNotEquals(before, rkey);
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 64)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) {
            MemoryRegion target = p.b.mrBindable(4096), src = p.a.mrAll(4096);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & ~0xFF) | 0x07;
            SendWorkRequest bind = new SendWorkRequest().wrId(1).opcode(WrOpcode.BIND_MW);
            bind.bindMw = mw;
            bind.bindRkey = rkey;
            bind.bindMr = target;
            bind.bindAddr = target.address();
            bind.bindLength = 4096;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            SendWorkRequest inv =
                    new SendWorkRequest().wrId(2).opcode(WrOpcode.LOCAL_INV).signaled(true);
            inv.invalidateRkey = rkey;
            bind.next(inv);
            p.b.qp.postSend(bind);
            WorkCompletion c = poll(p.b.cq);
            assertEquals(WcOpcode.LOCAL_INV, c.opcode);
            assertEquals(2, c.wrId);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) {
            MemoryRegion target = p.b.mrBindable(4096), src = p.a.mrAll(4096), rbuf = p.b.mrAll(64);
            MemoryWindow mw = p.b.pd.allocMemoryWindow(MwType.TYPE_2);
            int rkey = (mw.rkey() & ~0xFF) | 0x99;
            SendWorkRequest bind = new SendWorkRequest().wrId(1).opcode(WrOpcode.BIND_MW);
            bind.bindMw = mw;
            bind.bindRkey = rkey;
            bind.bindMr = target;
            bind.bindAddr = target.address();
            bind.bindLength = 4096;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            p.b.qp.postSend(bind);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(5).buffer(rbuf, 0, 64));
            SendWorkRequest swi = new SendWorkRequest()
                    .wrId(6)
                    .opcode(WrOpcode.SEND_WITH_INV)
                    .signaled(true)
                    .buffer(src, 0, 16);
            swi.invalidateRkey = rkey;
            p.a.qp.postSend(swi);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            WorkCompletion r = poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertTrue(r.hasInv());
            assertEquals(rkey, r.immData);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(7)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(target.address(), rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, poll(p.a.cq).status);
        }
    }

    @Test
    void completionChannelNextAndSolicited() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(256);
            for (int i = 0; i < 3; i++)
                p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(dst, i * 64L, 64));
            assertNull(p.b.ch.awaitEvent(Duration.ofMillis(20)));
            p.b.cq.requestNotify(false);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).buffer(src, 0, 8));
            CompletionQueue ready = p.b.ch.awaitEvent(Duration.ofSeconds(5));
            assertSame(p.b.cq, ready);
            ready.ackEvents(1);
            assertEquals(0, poll(p.b.cq).wrId);

            p.b.cq.requestNotify(true); // solicited only
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).buffer(src, 0, 8));
            assertEquals(1, poll(p.b.cq).wrId);
            assertNull(p.b.ch.awaitEvent(Duration.ofMillis(100)), "an unsolicited message raised an event");
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.SEND)
                    .flag(SendFlag.SOLICITED, true)
                    .buffer(src, 0, 8));
            assertSame(p.b.cq, p.b.ch.awaitEvent(Duration.ofSeconds(5)));
            p.b.cq.ackEvents(1);
            assertEquals(2, poll(p.b.cq).wrId);
        }
    }

    @Test
    void cqOverrunIsReported() {
        try (RcPair p = pair(o -> o.cqe(2))) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            long end = System.nanoTime() + 5_000_000_000L;
            while (((SoftCq) p.a.cq).lost() == 0 && System.nanoTime() < end) sleep(1);
            WorkCompletion[] wc = WorkCompletion.array(4);
            assertEquals(2, p.a.cq.poll(wc));
            VerbsException e = assertThrows(VerbsException.class, () -> p.a.cq.poll(wc));
            assertTrue(e.getMessage().contains("overrun"), e.getMessage());
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    @Test
    void closingAParentClosesChildrenAndUseAfterCloseThrows() {
        RcPair p = pair();
        MemoryRegion mr = p.a.mrAll(64);
        MemoryWindow mw = p.a.pd.allocMemoryWindow(MwType.TYPE_1);
        p.a.ctx.close();
        assertTrue(p.a.qp.isClosed());
        assertTrue(p.a.pd.isClosed());
        assertTrue(p.a.cq.isClosed());
        assertTrue(p.a.ch.isClosed());
        assertTrue(mr.isClosed());
        assertTrue(mw.isClosed());
        assertThrows(
                ClosedException.class,
                () -> p.a.qp.postSend(
                        new SendWorkRequest().opcode(WrOpcode.SEND).buffer(mr, 0, 8)));
        assertThrows(ClosedException.class, () -> p.a.cq.poll(WorkCompletion.array(1)));
        assertThrows(ClosedException.class, () -> p.a.pd.allocMemoryWindow(MwType.TYPE_1));
        assertThrows(ClosedException.class, () -> p.a.ctx.allocPd());
        assertThrows(ClosedException.class, () -> p.a.ch.awaitEvent(Duration.ofMillis(1)));
        p.a.ctx.close(); // idempotent
        // the peer's QP, writing to the closed side, runs out of retries instead of hanging
        p.b.close();
        p.a.arena.close();
    }

    @Test
    void deregisteredRegionIsNoLongerReachable() {
        try (RcPair p = pair()) {
            MemoryRegion dst = p.b.mrAll(64), src = p.a.mrAll(64);
            dst.close();
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, poll(p.a.cq).status);
        }
    }

    @Test
    void corruptedAndMalformedPacketsAreDroppedAndCounted() throws Exception {
        try (RcPair p = pair();
                DatagramChannel ch = DatagramChannel.open(StandardProtocolFamily.INET)) {
            ch.bind(new InetSocketAddress(A, 0));
            int srcPort = ((InetSocketAddress) ch.getLocalAddress()).getPort();
            SoftContext ctx = (SoftContext) p.b.ctx;
            SoftContext.Stats before = ctx.stats();
            long icrcBefore = p.b.ctx.counters().get("rx_bad_icrc");
            ByteBuffer b = ByteBuffer.allocate(64);
            int len = RocePacket.writeBth(
                    b, 0, Opcode.SEND_ONLY.code(), false, Bth.DEFAULT_PKEY, p.b.qp.qpNum(), true, 5000, 8);
            new Icrc().generate(b, 0, len, A.hashCode(), B.hashCode(), srcPort, PORT);
            b.put(14, (byte) (b.get(14) ^ 0x10)); // flip a payload bit after the ICRC
            ch.send(b.slice(0, len), new InetSocketAddress(B, PORT));
            ch.send(ByteBuffer.wrap(new byte[] {1, 2, 3}), new InetSocketAddress(B, PORT));
            // valid ICRC, unknown opcode
            ByteBuffer m = ByteBuffer.allocate(64);
            RocePacket.writeBth(m, 0, Opcode.SEND_ONLY.code(), false, Bth.DEFAULT_PKEY, p.b.qp.qpNum(), true, 5000, 0);
            m.put(0, (byte) 0x15);
            new Icrc().generate(m, 0, 16, A.hashCode(), B.hashCode(), srcPort, PORT);
            ch.send(m.slice(0, 16), new InetSocketAddress(B, PORT));
            long end = System.nanoTime() + 5_000_000_000L;
            while (ctx.stats().rxMalformed() == before.rxMalformed() && System.nanoTime() < end) Thread.sleep(1);
            SoftContext.Stats after = ctx.stats();
            assertEquals(2, after.rxBadIcrc() - before.rxBadIcrc());
            assertEquals(1, after.rxMalformed() - before.rxMalformed());
            assertEquals(2, p.b.ctx.counters().get("rx_bad_icrc") - icrcBefore);
            // the QP is unharmed
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        }
    }

    @Test
    void lostPacketsAreRetransmitted() {
        try (RcPair p =
                pair(o -> o.timeout(14))) { // 67 ms: on a loaded 2-core box a receive thread may wait ~100 ms for a CPU
            Transport ta = ((SoftContext) p.a.ctx).transport, tb = ((SoftContext) p.b.ctx).transport;
            try {
                ta.testDropOneIn = 12;
                tb.testDropOneIn = 10;
                int size = 256 * 1024;
                MemoryRegion src = p.a.mrAll(size), dst = p.b.mrAll(size), back = p.a.mrAll(size), rb = p.b.mrAll(size);
                fill(src.segment(), size, 21);
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(1)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(src, 0, size)
                        .remote(dst.address(), dst.rkey()));
                assertEquals(WcStatus.SUCCESS, poll(p.a.cq, 20000).status);
                assertFilled(dst.segment(), 0, size, 21);
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(2)
                        .opcode(WrOpcode.RDMA_READ)
                        .signaled(true)
                        .buffer(back, 0, size)
                        .remote(dst.address(), dst.rkey()));
                assertEquals(WcStatus.SUCCESS, poll(p.a.cq, 20000).status);
                assertFilled(back.segment(), 0, size, 21);
                for (int i = 0; i < 20; i++)
                    p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(rb, 0, size));
                for (int i = 0; i < 20; i++)
                    p.a.qp.postSend(new SendWorkRequest()
                            .wrId(100 + i)
                            .opcode(WrOpcode.SEND)
                            .signaled(true)
                            .buffer(src, 0, 3000));
                for (int i = 0; i < 20; i++) {
                    WorkCompletion c = poll(p.a.cq, 20000);
                    assertEquals(WcStatus.SUCCESS, c.status);
                    assertEquals(100 + i, c.wrId);
                    WorkCompletion r = poll(p.b.cq, 20000);
                    assertEquals(i, r.wrId);
                    assertEquals(3000, r.byteLen);
                }
                MemoryRegion cnt = p.b.mrAll(8), res = p.a.mrAll(8);
                for (int i = 0; i < 20; i++)
                    p.a.qp.postSend(new SendWorkRequest()
                            .wrId(200 + i)
                            .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                            .signaled(true)
                            .buffer(res, 0, 8)
                            .atomic(cnt.address(), cnt.rkey(), 1, 0));
                for (int i = 0; i < 20; i++) assertEquals(WcStatus.SUCCESS, poll(p.a.cq, 20000).status);
                assertEquals(
                        20L,
                        cnt.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0),
                        "each atomic executed exactly once");
                assertTrue(((SoftContext) p.a.ctx).stats().retransmits() > 0);
            } finally {
                ta.testDropOneIn = 0;
                tb.testDropOneIn = 0;
            }
        }
    }

    @Test
    void confinedMemoryIsRefusedWithAnExplanation() {
        try (RcPair p = pair();
                var confined = java.lang.foreign.Arena.ofConfined()) {
            VerbsException e = assertThrows(
                    VerbsException.class, () -> p.a.pd.registerMemory(confined.allocate(64), Access.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("Arena.ofShared"), e.getMessage());
            assertThrows(
                    VerbsException.class,
                    () -> p.a.pd.createQueuePair(QpInitAttr.builder(p.a.cq)
                            .type(dev.jrdma.verbs.QpType.UC)
                            .build()));
        }
    }

    @Test
    void queryAndSendQueueDrain() throws InterruptedException {
        try (RcPair p = pair()) {
            dev.jrdma.verbs.QpAttr q = p.a.qp.query();
            assertEquals(dev.jrdma.verbs.QpState.RTS, q.state());
            assertEquals(p.b.qp.qpNum(), q.destQpNum());
            assertEquals(Mtu.MTU_1024, q.pathMtu());
            assertEquals(100, q.sqPsn());
            assertEquals(5000, q.rqPsn());
            assertEquals(Gid.parse("::ffff:127.0.0.2"), q.ah().dgid);
            assertTrue(q.access().contains(Access.REMOTE_ATOMIC));
            assertTrue(p.a.qp.cap().maxSendWr() >= 64);
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            p.a.qp.modify(new dev.jrdma.verbs.QpAttr().state(dev.jrdma.verbs.QpState.SQD));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            assertNoCompletion(p.a.cq, 50);
            p.a.qp.modify(new dev.jrdma.verbs.QpAttr().state(dev.jrdma.verbs.QpState.RTS));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        }
    }
}
