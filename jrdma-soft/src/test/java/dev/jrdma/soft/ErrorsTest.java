package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

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
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Remote and local errors, RNR, retry exhaustion and flushing. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ErrorsTest {

    /** Posts {@code bad}, then a SEND that must be flushed; checks the statuses and that the QP went to ERR. */
    private static void expectRemoteError(RcPair p, SendWorkRequest bad, WcStatus want, MemoryRegion untouched) {
        MemoryRegion lb = p.a.mrAll(64);
        bad.signaled(true);
        SendWorkRequest after = new SendWorkRequest()
                .wrId(999)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(lb, 0, 8);
        bad.next(after);
        p.a.qp.postSend(bad);
        WorkCompletion c = poll(p.a.cq);
        assertEquals(want, c.status, c::toString);
        assertEquals(bad.wrId, c.wrId);
        WorkCompletion f = poll(p.a.cq);
        assertEquals(WcStatus.WR_FLUSH_ERR, f.status);
        assertEquals(999, f.wrId);
        assertEquals(QpState.ERR, p.a.qp.state());
        if (untouched != null) {
            for (long i = 0; i < untouched.length(); i++)
                assertEquals(
                        0,
                        untouched.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, i),
                        "target memory was touched");
        }
    }

    @Test
    void wrongRkeyIsARemoteAccessError() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            fill(src.segment(), 64, 1);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(1)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, 0, 64)
                            .remote(dst.address(), dst.rkey() ^ 0x1),
                    WcStatus.REM_ACCESS_ERR,
                    dst);
            // the responder follows rxe: a class C error moves it to ERR. It sends the NAK first, and the requester's
            // poll may complete on its own thread before the responder's thread has moved on: wait for it, boundedly
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (p.b.qp.state() != QpState.ERR && System.nanoTime() < deadline) Thread.onSpinWait();
            assertEquals(QpState.ERR, p.b.qp.state());
        }
    }

    @Test
    void outOfBoundsWriteAndRead() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(128), dst = p.b.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(2)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, 0, 65)
                            .remote(dst.address(), dst.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    dst);
        }
        try (RcPair p = pair()) {
            MemoryRegion back = p.a.mrAll(128), dst = p.b.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(3)
                            .opcode(WrOpcode.RDMA_READ)
                            .buffer(back, 0, 8)
                            .remote(dst.address() - 8, dst.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    null);
        }
    }

    @Test
    void missingRightsOnTheRegion() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(64), ro = p.b.mr(64, Access.LOCAL_WRITE, Access.REMOTE_READ);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(4)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, 0, 8)
                            .remote(ro.address(), ro.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    ro);
        }
        try (RcPair p = pair()) {
            MemoryRegion back = p.a.mrAll(64), wo = p.b.mr(64, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(5)
                            .opcode(WrOpcode.RDMA_READ)
                            .buffer(back, 0, 8)
                            .remote(wo.address(), wo.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    null);
        }
        try (RcPair p = pair()) {
            MemoryRegion res = p.a.mrAll(64),
                    rw = p.b.mr(64, Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(6)
                            .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                            .buffer(res, 0, 8)
                            .atomic(rw.address(), rw.rkey(), 1, 0),
                    WcStatus.REM_ACCESS_ERR,
                    rw);
        }
    }

    @Test
    void missingRightsOnTheQueuePair() {
        try (RcPair p = pair(o -> o.access(Access.REMOTE_READ))) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(7)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, 0, 8)
                            .remote(dst.address(), dst.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    dst);
        }
    }

    @Test
    void regionOfAnotherProtectionDomain() {
        try (RcPair p = pair()) {
            ProtectionDomain other = p.b.ctx.allocPd();
            MemoryRegion foreign = other.registerMemory(
                    p.b.arena.allocate(64), Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            MemoryRegion src = p.a.mrAll(64);
            expectRemoteError(
                    p,
                    new SendWorkRequest()
                            .wrId(8)
                            .opcode(WrOpcode.RDMA_WRITE)
                            .buffer(src, 0, 8)
                            .remote(foreign.address(), foreign.rkey()),
                    WcStatus.REM_ACCESS_ERR,
                    foreign);
        }
    }

    @Test
    void localProtectionErrors() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(64);
            SendWorkRequest bad = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8);
            bad.sge(0).lkey ^= 0x100;
            p.a.qp.postSend(bad);
            assertEquals(WcStatus.LOC_PROT_ERR, poll(p.a.cq).status);
            assertEquals(QpState.ERR, p.a.qp.state());
        }
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 32, 33));
            assertEquals(WcStatus.LOC_PROT_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) { // READ into memory without LOCAL_WRITE
            MemoryRegion ro = p.a.mr(64), remote = p.b.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(ro, 0, 8)
                    .remote(remote.address(), remote.rkey()));
            assertEquals(WcStatus.LOC_PROT_ERR, poll(p.a.cq).status);
        }
    }

    @Test
    void receiveBufferTooSmall() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(4096), dst = p.b.mrAll(4096);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 1000));
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(dst, 1000, 1000));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(9)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 3000));
            WorkCompletion r = poll(p.b.cq);
            assertEquals(WcStatus.LOC_LEN_ERR, r.status, r::toString);
            assertEquals(1, r.wrId);
            WorkCompletion f = poll(p.b.cq);
            assertEquals(WcStatus.WR_FLUSH_ERR, f.status);
            assertEquals(2, f.wrId);
            assertEquals(WcStatus.REM_INV_REQ_ERR, poll(p.a.cq).status);
        }
    }

    @Test
    void closedArenaGivesAnErrorCompletionNotACrash() {
        try (RcPair p = pair()) {
            MemoryRegion src;
            try (Arena arena = Arena.ofShared()) { // closed while the region is still registered
                src = p.a.pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE);
            }
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 64));
            assertEquals(WcStatus.LOC_PROT_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) { // the target's arena goes away
            MemoryRegion dst;
            try (Arena arena = Arena.ofShared()) {
                dst = p.b.pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            }
            MemoryRegion src = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey()));
            WorkCompletion c = poll(p.a.cq);
            assertNotEquals(WcStatus.SUCCESS, c.status);
        }
    }

    @Test
    void rnrWithoutRetriesFails() {
        try (RcPair p = pair(o -> o.rnrRetry(0))) {
            MemoryRegion src = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, poll(p.a.cq).status);
            assertEquals(QpState.ERR, p.a.qp.state());
        }
    }

    @Test
    void rnrRetriesUntilAReceiveIsPosted() throws InterruptedException {
        try (RcPair p = pair(o -> {
            o.rnrRetry(7); // forever
            o.minRnrTimer(3); // 0.03 ms
        })) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            fill(src.segment(), 64, 3);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 64));
            assertNoCompletion(p.a.cq, 100);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(dst, 0, 64));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertEquals(64, poll(p.b.cq).byteLen);
            assertFilled(dst.segment(), 0, 64, 3);
        }
        try (RcPair p = pair(o -> {
            o.rnrRetry(2);
            o.minRnrTimer(14); // 1.28 ms: three tries take ~4 ms
        })) {
            MemoryRegion src = p.a.mrAll(64);
            long t0 = System.nanoTime();
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, poll(p.a.cq).status);
            assertTrue(System.nanoTime() - t0 >= 2 * 1_280_000L, "waited the RNR timer between retries");
        }
    }

    @Test
    void retryExhaustedWhenThePeerQpIsGone() {
        try (RcPair p = pair(o -> {
            o.timeout(12); // 16.8 ms
            o.retryCnt(2);
        })) {
            MemoryRegion src = p.a.mrAll(64);
            p.b.qp.close();
            long t0 = System.nanoTime();
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            WorkCompletion c = poll(p.a.cq, 5000);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(WcStatus.RETRY_EXC_ERR, c.status);
            assertTrue(ms >= 3 * 16, "took " + ms + " ms; expected at least timeout x (retry_cnt + 1) = 50 ms");
            assertTrue(ms < 3000, "took " + ms + " ms");
            assertTrue(p.a.ctx instanceof SoftContext sc && sc.stats().retransmits() >= 2);
        }
    }

    @Test
    void moveToErrFlushesEverything() {
        try (RcPair p = pair()) {
            MemoryRegion buf = p.b.mrAll(64);
            for (int i = 0; i < 5; i++)
                p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(buf, 0, 64));
            p.b.qp.modify(new QpAttr().state(QpState.ERR));
            for (int i = 0; i < 5; i++) {
                WorkCompletion c = poll(p.b.cq);
                assertEquals(WcStatus.WR_FLUSH_ERR, c.status);
                assertEquals(i, c.wrId);
            }
            // posting in ERR completes at once with WR_FLUSH_ERR
            p.b.qp.postSend(new SendWorkRequest().wrId(42).opcode(WrOpcode.SEND).buffer(buf, 0, 8));
            WorkCompletion c = poll(p.b.cq);
            assertEquals(WcStatus.WR_FLUSH_ERR, c.status);
            assertEquals(42, c.wrId);
            // back to RESET and up again works
            p.b.qp.modify(new QpAttr().state(QpState.RESET));
            assertEquals(QpState.RESET, p.b.qp.state());
        }
    }

    @Test
    void postingInTheWrongStateIsRefused() {
        try (RcPair p = pair()) {
            p.a.qp.modify(new QpAttr().state(QpState.RESET));
            MemoryRegion buf = p.a.mrAll(64);
            var e = assertThrows(
                    dev.jrdma.verbs.PostException.class,
                    () -> p.a.qp.postSend(
                            new SendWorkRequest().opcode(WrOpcode.SEND).buffer(buf, 0, 8)));
            assertEquals(0, e.badIndex());
            assertThrows(
                    dev.jrdma.verbs.PostException.class,
                    () -> p.a.qp.postRecv(new RecvWorkRequest().buffer(buf, 0, 8)));
            assertThrows(dev.jrdma.verbs.VerbsException.class, () -> p.a.qp.modify(new QpAttr().state(QpState.RTS)));
        }
    }

    @Test
    void retryExhaustedWhenEveryPacketIsLost() {
        try (RcPair p = pair(o -> {
            o.timeout(11); // 8.4 ms
            o.retryCnt(1);
        })) {
            Transport ta = ((SoftContext) p.a.ctx).transport;
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            ta.testDropOneIn = 1;
            try {
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(1)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(src, 0, 8)
                        .remote(dst.address(), dst.rkey()));
                assertEquals(WcStatus.RETRY_EXC_ERR, poll(p.a.cq, 5000).status);
            } finally {
                ta.testDropOneIn = 0;
            }
        }
    }

    @Test
    void writeWithImmediateWaitsForAReceive() throws InterruptedException {
        try (RcPair p = pair(o -> o.minRnrTimer(5))) {
            MemoryRegion src = p.a.mrAll(4096), dst = p.b.mrAll(4096);
            fill(src.segment(), 3000, 4);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .immData(5)
                    .signaled(true)
                    .buffer(src, 0, 3000)
                    .remote(dst.address(), dst.rkey()));
            assertNoCompletion(p.a.cq, 50);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).numSge(0));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            WorkCompletion r = poll(p.b.cq);
            assertEquals(dev.jrdma.verbs.WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
            assertEquals(5, r.immData);
            assertEquals(3000, r.byteLen);
            assertFilled(dst.segment(), 0, 3000, 4);
        }
    }
}
