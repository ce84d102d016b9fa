package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults only the software device can be made to meet, so the conformance suite cannot provoke them: memory whose
 * arena was closed under a registration, packets dropped by the transport's test hook (and retransmitted), and a CQ
 * overrun seen from the polling side. Every other error case is the conformance suite's
 * ({@code dev.jrdma.conformance.ErrorsTest}), run on this device there.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SoftOnlyErrorsTest {
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
}
