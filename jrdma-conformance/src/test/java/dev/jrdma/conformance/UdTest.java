package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.UdWalk;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** UD queue pairs and address handles: datagrams with Q_Keys, the 40-byte GRH area, answering the sender from its completion. */
@Timeout(60)
class UdTest {
    static final int QKEY = 0x11111111, PAYLOAD = 100;

    /** Two UD QPs on the device under test, in RTS, each with its own CQ. */
    static final class UdPair implements AutoCloseable {
        final Arena arena = Arena.ofShared();
        final Context ctx = Suite.device().open();
        final ProtectionDomain pd = ctx.allocPd();
        final CompletionQueue cqA = ctx.createCq(64, null), cqB = ctx.createCq(64, null);
        final QueuePair a = ud(cqA), b = ud(cqB);
        final int gidIndex = ctx.defaultGidIndex(Suite.PORT);
        final Gid gid = ctx.queryGid(Suite.PORT, gidIndex);
        final MemoryRegion bufA = mr(4096), bufB = mr(4096);

        UdPair() {
            for (QueuePair q : new QueuePair[] {a, b}) UdWalk.walk(q, Suite.PORT, QKEY, 0x123);
        }

        private QueuePair ud(CompletionQueue cq) {
            return pd.createQueuePair(QpInitAttr.builder(cq)
                    .type(QpType.UD)
                    .maxSendWr(16)
                    .maxRecvWr(16)
                    .maxSendSge(1)
                    .maxRecvSge(1)
                    .build());
        }

        MemoryRegion mr(long size) {
            return pd.registerMemory(arena.allocate(size, 64), dev.jrdma.verbs.Access.LOCAL_WRITE);
        }

        AddressHandle ahToSelf() {
            return pd.createAddressHandle(new AhAttr()
                    .dlid(ctx.queryPort(Suite.PORT).lid())
                    .portNum(Suite.PORT)
                    .global(gid, gidIndex));
        }

        @Override
        public void close() {
            ctx.close();
            arena.close();
        }
    }

    @Test
    void datagramArrivesWithGrhSourceQpAndImmediate() {
        try (UdPair p = new UdPair()) {
            AddressHandle ah = p.ahToSelf();
            p.b.postRecv(new RecvWorkRequest().wrId(5).buffer(p.bufB, 0, Grh.BYTES + PAYLOAD));
            RcPair.fill(p.bufA.segment(), 0, PAYLOAD, 7);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND_WITH_IMM)
                    .immData(0xCAFE)
                    .wrId(1)
                    .buffer(p.bufA, 0, PAYLOAD)
                    .ud(ah, p.b.qpNum(), QKEY)
                    .signaled(true));
            WorkCompletion sent = Suite.one(p.cqA);
            assertEquals(WcStatus.SUCCESS, sent.status, sent::toString);
            assertEquals(WcOpcode.SEND, sent.opcode);
            WorkCompletion wc = Suite.one(p.cqB);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            assertEquals(5, wc.wrId);
            assertEquals(WcOpcode.RECV, wc.opcode);
            assertEquals(Grh.BYTES + PAYLOAD, wc.byteLen, "the byte count includes the 40-byte GRH area");
            assertTrue(wc.hasGrh(), "a RoCE datagram always comes with a GRH");
            assertTrue(wc.hasImm());
            assertEquals(0xCAFE, wc.immData);
            assertEquals(p.a.qpNum(), wc.srcQp);
            assertEquals(p.b.qpNum(), wc.qpNum);
            RcPair.assertFilled(p.bufB.segment(), Grh.BYTES, PAYLOAD, 7);
            assertEquals(p.gid, Grh.sourceGid(p.bufB.segment(), 0), "the GRH area names the sender");
        }
    }

    @Test
    void answerTheSenderWithAnAddressHandleFromItsCompletion() {
        try (UdPair p = new UdPair()) {
            AddressHandle ah = p.ahToSelf();
            p.b.postRecv(new RecvWorkRequest().wrId(1).buffer(p.bufB, 0, Grh.BYTES + PAYLOAD));
            p.a.postRecv(new RecvWorkRequest().wrId(2).buffer(p.bufA, 1024, Grh.BYTES + PAYLOAD));
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(p.bufA, 0, 8)
                    .ud(ah, p.b.qpNum(), QKEY)
                    .signaled(true));
            Suite.one(p.cqA);
            WorkCompletion request = Suite.one(p.cqB);
            assertEquals(WcStatus.SUCCESS, request.status, request::toString);
            try (AddressHandle back =
                    p.pd.createAddressHandleFromWc(request, p.bufB.segment().asSlice(0, Grh.BYTES), Suite.PORT)) {
                assertEquals(p.gid, back.attr().dgid);
                RcPair.fill(p.bufB.segment(), 2048, 16, 3);
                p.b.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .buffer(p.bufB, 2048, 16)
                        .ud(back, request.srcQp, QKEY)
                        .signaled(true));
                assertEquals(WcStatus.SUCCESS, Suite.one(p.cqB).status);
                WorkCompletion reply = Suite.one(p.cqA);
                assertEquals(WcStatus.SUCCESS, reply.status, reply::toString);
                assertEquals(2, reply.wrId);
                assertEquals(p.b.qpNum(), reply.srcQp);
                assertEquals(Grh.BYTES + 16, reply.byteLen);
                RcPair.assertFilled(p.bufA.segment(), 1024 + Grh.BYTES, 16, 3);
            }
        }
    }

    @Test
    void wrongQkeyIsDroppedAndTheReceiveStaysPosted() {
        try (UdPair p = new UdPair()) {
            AddressHandle ah = p.ahToSelf();
            p.b.postRecv(new RecvWorkRequest().wrId(9).buffer(p.bufB, 0, Grh.BYTES + PAYLOAD));
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(p.bufA, 0, 8)
                    .ud(ah, p.b.qpNum(), QKEY + 1)
                    .signaled(true));
            assertEquals(WcStatus.SUCCESS, Suite.one(p.cqA).status, "UD has no ACK: the sender completes either way");
            Suite.none(p.cqB, 300);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(p.bufA, 0, 8)
                    .ud(ah, p.b.qpNum(), QKEY)
                    .signaled(true));
            Suite.one(p.cqA);
            WorkCompletion wc = Suite.one(p.cqB);
            assertEquals(9, wc.wrId, "the right Q_Key lands in the receive the wrong one left alone");
            assertEquals(WcStatus.SUCCESS, wc.status);
        }
    }

    @Test
    void datagramLargerThanTheMtuOrWithoutAddressHandleIsRefused() {
        try (UdPair p = new UdPair()) {
            AddressHandle ah = p.ahToSelf();
            int mtu = p.ctx.queryPort(Suite.PORT).activeMtu().bytes;
            MemoryRegion big = p.mr(mtu + 1);
            assertThrows(
                    PostException.class,
                    () -> p.a.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.SEND)
                            .buffer(big, 0, mtu + 1)
                            .ud(ah, p.b.qpNum(), QKEY)
                            .signaled(true)));
            assertThrows(
                    PostException.class,
                    () -> p.a.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.SEND)
                            .buffer(p.bufA, 0, 8)
                            .signaled(true)));
            assertThrows(
                    PostException.class,
                    () -> p.a.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(p.bufA, 0, 8)
                            .ud(ah, p.b.qpNum(), QKEY)
                            .remote(0, 0)
                            .signaled(true)));
        }
    }
}
