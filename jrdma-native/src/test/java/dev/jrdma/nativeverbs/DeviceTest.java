package dev.jrdma.nativeverbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.Backends;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** The native provider on a real device (rxe0 in the Soft-RoCE guest). Skips where there is none. */
@SuppressWarnings("try") // close() is called explicitly to test idempotence
class DeviceTest {
    /**
     * Two QPs of one context of the native device, connected by the kit: {@code depth} WRs and {@code maxSge} SGEs
     * each way, {@code maxInline} bytes inline, CQs of twice the depth, the port's MTU, one READ/atomic in flight.
     */
    static RcPair pair(int depth, int maxSge, int maxInline) {
        return RcPair.on(Backends.device(Backends.nativeDevice()))
                .qp(q -> q.maxSendWr(depth)
                        .maxRecvWr(depth)
                        .maxSendSge(maxSge)
                        .maxRecvSge(maxSge)
                        .maxInlineData(maxInline))
                .cqe(depth * 2 + 2)
                .mtu(Mtu.MTU_4096)
                .minRnrTimer(12)
                .maxRdAtomic(1)
                .maxDestRdAtomic(1)
                .psns(0x1000, 0x2000)
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)
                .build();
    }

    @Test
    void deviceAttributesPortsAndGids() {
        Device dev = Backends.nativeDevice();
        assertTrue(Verbs.devices().contains(dev)
                || Verbs.devices().stream().anyMatch(d -> d.name().equals(dev.name())));
        try (Context ctx = dev.open()) {
            DeviceAttr a = ctx.queryDevice();
            System.out.println(dev.name() + ": guid " + dev.nodeGuidString() + " " + dev.nodeType() + "/"
                    + dev.transportType()
                    + " fw '" + a.fwVer() + "' vendor 0x" + Integer.toHexString(a.vendorId()) + " max_qp " + a.maxQp()
                    + " max_qp_wr " + a.maxQpWr() + " max_sge " + a.maxSge() + " max_cqe " + a.maxCqe() + " max_mr "
                    + a.maxMr()
                    + " max_mw " + a.maxMw() + " atomic " + a.atomicCap() + " caps 0x"
                    + Integer.toHexString(a.deviceCapFlags())
                    + " ports " + a.physPortCnt());
            assertTrue(a.physPortCnt() >= 1);
            assertTrue(a.maxQp() > 0 && a.maxQpWr() > 0 && a.maxSge() > 0 && a.maxCqe() > 0 && a.maxPd() > 0);
            assertEquals(dev.nodeGuid(), a.nodeGuid(), "ibv_get_device_guid and ibv_query_device agree");
            PortAttr p = ctx.queryPort(1);
            System.out.println("port 1: " + p);
            assertEquals(PortState.ACTIVE, p.state());
            assertTrue(p.gidTblLen() > 0);
            var table = ctx.gidTable(1);
            table.forEach(
                    e -> System.out.println("  GID[" + e.index() + "] " + e.gid() + " " + e.type() + " " + e.netdev()));
            assertFalse(table.isEmpty());
            if (dev.name().startsWith("rxe")) {
                assertEquals(dev.nodeGuid() != 0, true);
                assertTrue(table.stream().anyMatch(GidEntry::isRoceV2), "rxe has RoCE v2 GIDs");
                assertTrue(
                        table.stream().anyMatch(e -> e.gid().isIpv4Mapped()),
                        "an IPv4-mapped GID (the dummy0 address)");
            }
            assertEquals(
                    table.getFirst().gid(), ctx.queryGid(1, table.getFirst().index()));
            VerbsException bad = assertThrows(VerbsException.class, () -> ctx.queryPort(a.physPortCnt() + 1));
            assertTrue(bad.getMessage().contains("ibv_query_port"), bad.getMessage());
            assertThrows(VerbsException.class, () -> ctx.queryGid(1, p.gidTblLen() + 5));
        }
    }

    @Test
    void lifecycleAndCloseRules() {
        try (Context ctx = Backends.nativeDevice().open();
                Arena arena = Arena.ofShared()) {
            ProtectionDomain pd = ctx.allocPd();
            MemoryRegion mr = pd.registerMemory(arena.allocate(4096, 4096), Access.LOCAL_WRITE, Access.REMOTE_READ);
            assertTrue(mr.lkey() != 0 || mr.rkey() != 0);
            assertEquals(4096, mr.length());
            CompletionQueue cq = ctx.createCq(8, null);
            assertTrue(cq.capacity() >= 8);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
            assertEquals(QpState.RESET, qp.state());
            assertTrue(qp.cap().maxSendWr() >= 16);
            assertTrue(qp.qpNum() > 0);

            // heap segments and closed arenas are refused
            VerbsException heap = assertThrows(
                    VerbsException.class,
                    () -> pd.registerMemory(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
            assertTrue(heap.getMessage().contains("heap"), heap.getMessage());
            assertThrows(
                    VerbsException.class,
                    () -> pd.registerMemory(MemorySegment.ofBuffer(ByteBuffer.allocate(64)), Access.LOCAL_WRITE));
            MemorySegment dead;
            try (Arena tmp = Arena.ofConfined()) {
                dead = tmp.allocate(64);
            }
            VerbsException closedArena =
                    assertThrows(VerbsException.class, () -> pd.registerMemory(dead, Access.LOCAL_WRITE));
            assertTrue(closedArena.getMessage().contains("arena"), closedArena.getMessage());
            VerbsException flags = assertThrows(
                    VerbsException.class, () -> pd.registerMemory(arena.allocate(64), Access.REMOTE_WRITE));
            assertTrue(flags.getMessage().contains("LOCAL_WRITE"));

            // a direct ByteBuffer is native memory
            try (MemoryRegion direct =
                    pd.registerMemory(MemorySegment.ofBuffer(ByteBuffer.allocateDirect(4096)), Access.LOCAL_WRITE)) {
                assertEquals(4096, direct.length());
            }

            // closing the PD closes its MR and QP first; every later use is an exception; close is idempotent
            pd.close();
            assertTrue(mr.isClosed() && qp.isClosed() && pd.isClosed());
            assertFalse(cq.isClosed());
            assertThrows(ClosedException.class, qp::state);
            assertThrows(ClosedException.class, () -> qp.postSend(new SendWorkRequest()));
            assertThrows(ClosedException.class, () -> qp.postRecv(new RecvWorkRequest()));
            assertThrows(ClosedException.class, () -> pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE));
            pd.close();
            mr.close();
            qp.close();

            // closing a CQ closes the QPs that use it
            ProtectionDomain pd2 = ctx.allocPd();
            QueuePair qp2 = pd2.createQueuePair(QpInitAttr.builder(cq).build());
            cq.close();
            assertTrue(qp2.isClosed());
            assertThrows(ClosedException.class, () -> cq.poll(WorkCompletion.array(1)));
            ctx.close();
            assertTrue(pd2.isClosed());
            assertThrows(ClosedException.class, ctx::allocPd);
            ctx.close();
        }
    }

    @Test
    void stateMachine() {
        try (Context ctx = Backends.nativeDevice().open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(8, null);
            QueuePair a = pd.createQueuePair(QpInitAttr.builder(cq).build());
            QueuePair b = pd.createQueuePair(QpInitAttr.builder(cq).build());
            VerbsException skip = assertThrows(VerbsException.class, () -> a.modify(new QpAttr().state(QpState.RTS)));
            assertEquals(VerbsException.EINVAL, skip.errno());
            assertTrue(skip.getMessage().contains("RESET") && skip.getMessage().contains("INIT"), skip.getMessage());
            VerbsException missing = assertThrows(
                    VerbsException.class,
                    () -> a.modify(new QpAttr().state(QpState.INIT).port(1)));
            assertTrue(missing.getMessage().contains("PKEY_INDEX"), missing.getMessage());

            for (QueuePair[] q : new QueuePair[][] {{a, b}, {b, a}}) {
                new RcWalk()
                        .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)
                        .ah(RcPair.ahTo(ctx, ctx))
                        .pathMtu(ctx.queryPort(1).activeMtu())
                        .to(q[1].qpNum(), q[0] == a ? 0x22 : 0x11)
                        .sqPsn(q[0] == a ? 0x11 : 0x22)
                        .maxRdAtomic(1)
                        .maxDestRdAtomic(1)
                        .walk(q[0]);
            }
            assertEquals(QpState.RTS, a.state());
            QpAttr q = a.query();
            System.out.println("query: " + q);
            assertEquals(QpState.RTS, q.state());
            assertEquals(b.qpNum(), q.destQpNum());
            assertEquals(0x11, q.sqPsn());
            assertEquals(0x22, q.rqPsn());
            assertEquals(14, q.timeout());
            assertEquals(7, q.retryCnt());
            assertEquals(1, q.port());
            assertTrue(
                    q.access().containsAll(EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)));
            assertEquals(ctx.queryPort(1).activeMtu(), q.pathMtu());

            a.modify(new QpAttr().state(QpState.SQD));
            a.modify(new QpAttr().state(QpState.RTS));
            a.modify(new QpAttr().state(QpState.ERR));
            assertEquals(QpState.ERR, a.state());
            VerbsException fromErr =
                    assertThrows(VerbsException.class, () -> a.modify(new QpAttr().state(QpState.RTS)));
            assertTrue(fromErr.getMessage().contains("ERR"), fromErr.getMessage());
            a.modify(new QpAttr().state(QpState.RESET));
            assertEquals(QpState.RESET, a.state());
            // the device's own check: a bad GID index passes the state machine but not ibv_modify_qp
            a.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(Access.REMOTE_WRITE));
            var ah = new dev.jrdma.verbs.AhAttr().portNum(1).global(ctx.queryGid(1, ctx.defaultGidIndex(1)), 1000);
            VerbsException dev = assertThrows(
                    VerbsException.class,
                    () -> a.modify(new QpAttr()
                            .state(QpState.RTR)
                            .ah(ah)
                            .pathMtu(ctx.queryPort(1).activeMtu())
                            .destQpNum(b.qpNum())
                            .rqPsn(0)
                            .maxDestRdAtomic(1)
                            .minRnrTimer(12)));
            System.out.println("device-refused modify: " + dev.getMessage());
            assertTrue(dev.getMessage().startsWith("ibv_modify_qp failed ("), dev.getMessage());
        }
    }

    @Test
    void everyOpcode() {
        try (RcPair r = DeviceTest.pair(16, 4, 64)) {
            MemoryRegion mrA = r.a.mrAll(8192), mrB = r.b.mrAll(8192);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            SendWorkRequest s = new SendWorkRequest(4);
            RecvWorkRequest rv = new RecvWorkRequest(4);
            byte[] hello = "hello, rdma".getBytes(StandardCharsets.US_ASCII);

            // SEND
            MemorySegment.copy(hello, 0, bufA, JAVA_BYTE, 0, hello.length);
            r.b.qp.postRecv(rv.wrId(100).buffer(mrB, 1024, 1024));
            r.a.qp.postSend(s.wrId(1).opcode(WrOpcode.SEND).signaled(true).buffer(mrA, 0, hello.length));
            WorkCompletion sc = r.awaitOk(r.a.cq);
            assertEquals(1, sc.wrId);
            assertEquals(WcOpcode.SEND, sc.opcode);
            WorkCompletion rc = r.awaitOk(r.b.cq);
            assertEquals(100, rc.wrId);
            assertEquals(WcOpcode.RECV, rc.opcode);
            assertEquals(hello.length, rc.byteLen);
            assertFalse(rc.hasImm());
            assertEquals(r.b.qp.qpNum(), rc.qpNum);
            assertArrayEquals(hello, bufB.asSlice(1024, hello.length).toArray(JAVA_BYTE));

            // SEND_WITH_IMM: immData is host order on both sides
            r.b.qp.postRecv(rv.wrId(101).buffer(mrB, 1024, 1024));
            r.a.qp.postSend(
                    s.wrId(2).opcode(WrOpcode.SEND_WITH_IMM).immData(0x12345678).buffer(mrA, 0, 4));
            r.awaitOk(r.a.cq);
            rc = r.awaitOk(r.b.cq);
            assertTrue(rc.hasImm());
            assertEquals(0x12345678, rc.immData);
            assertEquals(WcOpcode.RECV, rc.opcode);

            // RDMA_WRITE, two SGEs gathered
            for (int i = 0; i < 64; i++) bufA.set(JAVA_BYTE, 2048 + i, (byte) i);
            s.wrId(3)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .remote(mrB.address() + 4096, mrB.rkey())
                    .numSge(2);
            s.sge(0).set(mrA, 2048, 32);
            s.sge(1).set(mrA, 2048 + 32, 32);
            r.a.qp.postSend(s);
            assertEquals(WcOpcode.RDMA_WRITE, r.awaitOk(r.a.cq).opcode);
            assertArrayEquals(
                    bufA.asSlice(2048, 64).toArray(JAVA_BYTE),
                    bufB.asSlice(4096, 64).toArray(JAVA_BYTE));

            // RDMA_WRITE_WITH_IMM consumes a receive and reports RECV_RDMA_WITH_IMM
            r.b.qp.postRecv(rv.wrId(102).buffer(mrB, 1024, 16));
            r.a.qp.postSend(s.wrId(4)
                    .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .immData(0xCAFEBABE)
                    .remote(mrB.address() + 5000, mrB.rkey())
                    .buffer(mrA, 0, hello.length));
            r.awaitOk(r.a.cq);
            rc = r.awaitOk(r.b.cq);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, rc.opcode);
            assertEquals(0xCAFEBABE, rc.immData);
            assertArrayEquals(hello, bufB.asSlice(5000, hello.length).toArray(JAVA_BYTE));

            // RDMA_READ
            bufB.asSlice(6000, 8).set(JAVA_LONG, 0, 0x0123456789ABCDEFL);
            r.a.qp.postSend(s.wrId(5)
                    .opcode(WrOpcode.RDMA_READ)
                    .remote(mrB.address() + 6000, mrB.rkey())
                    .buffer(mrA, 3000, 8));
            WorkCompletion rd = r.awaitOk(r.a.cq);
            assertEquals(WcOpcode.RDMA_READ, rd.opcode);
            assertEquals(0x0123456789ABCDEFL, bufA.get(JAVA_LONG, 3000));

            // atomics on an 8-byte aligned word of B
            long target = mrB.address() + 7000 - (7000 % 8);
            long off = target - mrB.address();
            bufB.set(JAVA_LONG, off, 40);
            r.a.qp.postSend(s.wrId(6)
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .atomic(target, mrB.rkey(), 2, 0)
                    .buffer(mrA, 3008, 8));
            assertEquals(WcOpcode.FETCH_ADD, r.awaitOk(r.a.cq).opcode);
            assertEquals(40, bufA.get(JAVA_LONG, 3008), "fetch-and-add returns the old value");
            assertEquals(42, bufB.get(JAVA_LONG, off));
            r.a.qp.postSend(s.wrId(7)
                    .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .atomic(target, mrB.rkey(), 42, 99)
                    .buffer(mrA, 3016, 8));
            assertEquals(WcOpcode.COMP_SWAP, r.awaitOk(r.a.cq).opcode);
            assertEquals(42, bufA.get(JAVA_LONG, 3016));
            assertEquals(99, bufB.get(JAVA_LONG, off));
            r.a.qp.postSend(s.wrId(8)
                    .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .atomic(target, mrB.rkey(), 1, 5)
                    .buffer(mrA, 3024, 8));
            r.awaitOk(r.a.cq);
            assertEquals(99, bufB.get(JAVA_LONG, off), "no swap when compare differs");

            // inline SEND: the buffer may change right after the post
            r.b.qp.postRecv(rv.wrId(103).buffer(mrB, 1024, 1024));
            MemorySegment.copy(hello, 0, bufA, JAVA_BYTE, 100, hello.length);
            s.wrId(9).opcode(WrOpcode.SEND).buffer(mrA, 100, hello.length).flag(SendFlag.INLINE, true);
            r.a.qp.postSend(s);
            bufA.asSlice(100, hello.length).fill((byte) 0);
            r.awaitOk(r.a.cq);
            rc = r.awaitOk(r.b.cq);
            assertArrayEquals(hello, bufB.asSlice(1024, hello.length).toArray(JAVA_BYTE));
            s.flag(SendFlag.INLINE, false);

            // a chain of two WRs in one post
            SendWorkRequest s2 = new SendWorkRequest()
                    .wrId(11)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .remote(mrB.address(), mrB.rkey())
                    .buffer(mrA, 0, 8);
            s.wrId(10)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .remote(mrB.address() + 8, mrB.rkey())
                    .buffer(mrA, 0, 8)
                    .next(s2);
            r.a.qp.postSend(s);
            WorkCompletion[] two = r.awaitAll(r.a.cq, 2).toArray(WorkCompletion[]::new);
            assertEquals(10, two[0].wrId);
            assertEquals(11, two[1].wrId);
            s.next(null);

            // refused posts: too many SGEs, inline too large, inline from unregistered memory, a dead arena's MR
            SendWorkRequest wide = new SendWorkRequest(8).opcode(WrOpcode.SEND).numSge(8);
            for (int i = 0; i < 8; i++) wide.sge(i).set(mrA, 0, 1);
            PostException tooMany = assertThrows(PostException.class, () -> r.a.qp.postSend(wide));
            assertTrue(tooMany.getMessage().contains("max_send_sge"), tooMany.getMessage());
            assertEquals(0, tooMany.badIndex());
            PostException big = assertThrows(
                    PostException.class,
                    () -> r.a.qp.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.SEND)
                            .flag(SendFlag.INLINE, true)
                            .buffer(mrA, 0, 4096)));
            assertTrue(big.getMessage().contains("max_inline_data"), big.getMessage());
            try (Arena other = Arena.ofConfined()) {
                MemorySegment loose = other.allocate(16);
                SendWorkRequest bad =
                        new SendWorkRequest().opcode(WrOpcode.SEND).flag(SendFlag.INLINE, true);
                bad.sge(0).set(loose.address(), 16, 0);
                PostException unreg = assertThrows(PostException.class, () -> r.a.qp.postSend(bad));
                assertTrue(unreg.getMessage().contains("not inside a live memory region"), unreg.getMessage());
            }
            MemoryRegion doomed;
            try (Arena shortLived = Arena.ofShared()) { // the user's bug: the arena closed while registered
                doomed = r.a.pd.registerMemory(shortLived.allocate(4096, 4096), Access.LOCAL_WRITE);
            }
            RecvWorkRequest drw = new RecvWorkRequest().buffer(doomed, 0, 64);
            PostException deadMr = assertThrows(PostException.class, () -> r.b.qp.postRecv(drw));
            assertTrue(deadMr.getMessage().contains("no longer alive"), deadMr.getMessage());
            doomed.close();
            assertEquals(QpState.RTS, r.a.qp.state(), "refused posts leave the QP usable");
        }
    }

    @Test
    void aPreparedSendPostsAgainAndIsRefusedOnceWhatItUsesIsGone() {
        try (RcPair r = DeviceTest.pair(16, 1, 64)) {
            MemoryRegion mrA = r.a.mrAll(8192), mrB = r.b.mrAll(8192);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            byte[] hello = "prepared".getBytes(StandardCharsets.US_ASCII);
            MemorySegment.copy(hello, 0, bufA, JAVA_BYTE, 0, hello.length);
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(mrA, 0, hello.length)
                    .remote(mrB.address() + 512, mrB.rkey());
            PreparedSend ps = r.a.qp.prepareSend(s);
            s.remote(mrB.address(), mrB.rkey()); // changes nothing prepared
            for (int i = 0; i < 3; i++) {
                bufB.asSlice(512, hello.length).fill((byte) 0);
                if (i == 0) ps.post();
                else ps.post(100 + i);
                WorkCompletion wc = r.awaitOk(r.a.cq);
                assertEquals(i == 0 ? 1 : 100 + i, wc.wrId);
                assertEquals(WcOpcode.RDMA_WRITE, wc.opcode);
                assertArrayEquals(hello, bufB.asSlice(512, hello.length).toArray(JAVA_BYTE));
            }

            // inline data is copied at each post, from a region that must still be open with its memory alive
            MemoryRegion doomed;
            PreparedSend fromDoomed, gathersDoomed;
            try (Arena shortLived = Arena.ofShared()) { // the user's bug: the arena closed while registered
                MemorySegment seg = shortLived.allocate(4096, 4096);
                doomed = r.a.pd.registerMemory(seg, Access.LOCAL_WRITE);
                fromDoomed = r.a.qp.prepareSend(new SendWorkRequest()
                        .wrId(7)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .flag(SendFlag.INLINE, true)
                        .buffer(doomed, 0, 16)
                        .remote(mrB.address(), mrB.rkey()));
                gathersDoomed = r.a.qp.prepareSend(new SendWorkRequest()
                        .wrId(8)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(doomed, 0, 16)
                        .remote(mrB.address(), mrB.rkey()));
                fromDoomed.post();
                assertEquals(7, r.awaitOk(r.a.cq).wrId);
            }
            PostException dead = assertThrows(PostException.class, fromDoomed::post);
            assertTrue(dead.getMessage().contains("no longer alive"), dead.getMessage());
            dead = assertThrows(PostException.class, gathersDoomed::post);
            assertTrue(dead.getMessage().contains("no longer alive"), dead.getMessage());
            doomed.close();
            PostException closed = assertThrows(PostException.class, fromDoomed::post);
            assertTrue(closed.getMessage().contains("was closed"), closed.getMessage());
            assertEquals(QpState.RTS, r.a.qp.state(), "refused posts leave the QP usable");
            ps.post(9);
            assertEquals(9, r.awaitOk(r.a.cq).wrId);

            r.a.qp.close();
            assertThrows(ClosedException.class, ps::post);
            assertThrows(ClosedException.class, () -> r.a.qp.prepareSend(s));
        }
    }

    @Test
    void wrongRkeyGivesRemoteAccessError() {
        try (RcPair r = DeviceTest.pair(16, 1, 0)) {
            MemoryRegion mrA = r.a.mrAll(4096), mrB = r.b.mrAll(4096);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(77)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .remote(mrB.address(), mrB.rkey() ^ 0x5a5a00)
                    .buffer(mrA, 0, 64);
            r.a.qp.postSend(s);
            WorkCompletion wc = r.await(r.a.cq);
            System.out.println("wrong rkey: " + wc + " -> " + wc.explain());
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status);
            assertEquals(77, wc.wrId);
            assertEquals(QpState.ERR, r.a.qp.state());
            // later work is flushed
            r.a.qp.postSend(s.wrId(78).remote(mrB.address(), mrB.rkey()));
            assertEquals(WcStatus.WR_FLUSH_ERR, r.await(r.a.cq).status);
        }
    }

    @Test
    void completionChannelBlockingWait() {
        try (RcPair r = DeviceTest.pair(16, 1, 0)) {
            MemoryRegion mrA = r.a.mrAll(4096), mrB = r.b.mrAll(4096);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            CompletionChannel ch = r.b.ch;
            r.b.cq.requestNotify(false);
            long t0 = System.nanoTime();
            assertNull(ch.awaitEvent(Duration.ofMillis(300)), "no event without a completion");
            long waited = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(waited >= 250, "waited " + waited + " ms");

            r.b.qp.postRecv(new RecvWorkRequest().wrId(5).buffer(mrB, 0, 64));
            Thread sender = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                r.a.qp.postSend(new SendWorkRequest()
                        .wrId(6)
                        .opcode(WrOpcode.SEND)
                        .signaled(true)
                        .buffer(mrA, 0, 64));
            });
            CompletionQueue ready = ch.awaitEvent(Duration.ofSeconds(20));
            assertNotNull(ready, "an event within 20 s");
            assertEquals(r.b.cq, ready);
            ready.ackEvents(1);
            ready.requestNotify(false);
            WorkCompletion[] wcs = WorkCompletion.array(4);
            int n = ready.poll(wcs);
            assertEquals(1, n);
            assertEquals(5, wcs[0].wrId);
            assertTrue(wcs[0].isSuccess());
            r.awaitOk(r.a.cq);
            try {
                sender.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            // an event received but not acked is acked by close (ibv_destroy_cq would wait for it forever)
            r.b.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(mrB, 0, 64));
            r.a.qp.postSend(new SendWorkRequest()
                    .wrId(8)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(mrA, 0, 64));
            assertEquals(r.b.cq, ch.awaitEvent(Duration.ofSeconds(20)));
            ch.close(); // closes the CQ on it and the QP that uses that CQ; A's CQ is on a channel of its own
            assertTrue(r.b.cq.isClosed() && r.b.qp.isClosed());
            assertFalse(r.a.cq.isClosed());
        }
    }

    @Test
    void memoryWindows() {
        try (RcPair r = DeviceTest.pair(16, 1, 0)) {
            MemoryRegion mrA = r.a.mrAll(8192), mrB = r.b.mrAll(8192);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            DeviceAttr attr = r.a.ctx.queryDevice();
            System.out.println("memory windows: max_mw " + attr.maxMw() + " type1 " + attr.supportsMemoryWindows()
                    + " type2 " + attr.supportsType2Windows());
            MemoryRegion mwMr = r.a.pd.registerMemory(
                    r.a.arena.allocate(8192, 4096),
                    Access.LOCAL_WRITE,
                    Access.REMOTE_WRITE,
                    Access.REMOTE_READ,
                    Access.MW_BIND);
            if (!attr.supportsMemoryWindows()) {
                VerbsException e = assertThrows(VerbsException.class, () -> r.a.pd.allocMemoryWindow(MwType.TYPE_1));
                assertEquals(VerbsException.EOPNOTSUPP, e.errno());
                assertTrue(e.getMessage().contains("not supported by this device"), e.getMessage());
                return;
            }
            // type 1: ibv_bind_mw, then the peer writes through the window's rkey
            try (MemoryWindow mw1 = r.a.pd.allocMemoryWindow(MwType.TYPE_1)) {
                int rkey = r.b.qp.bindMemoryWindow(
                        mw1, 900, true, mwMr, mwMr.address() + 1024, 1024, EnumSet.of(Access.REMOTE_WRITE));
                WorkCompletion bind = r.awaitOk(r.b.cq);
                assertEquals(WcOpcode.BIND_MW, bind.opcode);
                assertEquals(rkey, mw1.rkey());
                assertTrue(rkey != mwMr.rkey());
                bufA.set(JAVA_LONG, 0, 0x1122334455667788L);
                r.a.qp.postSend(new SendWorkRequest()
                        .wrId(901)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .remote(mwMr.address() + 1024, rkey)
                        .buffer(mrA, 0, 8));
                r.awaitOk(r.a.cq);
                assertEquals(0x1122334455667788L, mwMr.segment().get(JAVA_LONG, 1024));
                // the window grants no REMOTE_READ: a read through it is a remote access error
                // (rxe checks a window's range against its MR, not the window, so a range test would pass there)
                r.a.qp.postSend(new SendWorkRequest()
                        .wrId(902)
                        .opcode(WrOpcode.RDMA_READ)
                        .signaled(true)
                        .remote(mwMr.address() + 1024, rkey)
                        .buffer(mrA, 0, 8));
                assertEquals(WcStatus.REM_ACCESS_ERR, r.await(r.a.cq).status);
                // the inline wrapper's checks
                VerbsException noMr = assertThrows(
                        VerbsException.class,
                        () -> r.b.qp.bindMemoryWindow(mw1, 1, false, null, 8, 8, EnumSet.noneOf(Access.class)));
                assertEquals(VerbsException.EINVAL, noMr.errno());
                try (ProtectionDomain pd2 = r.a.ctx.allocPd()) {
                    MemoryRegion other =
                            pd2.registerMemory(r.a.arena.allocate(4096, 4096), Access.LOCAL_WRITE, Access.MW_BIND);
                    VerbsException perm = assertThrows(
                            VerbsException.class,
                            () -> r.b.qp.bindMemoryWindow(
                                    mw1, 1, false, other, other.address(), 8, EnumSet.noneOf(Access.class)));
                    assertEquals(VerbsException.EPERM, perm.errno());
                }
            }
            if (!attr.supportsType2Windows()) {
                VerbsException e = assertThrows(VerbsException.class, () -> r.a.pd.allocMemoryWindow(MwType.TYPE_2));
                assertEquals(VerbsException.EOPNOTSUPP, e.errno());
                return;
            }
        }
        // type 2 in a fresh rig (the one above went to ERR): bound with a BIND_MW work request
        try (RcPair r = DeviceTest.pair(16, 1, 0)) {
            MemoryRegion mrA = r.a.mrAll(8192), mrB = r.b.mrAll(8192);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            MemoryRegion mwMr = r.a.pd.registerMemory(
                    r.a.arena.allocate(8192, 4096),
                    Access.LOCAL_WRITE,
                    Access.REMOTE_WRITE,
                    Access.REMOTE_READ,
                    Access.MW_BIND);
            // a window allocated before its region: closing the region closes the bound window first
            MemoryWindow early = r.a.pd.allocMemoryWindow(MwType.TYPE_1);
            MemoryRegion late = r.a.pd.registerMemory(
                    r.a.arena.allocate(4096, 4096), Access.LOCAL_WRITE, Access.REMOTE_READ, Access.MW_BIND);
            r.b.qp.bindMemoryWindow(early, 940, true, late, late.address(), 64, EnumSet.of(Access.REMOTE_READ));
            r.awaitOk(r.b.cq);
            late.close();
            assertTrue(early.isClosed(), "closing a region closes the windows bound to it");

            MemoryWindow mw2 = r.a.pd.allocMemoryWindow(MwType.TYPE_2);
            VerbsException viaVerb = assertThrows(
                    VerbsException.class,
                    () -> r.b.qp.bindMemoryWindow(mw2, 1, true, mwMr, mwMr.address(), 8, EnumSet.noneOf(Access.class)));
            assertEquals(VerbsException.EINVAL, viaVerb.errno());
            SendWorkRequest bind = new SendWorkRequest()
                    .wrId(950)
                    .opcode(WrOpcode.BIND_MW)
                    .signaled(true)
                    .noBuffer();
            bind.bindMw = mw2;
            bind.bindMr = mwMr;
            bind.bindAddr = mwMr.address();
            bind.bindLength = 4096;
            bind.bindAccess.add(Access.REMOTE_READ);
            r.b.qp.postSend(bind);
            WorkCompletion bc = r.awaitOk(r.b.cq);
            assertEquals(WcOpcode.BIND_MW, bc.opcode);
            int rkey = mw2.rkey();
            mwMr.segment().set(JAVA_LONG, 16, 0xABCDEF0012345678L);
            r.a.qp.postSend(new SendWorkRequest()
                    .wrId(951)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .remote(mwMr.address() + 16, rkey)
                    .buffer(mrA, 0, 8));
            r.awaitOk(r.a.cq);
            assertEquals(0xABCDEF0012345678L, bufA.get(JAVA_LONG, 0));
            // invalidate it locally, then a read through it fails
            SendWorkRequest inv = new SendWorkRequest()
                    .wrId(952)
                    .opcode(WrOpcode.LOCAL_INV)
                    .signaled(true)
                    .noBuffer();
            inv.invalidateRkey = rkey;
            r.b.qp.postSend(inv);
            assertEquals(WcOpcode.LOCAL_INV, r.awaitOk(r.b.cq).opcode);
            r.a.qp.postSend(new SendWorkRequest()
                    .wrId(953)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .remote(mwMr.address() + 16, rkey)
                    .buffer(mrA, 0, 8));
            assertEquals(WcStatus.REM_ACCESS_ERR, r.await(r.a.cq).status);
            mw2.close();
            mw2.close();
        }
    }
}
