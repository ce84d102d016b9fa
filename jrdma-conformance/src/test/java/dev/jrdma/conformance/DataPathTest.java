package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Completions;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every opcode end to end between two connected QPs of the device under test. */
@Timeout(60)
class DataPathTest {
    static final int MIB = 1 << 20;
    RcPair p;
    MemoryRegion ma, mb;

    @BeforeEach
    void setUp() {
        p = Suite.pair().build();
        ma = p.a.mrAll(2 * MIB + 4096);
        mb = p.a.mrAll(2 * MIB + 4096);
    }

    @AfterEach
    void tearDown() {
        p.close();
    }

    int mtu() {
        return p.a.qp.query().pathMtu().bytes;
    }

    @ParameterizedTest(name = "send of {0} bytes")
    @ValueSource(ints = {0, 1, -1, -2, -3, MIB})
    void sendReceiveOfEverySize(int code) {
        int size = code == -1 ? mtu() - 1 : code == -2 ? mtu() : code == -3 ? mtu() + 1 : code;
        RcPair.fill(ma.segment(), 0, size, 7);
        p.b.qp.postRecv(new RecvWorkRequest().wrId(77).buffer(mb, 0, MIB + 16));
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND)
                .wrId(11)
                .buffer(ma, 0, size)
                .signaled(true));
        WorkCompletion s = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, s.status, s::toString);
        assertEquals(WcOpcode.SEND, s.opcode);
        assertEquals(11, s.wrId);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, r.status, r::toString);
        assertEquals(WcOpcode.RECV, r.opcode);
        assertEquals(77, r.wrId);
        assertEquals(size, r.byteLen);
        assertEquals(p.b.qp.qpNum(), r.qpNum);
        // src_qp is defined for UD only; the software device fills it for RC too (rxe leaves it 0)
        if (!p.isRxe()) assertEquals(p.a.qp.qpNum(), r.srcQp);
        assertTrue(!r.hasImm());
        RcPair.assertFilled(mb.segment(), 0, size, 7);
    }

    @Test
    void sendWithImmediateOfSeveralPackets() {
        p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(mb, 0, 4096));
        RcPair.fill(ma.segment(), 0, 3000, 1);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND_WITH_IMM)
                .immData(0xCAFEBABE)
                .buffer(ma, 0, 3000)
                .signaled(true));
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, r.status, r::toString);
        assertEquals(WcOpcode.RECV, r.opcode);
        assertTrue(r.hasImm());
        assertEquals(0xCAFEBABE, r.immData);
        assertEquals(3000, r.byteLen);
        RcPair.assertFilled(mb.segment(), 0, 3000, 1);
    }

    @Test
    void sendWithImmediate() {
        p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(mb, 0, 64));
        RcPair.fill(ma.segment(), 0, 10, 3);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND_WITH_IMM)
                .immData(0xDEADBEEF)
                .buffer(ma, 0, 10)
                .signaled(true));
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcOpcode.RECV, r.opcode);
        assertTrue(r.hasImm());
        assertEquals(0xDEADBEEF, r.immData);
        assertEquals(10, r.byteLen);
        RcPair.assertFilled(mb.segment(), 0, 10, 3);
    }

    @Test
    void completionsReadInPlaceSayWhatWorkCompletionsSay() {
        Completions in = new Completions(4);
        p.b.qp.postRecv(new RecvWorkRequest().wrId(21).buffer(mb, 0, 64));
        p.b.qp.postRecv(new RecvWorkRequest().wrId(22).buffer(mb, 64, 64));
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND_WITH_IMM)
                .wrId(11)
                .immData(0xDEADBEEF)
                .buffer(ma, 0, 10)
                .signaled(true));
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND)
                .wrId(12)
                .buffer(ma, 0, 20)
                .signaled(true));
        WorkCompletion[] received = WorkCompletion.array(2);
        int got = 0;
        long deadline = p.backend.nanoTime() + 20_000_000_000L;
        for (int step = 0; got < 2 && p.backend.nanoTime() < deadline; step++) {
            p.backend.step(step);
            int n = p.b.cq.poll(in, 2 - got);
            for (int k = 0; k < n; k++) { // the accessors and copyTo agree
                WorkCompletion w = in.copyTo(k, received[got + k]);
                assertEquals(in.wrId(k), w.wrId);
                assertEquals(in.status(k), w.status);
                assertEquals(in.isSuccess(k), w.isSuccess());
                assertEquals(in.opcode(k), w.opcode);
                assertEquals(in.byteLen(k), w.byteLen);
                assertEquals(in.immData(k), w.immData);
                assertEquals(in.wcFlags(k), w.wcFlags);
                assertEquals(in.qpNum(k), w.qpNum);
            }
            got += n;
        }
        assertEquals(2, got, "two receives within 20 s");
        assertEquals(21, received[0].wrId);
        assertEquals(WcStatus.SUCCESS, received[0].status);
        assertEquals(WcOpcode.RECV, received[0].opcode);
        assertTrue(received[0].hasImm());
        assertEquals(0xDEADBEEF, received[0].immData, "host order, as WorkCompletion");
        assertEquals(10, received[0].byteLen);
        assertEquals(p.b.qp.qpNum(), received[0].qpNum);
        assertEquals(22, received[1].wrId);
        assertTrue(!received[1].hasImm());
        assertEquals(20, received[1].byteLen);
        WorkCompletion s1 = p.await(p.a.cq), s2 = p.await(p.a.cq);
        assertEquals(11, s1.wrId);
        assertEquals(12, s2.wrId);
        assertEquals(0, p.b.cq.poll(in, 4));
    }

    @ParameterizedTest(name = "write of {0} bytes")
    @ValueSource(ints = {0, 1, -1, -2, -3, MIB})
    void rdmaWrite(int code) {
        int size = code == -1 ? mtu() - 1 : code == -2 ? mtu() : code == -3 ? mtu() + 1 : code;
        RcPair.fill(ma.segment(), 0, size, 9);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .wrId(5)
                .buffer(ma, 0, size)
                .remote(mb.address() + 100, mb.rkey())
                .signaled(true));
        WorkCompletion s = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, s.status, s::toString);
        assertEquals(WcOpcode.RDMA_WRITE, s.opcode);
        RcPair.assertFilled(mb.segment(), 100, size, 9);
        p.none(p.b.cq, 50); // a plain write consumes no receive and makes no completion at the target
    }

    @Test
    void rdmaWriteWithImmediateConsumesAReceive() {
        p.b.qp.postRecv(new RecvWorkRequest().wrId(3).numSge(0));
        RcPair.fill(ma.segment(), 0, 3000, 1);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .immData(42)
                .buffer(ma, 0, 3000)
                .remote(mb.address(), mb.rkey())
                .signaled(true));
        WorkCompletion sent = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, sent.status, sent::toString);
        assertEquals(WcOpcode.RDMA_WRITE, sent.opcode);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, r.status, r::toString);
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
        assertEquals(42, r.immData);
        assertTrue(r.hasImm());
        assertEquals(3000, r.byteLen);
        RcPair.assertFilled(mb.segment(), 0, 3000, 1);
    }

    @Test
    void rdmaWriteWithImmediateWaitsForAReceive() {
        RcPair.fill(ma.segment(), 0, 3000, 4);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .wrId(1)
                .immData(5)
                .buffer(ma, 0, 3000)
                .remote(mb.address(), mb.rkey())
                .signaled(true));
        p.none(p.a.cq, 50); // no receive yet: the responder answers "receiver not ready" and the sender tries again
        p.b.qp.postRecv(new RecvWorkRequest().wrId(2).numSge(0));
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(2, r.wrId);
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
        assertEquals(5, r.immData);
        assertEquals(3000, r.byteLen);
        RcPair.assertFilled(mb.segment(), 0, 3000, 4);
    }

    @ParameterizedTest(name = "read of {0} bytes")
    @ValueSource(ints = {0, 1, -1, -2, -3, MIB})
    void rdmaRead(int code) {
        int size = code == -1 ? mtu() - 1 : code == -2 ? mtu() : code == -3 ? mtu() + 1 : code;
        RcPair.fill(mb.segment(), 8, size, 5);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.RDMA_READ)
                .wrId(9)
                .buffer(ma, 16, size)
                .remote(mb.address() + 8, mb.rkey())
                .signaled(true));
        WorkCompletion s = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, s.status, s::toString);
        assertEquals(WcOpcode.RDMA_READ, s.opcode);
        assertEquals(size, s.byteLen);
        RcPair.assertFilled(ma.segment(), 16, size, 5);
        p.none(p.b.cq, 50); // the target side sees nothing
    }

    @Test
    void atomics() {
        mb.segment().set(ValueLayout.JAVA_LONG, 64, 1000);
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .buffer(ma, 0, 8)
                .atomic(mb.address() + 64, mb.rkey(), 5, 0)
                .signaled(true));
        WorkCompletion f = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, f.status, f::toString);
        assertEquals(WcOpcode.FETCH_ADD, f.opcode);
        assertEquals(8, f.byteLen);
        assertEquals(1000, ma.segment().get(ValueLayout.JAVA_LONG, 0));
        assertEquals(1005, mb.segment().get(ValueLayout.JAVA_LONG, 64));

        // compare fails: nothing swapped, the current value returned
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .buffer(ma, 8, 8)
                .atomic(mb.address() + 64, mb.rkey(), 1, 77)
                .signaled(true));
        assertEquals(WcOpcode.COMP_SWAP, p.await(p.a.cq).opcode);
        assertEquals(1005, ma.segment().get(ValueLayout.JAVA_LONG, 8));
        assertEquals(1005, mb.segment().get(ValueLayout.JAVA_LONG, 64));
        // compare matches: swapped
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .buffer(ma, 8, 8)
                .atomic(mb.address() + 64, mb.rkey(), 1005, 77)
                .signaled(true));
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        assertEquals(1005, ma.segment().get(ValueLayout.JAVA_LONG, 8));
        assertEquals(77, mb.segment().get(ValueLayout.JAVA_LONG, 64));
    }

    @Test
    void misalignedAtomicIsAnInvalidRequest() {
        SendWorkRequest misaligned = new SendWorkRequest()
                .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .buffer(ma, 0, 8)
                .atomic(mb.address() + 4, mb.rkey(), 5, 0)
                .signaled(true);
        if (p.isRxe()) { // Linux 6.1's rxe refuses it at post time (EINVAL) instead of sending it
            assertThrows(PostException.class, () -> p.a.qp.postSend(misaligned));
            return;
        }
        p.a.qp.postSend(misaligned);
        assertEquals(WcStatus.REM_INV_REQ_ERR, p.await(p.a.cq).status);
    }

    @Test
    void sqSigAllSignalsEveryRequest() {
        try (RcPair q = Suite.pair().qpA(b -> b.sqSigAll(true)).build()) {
            MemoryRegion src = q.a.mrAll(64), dst = q.b.mrAll(64);
            q.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            q.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).wrId(5).buffer(src, 0, 60)); // not SIGNALED
            WorkCompletion c = q.await(q.a.cq);
            assertEquals(5, c.wrId);
            assertEquals(WcStatus.SUCCESS, c.status, c::toString);
            assertEquals(60, q.await(q.b.cq).byteLen);
        }
    }

    @Test
    void fencedSendWaitsForReadsAndReadsAreLimitedByMaxRdAtomic() {
        try (RcPair q = Suite.pair().maxRdAtomic(1).maxDestRdAtomic(1).build()) {
            MemoryRegion remote = q.b.mrAll(64 * 1024), local = q.a.mrAll(64 * 1024), rb = q.b.mrAll(64);
            RcPair.fill(remote.segment(), 0, 64 * 1024, 8);
            q.b.qp.postRecv(new RecvWorkRequest().wrId(9).buffer(rb, 0, 64));
            SendWorkRequest r1 = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 0, 32 * 1024)
                    .remote(remote.address(), remote.rkey());
            SendWorkRequest r2 = new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 32 * 1024, 32 * 1024)
                    .remote(remote.address() + 32 * 1024, remote.rkey());
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .flag(SendFlag.FENCE, true)
                    .buffer(local, 0, 64);
            r1.next(r2);
            r2.next(s);
            q.a.qp.postSend(r1);
            assertEquals(1, q.await(q.a.cq).wrId);
            assertEquals(2, q.await(q.a.cq).wrId);
            assertEquals(3, q.await(q.a.cq).wrId);
            RcPair.assertFilled(local.segment(), 0, 64 * 1024, 8);
            // the fenced SEND carried what the READ had fetched
            WorkCompletion rc = q.await(q.b.cq);
            assertEquals(64, rc.byteLen);
            RcPair.assertFilled(rb.segment(), 0, 64, 8);
        }
    }

    @Test
    void manyMessagesPipelinedAtTheLargestMtu() {
        try (RcPair q = Suite.pair().mtu(Mtu.MTU_4096).build()) {
            int n = 200, size = 10_000;
            MemoryRegion src = q.a.mrAll(size), dst = q.b.mrAll((long) size * 8);
            RcPair.fill(src.segment(), 0, size, 4);
            RecvWorkRequest r = new RecvWorkRequest();
            SendWorkRequest s =
                    new SendWorkRequest().opcode(WrOpcode.SEND).signaled(true).buffer(src, 0, size);
            int posted = 0, sent = 0, recvd = 0, sendDone = 0;
            for (int i = 0; i < 8; i++) q.b.qp.postRecv(r.wrId(posted++).buffer(dst, (long) (i % 8) * size, size));
            WorkCompletion[] wc = WorkCompletion.array(16);
            long end = q.backend.nanoTime() + 20_000_000_000L;
            for (int step = 0; (recvd < n || sendDone < n) && q.backend.nanoTime() < end; step++) {
                if (sent < n && sent - sendDone < 16) q.a.qp.postSend(s.wrId(sent++));
                int k = q.a.cq.poll(wc);
                for (int i = 0; i < k; i++) {
                    assertEquals(WcStatus.SUCCESS, wc[i].status, wc[i]::toString);
                    sendDone++;
                }
                k = q.b.cq.poll(wc);
                for (int i = 0; i < k; i++) {
                    assertEquals(WcStatus.SUCCESS, wc[i].status, wc[i]::toString);
                    assertEquals(size, wc[i].byteLen);
                    recvd++;
                    q.b.qp.postRecv(r.wrId(posted).buffer(dst, (long) (posted % 8) * size, size));
                    posted++;
                }
                q.backend.step(step);
            }
            assertEquals(n, recvd);
            assertEquals(n, sendDone);
            RcPair.assertFilled(dst.segment(), 0, size, 4);
        }
    }

    @Test
    void severalSgesGatherAndScatter() {
        RcPair.fill(ma.segment(), 0, 100, 1);
        RcPair.fill(ma.segment(), 1000, 200, 2);
        RcPair.fill(ma.segment(), 5000, 3000, 3);
        SendWorkRequest s =
                new SendWorkRequest(3).opcode(WrOpcode.SEND).signaled(true).numSge(3);
        s.sge(0).set(ma, 0, 100);
        s.sge(1).set(ma, 1000, 200);
        s.sge(2).set(ma, 5000, 3000);
        RecvWorkRequest r = new RecvWorkRequest(2).numSge(2);
        r.sge(0).set(mb, 0, 150);
        r.sge(1).set(mb, 10000, 4000);
        p.b.qp.postRecv(r);
        p.a.qp.postSend(s);
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        WorkCompletion wc = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
        assertEquals(3300, wc.byteLen);
        // first 150 bytes into sge 0, the remaining 3150 into sge 1
        RcPair.assertFilled(mb.segment(), 0, 100, 1);
        RcPair.assertFilled(mb.segment(), 100, 50, 2);
        RcPair.assertFilled(mb.segment(), 10000, 150, (byte) (2 + 50 * 31));
        RcPair.assertFilled(mb.segment(), 10150, 3000, 3);
    }

    @Test
    void chainWithSelectiveSignallingCompletesInOrder() {
        SendWorkRequest[] chain = new SendWorkRequest[5];
        for (int i = 0; i < chain.length; i++) {
            RcPair.fill(ma.segment(), i * 100, 100, i);
            chain[i] = new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(i)
                    .buffer(ma, i * 100, 100)
                    .remote(mb.address() + i * 100, mb.rkey())
                    .signaled(i == 2 || i == 4);
            if (i > 0) chain[i - 1].next = chain[i];
        }
        p.a.qp.postSend(chain[0]);
        assertEquals(2, p.await(p.a.cq).wrId);
        assertEquals(4, p.await(p.a.cq).wrId);
        p.none(p.a.cq, 50);
        for (int i = 0; i < chain.length; i++) RcPair.assertFilled(mb.segment(), i * 100, 100, i);
    }

    @Test
    void aPreparedSendPostsItsSnapshotAgain() {
        // a chain of two writes, the second signalled, prepared once; changing the requests afterwards changes nothing
        SendWorkRequest second = new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .wrId(2)
                .buffer(ma, 100, 100)
                .remote(mb.address() + 100, mb.rkey())
                .signaled(true);
        SendWorkRequest first = new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .wrId(1)
                .buffer(ma, 0, 100)
                .remote(mb.address(), mb.rkey())
                .next(second);
        PreparedSend ps = p.a.qp.prepareSend(first);
        assertEquals(p.a.qp, ps.qp());
        first.remote(mb.address() + 5000, mb.rkey());
        second.wrId(99).signaled(false);
        for (int round = 1; round <= 3; round++) {
            RcPair.fill(ma.segment(), 0, 200, round);
            if (round == 2) ps.post(50);
            else ps.post();
            assertEquals(2, p.await(p.a.cq).wrId, "the second request keeps its prepared wr_id and flags");
            RcPair.assertFilled(mb.segment(), 0, 200, round);
        }
        // post(wrId) names the first request's completion
        SendWorkRequest alone = new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .wrId(3)
                .buffer(ma, 0, 8)
                .remote(mb.address(), mb.rkey())
                .signaled(true);
        PreparedSend single = p.a.qp.prepareSend(alone);
        single.post(70);
        assertEquals(70, p.await(p.a.cq).wrId);
        single.post();
        assertEquals(3, p.await(p.a.cq).wrId, "post() keeps the prepared wr_id");
        p.none(p.a.cq, 50);
        PostException bind = assertThrows(
                PostException.class, () -> p.a.qp.prepareSend(new SendWorkRequest().opcode(WrOpcode.BIND_MW)));
        assertTrue(bind.getMessage().contains("BIND_MW"), bind.getMessage());
    }

    @Test
    void receivesCompleteInPostedOrderAndChainsOfReceives() {
        RecvWorkRequest r0 = new RecvWorkRequest().wrId(100).buffer(mb, 0, 64);
        RecvWorkRequest r1 = new RecvWorkRequest().wrId(101).buffer(mb, 64, 64);
        r0.next = r1;
        p.b.qp.postRecv(r0);
        SendWorkRequest s =
                new SendWorkRequest().opcode(WrOpcode.SEND).buffer(ma, 0, 8).signaled(true);
        p.a.qp.postSend(s);
        p.a.qp.postSend(s.wrId(2));
        assertEquals(100, p.await(p.b.cq).wrId);
        assertEquals(101, p.await(p.b.cq).wrId);
        p.await(p.a.cq);
        p.await(p.a.cq);
    }

    @Test
    void inlineSendNeedsNoRegisteredBuffer() {
        int max = p.a.qp.cap().maxInlineData();
        org.junit.jupiter.api.Assumptions.assumeTrue(max > 0, "the device grants no inline data");
        RcPair.fill(ma.segment(), 0, Math.min(max, 32), 4);
        p.b.qp.postRecv(new RecvWorkRequest().buffer(mb, 0, 64));
        SendWorkRequest s = new SendWorkRequest()
                .opcode(WrOpcode.SEND)
                .buffer(ma, 0, Math.min(max, 32))
                .signaled(true);
        s.flags.add(SendFlag.INLINE);
        s.sge(0).lkey = 0; // inline data is copied at post time: the key is not looked at
        p.a.qp.postSend(s);
        ma.segment().fill((byte) 0); // changing the buffer after the post must not matter
        assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(Math.min(max, 32), r.byteLen);
        RcPair.assertFilled(mb.segment(), 0, Math.min(max, 32), 4);
    }
}
