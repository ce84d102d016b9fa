package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Bad requests end in the error completion the spec names, never touch memory they may not, and flush what follows.
 */
@Timeout(60)
class ErrorsTest {
    static final EnumSet<Access> QP_ALL =
            EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);

    @Test
    void wrongRkeyIsRemoteAccessErrorAndLeavesMemoryAlone() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            ma.segment().fill((byte) 1);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(1)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey() ^ 0x40404000)
                    .signaled(true));
            // a second request behind the failed one is flushed
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(2)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(1, wc.wrId);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status, wc::toString);
            WorkCompletion flushed = p.await(p.a.cq);
            assertEquals(2, flushed.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status);
            assertEquals(QpState.ERR, p.a.qp.state());
            assertEquals(0, mb.segment().get(ValueLayout.JAVA_LONG, 0), "the target memory must be untouched");
            // a class C error moves the responder to ERR too, after it sent the NAK
            p.awaitState(p.b.qp, QpState.ERR);
        }
    }

    /** Posts {@code bad} and a WRITE behind it: the first fails with {@code want}, the second is flushed, A is in ERR. */
    private static void expectRemoteError(RcPair p, SendWorkRequest bad, WcStatus want, MemoryRegion untouched) {
        MemoryRegion lb = p.a.mrAll(64);
        p.a.qp.postSend(bad.wrId(1).signaled(true));
        p.a.qp.postSend(new SendWorkRequest()
                .opcode(WrOpcode.SEND)
                .wrId(2)
                .buffer(lb, 0, 8)
                .signaled(true));
        WorkCompletion wc = p.await(p.a.cq);
        assertEquals(1, wc.wrId);
        assertEquals(want, wc.status, wc::toString);
        WorkCompletion flushed = p.await(p.a.cq);
        assertEquals(2, flushed.wrId);
        assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status);
        assertEquals(QpState.ERR, p.a.qp.state());
        if (untouched != null)
            for (long i = 0; i < untouched.length(); i++)
                assertEquals(
                        0, untouched.segment().get(ValueLayout.JAVA_BYTE, i), "the target memory must be untouched");
    }

    @Test
    void deregisteredRegionIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion src = p.a.mrAll(64), gone = p.b.mrAll(64);
            long addr = gone.address();
            int rkey = gone.rkey();
            gone.close();
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(1)
                    .buffer(src, 0, 8)
                    .remote(addr, rkey)
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status);
        }
    }

    @Test
    void outOfBoundsWriteIsRemoteAccessErrorAndLeavesMemoryAlone() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(128), mb = p.a.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(ma, 0, 65)
                            .remote(mb.address(), mb.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    mb);
        }
    }

    @Test
    void readStartingBeforeTheRegionIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(128), mb = p.a.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .opcode(WrOpcode.RDMA_READ)
                            .buffer(ma, 0, 8)
                            .remote(mb.address() - 8, mb.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    null);
        }
    }

    @Test
    void missingRemoteReadOnTheRegionIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(64), writeOnly = p.a.mr(64, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .opcode(WrOpcode.RDMA_READ)
                            .buffer(ma, 0, 8)
                            .remote(writeOnly.address(), writeOnly.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    null);
        }
    }

    @Test
    void regionOfAnotherProtectionDomainIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            try (ProtectionDomain other = p.b.ctx.allocPd()) {
                MemoryRegion foreign = other.registerMemory(
                        p.b.arena.allocate(64, 64), Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
                expectRemoteError(
                        p,
                        new SendWorkRequest()
                                .opcode(WrOpcode.RDMA_WRITE)
                                .buffer(p.a.mrAll(64), 0, 8)
                                .remote(foreign.address(), foreign.rkey()),
                        WcStatus.REM_ACCESS_ERR,
                        foreign);
                foreign.close();
            }
        }
    }

    @Test
    void outOfBoundsReadIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_READ)
                    .buffer(ma, 0, 128)
                    .remote(mb.address() + 4096 - 64, mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status);
        }
    }

    @Test
    void missingRemoteWriteOnTheRegionIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096);
            MemoryRegion readOnly = p.a.mr(4096, Access.LOCAL_WRITE, Access.REMOTE_READ);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(readOnly.address(), readOnly.rkey())
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status);
            assertEquals(0, readOnly.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void missingRemoteAtomicOnTheRegionIsRemoteAccessError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096);
            MemoryRegion noAtomic = p.a.mr(4096, Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .buffer(ma, 0, 8)
                    .atomic(noAtomic.address(), noAtomic.rkey(), 1, 0)
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status);
            assertEquals(0, noAtomic.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void remoteAccessNotEnabledOnTheTargetQp() {
        try (RcPair p = Suite.pair().access(Access.LOCAL_WRITE).build()) { // QPs grant no remote access
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            WcStatus s = p.await(p.a.cq).status;
            // the spec allows either name for an access the QP does not permit
            if (s != WcStatus.REM_ACCESS_ERR && s != WcStatus.REM_INV_REQ_ERR) assertEquals(WcStatus.REM_ACCESS_ERR, s);
            assertEquals(0, mb.segment().get(ValueLayout.JAVA_LONG, 0), "the target memory must be untouched");
        }
    }

    @Test
    void badLkeyIsLocalProtectionError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            SendWorkRequest s = new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true);
            s.sge(0).lkey ^= 0x10101000;
            p.a.qp.postSend(s);
            // rxe 6.1 reports a bad lkey as LOC_QP_OP_ERR
            assertEquals(p.isRxe() ? WcStatus.LOC_QP_OP_ERR : WcStatus.LOC_PROT_ERR, p.await(p.a.cq).status);
            assertEquals(QpState.ERR, p.a.qp.state());
        }
    }

    @Test
    void readIntoMemoryWithoutLocalWriteIsLocalProtectionError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion readOnly = p.a.mr(64), mb = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_READ)
                    .buffer(readOnly, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.LOC_PROT_ERR, p.await(p.a.cq).status);
        }
    }

    @Test
    void sgeBeyondItsRegionIsLocalProtectionError() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(8192);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 4000, 200)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.LOC_PROT_ERR, p.await(p.a.cq).status);
        }
    }

    @Test
    void messageLargerThanTheReceiveBufferIsLocalLengthErrorAtTheReceiver() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(5).buffer(mb, 0, 16));
            p.b.qp.postRecv(new RecvWorkRequest().wrId(6).buffer(mb, 16, 16));
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 100)
                    .signaled(true));
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(5, r.wrId);
            // rxe 6.1 completes the receive with LOC_QP_OP_ERR instead of the spec's LOC_LEN_ERR
            assertEquals(p.isRxe() ? WcStatus.LOC_QP_OP_ERR : WcStatus.LOC_LEN_ERR, r.status, r::toString);
            // the sender learns it from the NAK: invalid request (spec); rxe 6.1 NAKs it as a remote operational error
            assertEquals(p.isRxe() ? WcStatus.REM_OP_ERR : WcStatus.REM_INV_REQ_ERR, p.await(p.a.cq).status);
            WorkCompletion flushed = p.await(p.b.cq); // the receiver went to ERR: the receive behind is flushed
            assertEquals(6, flushed.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status);
        }
    }

    @Test
    void noReceivePostedAndNoRnrRetriesIsRnrRetryExceeded() {
        try (RcPair p = Suite.pair().rnrRetry(0).minRnrTimer(1).build()) {
            MemoryRegion ma = p.a.mrAll(4096);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 10)
                    .signaled(true));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status, wc::toString);
            assertEquals(QpState.ERR, p.a.qp.state());
        }
    }

    @Test
    void rnrRetriesWaitForALateReceive() throws InterruptedException {
        // rnr_retry 7 = retry forever, min RNR timer 0.01 ms
        try (RcPair p = Suite.pair().minRnrTimer(1).build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            RcPair.fill(ma.segment(), 0, 10, 6);
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 10)
                    .signaled(true));
            p.pass(200); // the sender is being told "receiver not ready" meanwhile
            p.b.qp.postRecv(new RecvWorkRequest().wrId(9).buffer(mb, 0, 64));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status);
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(9, r.wrId);
            assertEquals(10, r.byteLen);
            RcPair.assertFilled(mb.segment(), 0, 10, 6);
        }
    }

    @Test
    void rnrRetriesRunOutAfterWaitingTheRnrTimerEachTime() {
        // rnr_retry 2, min RNR timer 14 = 1.28 ms: three tries, the RNR timer waited between them
        try (RcPair p = Suite.pair().rnrRetry(2).minRnrTimer(14).build()) {
            MemoryRegion ma = p.a.mrAll(64);
            long t0 = p.backend.nanoTime();
            p.a.qp.postSend(
                    new SendWorkRequest().opcode(WrOpcode.SEND).buffer(ma, 0, 8).signaled(true));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, p.await(p.a.cq).status);
            long waited = p.backend.nanoTime() - t0;
            assertTrue(waited >= 2 * 1_280_000L, "waited " + waited + " ns: the RNR timer between retries");
        }
    }

    @Test
    void peerGoneIsRetryExceeded() {
        try (RcPair p = Suite.pair().retryCnt(1).build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            // the peer QP leaves RTR/RTS: it answers nothing any more
            p.b.qp.modify(new QpAttr().state(QpState.RESET));
            p.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.RETRY_EXC_ERR, p.await(p.a.cq).status);
        }
    }

    @Test
    void destroyedPeerIsRetryExceededAfterEveryRetry() {
        // timeout 12 = 16.8 ms, retry_cnt 2: the first try and two retries unanswered
        try (RcPair p = Suite.pair().timeout(12).retryCnt(2).build()) {
            MemoryRegion ma = p.a.mrAll(64);
            Long before = p.a.ctx.counters().get("retransmits");
            p.b.qp.close();
            long t0 = p.backend.nanoTime();
            p.a.qp.postSend(
                    new SendWorkRequest().opcode(WrOpcode.SEND).buffer(ma, 0, 8).signaled(true));
            assertEquals(WcStatus.RETRY_EXC_ERR, p.await(p.a.cq).status);
            long ms = (p.backend.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 3 * 16, "took " + ms + " ms; at least timeout x (retry_cnt + 1) = 50 ms");
            assertTrue(ms < 3000, "took " + ms + " ms");
            Long after = p.a.ctx.counters().get("retransmits"); // the software device counts them; rxe need not
            if (before != null && after != null) assertTrue(after - before >= 2, "retransmitted: " + (after - before));
        }
    }

    @Test
    void movingToErrorFlushesPostedWork() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion mb = p.a.mrAll(4096);
            for (int i = 1; i <= 5; i++)
                p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(mb, 64L * i, 64));
            p.b.qp.modify(new QpAttr().state(QpState.ERR));
            for (int i = 1; i <= 5; i++) { // in the order posted
                WorkCompletion f = p.await(p.b.cq);
                assertEquals(i, f.wrId);
                assertEquals(WcStatus.WR_FLUSH_ERR, f.status);
            }
            // work posted in ERR is flushed too, never executed (rxe 6.1 leaves it queued until the QP is reset)
            if (!p.isRxe()) {
                p.b.qp.postRecv(new RecvWorkRequest().wrId(6).buffer(mb, 0, 64));
                WorkCompletion f = p.await(p.b.cq);
                assertEquals(6, f.wrId);
                assertEquals(WcStatus.WR_FLUSH_ERR, f.status);
                p.b.qp.postSend(
                        new SendWorkRequest().opcode(WrOpcode.SEND).wrId(7).buffer(mb, 0, 8));
                f = p.await(p.b.cq);
                assertEquals(7, f.wrId);
                assertEquals(WcStatus.WR_FLUSH_ERR, f.status);
            }
            // and from ERR back to RESET
            p.b.qp.modify(new QpAttr().state(QpState.RESET));
            assertEquals(QpState.RESET, p.b.qp.state());
        }
    }
}
