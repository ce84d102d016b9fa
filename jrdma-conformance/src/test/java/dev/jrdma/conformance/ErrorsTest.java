package dev.jrdma.conformance;

import static dev.jrdma.conformance.Pair.one;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
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
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            ma.segment().fill((byte) 1);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(1)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey() ^ 0x40404000)
                    .signaled(true));
            // a second request behind the failed one is flushed
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(2)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            WorkCompletion wc = one(p.cqA);
            assertEquals(1, wc.wrId);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status, wc::toString);
            WorkCompletion flushed = one(p.cqA);
            assertEquals(2, flushed.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status);
            assertEquals(QpState.ERR, p.a.state());
            assertEquals(0, mb.segment().get(ValueLayout.JAVA_LONG, 0), "the target memory must be untouched");
        }
    }

    @Test
    void outOfBoundsReadIsRemoteAccessError() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_READ)
                    .buffer(ma, 0, 128)
                    .remote(mb.address() + 4096 - 64, mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, one(p.cqA).status);
        }
    }

    @Test
    void missingRemoteWriteOnTheRegionIsRemoteAccessError() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096);
            MemoryRegion readOnly = p.mr(4096, Access.LOCAL_WRITE, Access.REMOTE_READ);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(readOnly.address(), readOnly.rkey())
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, one(p.cqA).status);
            assertEquals(0, readOnly.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void missingRemoteAtomicOnTheRegionIsRemoteAccessError() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096);
            MemoryRegion noAtomic = p.mr(4096, Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .buffer(ma, 0, 8)
                    .atomic(noAtomic.address(), noAtomic.rkey(), 1, 0)
                    .signaled(true));
            assertEquals(WcStatus.REM_ACCESS_ERR, one(p.cqA).status);
            assertEquals(0, noAtomic.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void remoteAccessNotEnabledOnTheTargetQp() {
        try (Pair p = new Pair()) {
            p.connect(7, 7, 12, Mtu.MTU_1024, EnumSet.of(Access.LOCAL_WRITE)); // QPs grant no remote access
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            WcStatus s = one(p.cqA).status;
            // the spec allows either name for an access the QP does not permit
            if (s != WcStatus.REM_ACCESS_ERR && s != WcStatus.REM_INV_REQ_ERR) assertEquals(WcStatus.REM_ACCESS_ERR, s);
        }
    }

    @Test
    void badLkeyIsLocalProtectionError() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            SendWorkRequest s = new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 64)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true);
            s.sge(0).lkey ^= 0x10101000;
            p.a.postSend(s);
            // rxe 6.1 reports a bad lkey as LOC_QP_OP_ERR
            assertEquals(p.isRxe() ? WcStatus.LOC_QP_OP_ERR : WcStatus.LOC_PROT_ERR, one(p.cqA).status);
        }
    }

    @Test
    void sgeBeyondItsRegionIsLocalProtectionError() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(8192);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 4000, 200)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.LOC_PROT_ERR, one(p.cqA).status);
        }
    }

    @Test
    void messageLargerThanTheReceiveBufferIsLocalLengthErrorAtTheReceiver() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            p.b.postRecv(new RecvWorkRequest().wrId(5).buffer(mb, 0, 16));
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 100)
                    .signaled(true));
            WorkCompletion r = one(p.cqB);
            assertEquals(5, r.wrId);
            // rxe 6.1 completes the receive with LOC_QP_OP_ERR instead of the spec's LOC_LEN_ERR
            assertEquals(p.isRxe() ? WcStatus.LOC_QP_OP_ERR : WcStatus.LOC_LEN_ERR, r.status, r::toString);
            // the sender learns it from the NAK: invalid request (spec); rxe 6.1 NAKs it as a remote operational error
            assertEquals(p.isRxe() ? WcStatus.REM_OP_ERR : WcStatus.REM_INV_REQ_ERR, one(p.cqA).status);
        }
    }

    @Test
    void noReceivePostedAndNoRnrRetriesIsRnrRetryExceeded() {
        try (Pair p = new Pair()) {
            p.connect(7, 0, 1, Mtu.MTU_1024, QP_ALL);
            MemoryRegion ma = p.mrAll(4096);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 10)
                    .signaled(true));
            WorkCompletion wc = one(p.cqA);
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status, wc::toString);
            assertEquals(QpState.ERR, p.a.state());
        }
    }

    @Test
    void rnrRetriesWaitForALateReceive() throws InterruptedException {
        try (Pair p = new Pair()) {
            p.connect(7, 7, 1, Mtu.MTU_1024, QP_ALL); // rnr_retry 7 = retry forever, min RNR timer 0.01 ms
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            Pair.fill(ma.segment(), 0, 10, 6);
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(ma, 0, 10)
                    .signaled(true));
            Thread.sleep(200); // the sender is being told "receiver not ready" meanwhile
            p.b.postRecv(new RecvWorkRequest().wrId(9).buffer(mb, 0, 64));
            assertEquals(WcStatus.SUCCESS, one(p.cqA).status);
            WorkCompletion r = one(p.cqB);
            assertEquals(9, r.wrId);
            Pair.assertFilled(mb.segment(), 0, 10, 6);
        }
    }

    @Test
    void peerGoneIsRetryExceeded() {
        try (Pair p = new Pair()) {
            p.connect(1, 7, 12, Mtu.MTU_1024, QP_ALL);
            MemoryRegion ma = p.mrAll(4096), mb = p.mrAll(4096);
            // the peer QP leaves RTR/RTS: it answers nothing any more
            p.b.modify(new QpAttr().state(QpState.RESET));
            p.a.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertEquals(WcStatus.RETRY_EXC_ERR, one(p.cqA).status);
        }
    }

    @Test
    void movingToErrorFlushesPostedWork() {
        try (Pair p = new Pair().connect()) {
            MemoryRegion mb = p.mrAll(4096);
            p.b.postRecv(new RecvWorkRequest().wrId(1).buffer(mb, 0, 64));
            p.b.postRecv(new RecvWorkRequest().wrId(2).buffer(mb, 64, 64));
            p.b.modify(new QpAttr().state(QpState.ERR));
            WorkCompletion f1 = one(p.cqB);
            assertEquals(1, f1.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f1.status);
            WorkCompletion f2 = one(p.cqB);
            assertEquals(2, f2.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f2.status);
            // work posted in ERR is flushed too, never executed (rxe 6.1 leaves it queued until the QP is reset)
            if (p.isRxe()) return;
            p.b.postRecv(new RecvWorkRequest().wrId(3).buffer(mb, 0, 64));
            WorkCompletion f3 = one(p.cqB);
            assertEquals(3, f3.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, f3.status);
        }
    }
}
