package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
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
            RcPair.assertFilled(mb.segment(), 0, 10, 6);
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
    void movingToErrorFlushesPostedWork() {
        try (RcPair p = Suite.pair().build()) {
            MemoryRegion mb = p.a.mrAll(4096);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(mb, 0, 64));
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(mb, 64, 64));
            p.b.qp.modify(new QpAttr().state(QpState.ERR));
            WorkCompletion f1 = p.await(p.b.cq);
            assertEquals(1, f1.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f1.status);
            WorkCompletion f2 = p.await(p.b.cq);
            assertEquals(2, f2.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f2.status);
            // work posted in ERR is flushed too, never executed (rxe 6.1 leaves it queued until the QP is reset)
            if (p.isRxe()) return;
            p.b.qp.postRecv(new RecvWorkRequest().wrId(3).buffer(mb, 0, 64));
            WorkCompletion f3 = p.await(p.b.cq);
            assertEquals(3, f3.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f3.status);
        }
    }
}
