package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every opcode end to end over real UDP on loopback, between 127.0.0.1 and 127.0.0.2. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DataPathTest {
    static final int MIB = 1 << 20;

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 1023, 1024, 1025, MIB})
    void sendOfEverySize(int size) {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(Math.max(size, 1)), dst = p.b.mrAll(Math.max(size, 1));
            fill(src.segment(), size, 7);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(11).buffer(dst, 0, Math.max(size, 1)));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(22)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, size));
            WorkCompletion s = poll(p.a.cq, 20000);
            assertEquals(WcStatus.SUCCESS, s.status, s::toString);
            assertEquals(22, s.wrId);
            assertEquals(WcOpcode.SEND, s.opcode);
            WorkCompletion r = poll(p.b.cq, 20000);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(11, r.wrId);
            assertEquals(WcOpcode.RECV, r.opcode);
            assertEquals(size, r.byteLen);
            assertEquals(p.b.qp.qpNum(), r.qpNum);
            assertEquals(p.a.qp.qpNum(), r.srcQp);
            assertFalse(r.hasImm());
            assertFilled(dst.segment(), 0, size, 7);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 1023, 1024, 1025, MIB})
    void rdmaWriteAndReadOfEverySize(int size) {
        try (RcPair p = pair()) {
            int n = Math.max(size, 1);
            MemoryRegion local = p.a.mrAll(n), remote = p.b.mrAll(n), back = p.a.mrAll(n);
            fill(local.segment(), size, 3);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(local, 0, size)
                    .remote(remote.address(), remote.rkey()));
            WorkCompletion w = poll(p.a.cq, 20000);
            assertEquals(WcStatus.SUCCESS, w.status, w::toString);
            assertEquals(WcOpcode.RDMA_WRITE, w.opcode);
            assertFilled(remote.segment(), 0, size, 3);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(back, 0, size)
                    .remote(remote.address(), remote.rkey()));
            WorkCompletion r = poll(p.a.cq, 20000);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(WcOpcode.RDMA_READ, r.opcode);
            assertEquals(size, r.byteLen);
            assertFilled(back.segment(), 0, size, 3);
            // the target side sees nothing
            assertEquals(0, p.b.cq.poll(WorkCompletion.array(1)));
        }
    }

    @Test
    void sendWithImmediateAndWriteWithImmediate() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(4096), dst = p.b.mrAll(4096), rbuf = p.b.mrAll(16);
            fill(src.segment(), 3000, 1);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 4096));
            p.b.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(rbuf, 0, 16));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(10)
                    .opcode(WrOpcode.SEND_WITH_IMM)
                    .immData(0xCAFEBABE)
                    .signaled(true)
                    .buffer(src, 0, 3000));
            WorkCompletion r = poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            assertEquals(WcOpcode.RECV, r.opcode);
            assertTrue(r.hasImm());
            assertEquals(0xCAFEBABE, r.immData);
            assertEquals(3000, r.byteLen);
            assertFilled(dst.segment(), 0, 3000, 1);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);

            fill(src.segment(), 2500, 9);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(11)
                    .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .immData(77)
                    .signaled(true)
                    .buffer(src, 0, 2500)
                    .remote(dst.address() + 100, dst.rkey()));
            WorkCompletion wi = poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, wi.status, wi::toString);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wi.opcode);
            assertEquals(2, wi.wrId);
            assertEquals(77, wi.immData);
            assertEquals(2500, wi.byteLen);
            assertFilled(dst.segment(), 100, 2500, 9);
            WorkCompletion s = poll(p.a.cq);
            assertEquals(WcOpcode.RDMA_WRITE, s.opcode);
        }
    }

    @Test
    void atomics() {
        try (RcPair p = pair()) {
            MemoryRegion remote = p.b.mrAll(64), local = p.a.mrAll(64);
            remote.segment().set(ValueLayout.JAVA_LONG, 8, 100L);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .signaled(true)
                    .buffer(local, 0, 8)
                    .atomic(remote.address() + 8, remote.rkey(), 5, 0));
            WorkCompletion c = poll(p.a.cq);
            assertEquals(WcStatus.SUCCESS, c.status, c::toString);
            assertEquals(WcOpcode.FETCH_ADD, c.opcode);
            assertEquals(100L, local.segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(105L, remote.segment().get(ValueLayout.JAVA_LONG, 8));
            // compare and swap: fails (compare 1 != 105), then succeeds
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .signaled(true)
                    .buffer(local, 8, 8)
                    .atomic(remote.address() + 8, remote.rkey(), 1, 999));
            assertEquals(WcOpcode.COMP_SWAP, poll(p.a.cq).opcode);
            assertEquals(105L, local.segment().get(ValueLayout.JAVA_LONG, 8));
            assertEquals(105L, remote.segment().get(ValueLayout.JAVA_LONG, 8));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .signaled(true)
                    .buffer(local, 16, 8)
                    .atomic(remote.address() + 8, remote.rkey(), 105, -1L));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertEquals(105L, local.segment().get(ValueLayout.JAVA_LONG, 16));
            assertEquals(-1L, remote.segment().get(ValueLayout.JAVA_LONG, 8));
        }
    }

    @Test
    void misalignedAtomicIsAnInvalidRequest() {
        try (RcPair p = pair()) {
            MemoryRegion remote = p.b.mrAll(64), local = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .signaled(true)
                    .buffer(local, 0, 8)
                    .atomic(remote.address() + 4, remote.rkey(), 5, 0));
            assertEquals(WcStatus.REM_INV_REQ_ERR, poll(p.a.cq).status);
        }
    }

    @Test
    void scatterGatherChainsAndSelectiveSignalling() {
        try (RcPair p = pair()) {
            MemoryRegion src = p.a.mrAll(8192), dst = p.b.mrAll(8192);
            fill(src.segment(), 8192, 5);
            // receive into two pieces: [0,1000) and [4000,6000)
            RecvWorkRequest r = new RecvWorkRequest(2).wrId(7);
            r.numSge(2);
            r.sge(0).set(dst, 0, 1000);
            r.sge(1).set(dst, 4000, 2000);
            p.b.qp.postRecv(r);
            // send three pieces: [0,500) + [1000,2000) + [3000,4500) = 3000 bytes
            SendWorkRequest s =
                    new SendWorkRequest(3).wrId(1).opcode(WrOpcode.SEND).signaled(true);
            s.numSge(3);
            s.sge(0).set(src, 0, 500);
            s.sge(1).set(src, 1000, 1000);
            s.sge(2).set(src, 3000, 1500);
            p.a.qp.postSend(s);
            WorkCompletion rc = poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, rc.status, rc::toString);
            assertEquals(3000, rc.byteLen);
            byte[] expect = new byte[3000];
            int k = 0;
            for (int[] piece : new int[][] {{0, 500}, {1000, 1000}, {3000, 1500}})
                for (int i = 0; i < piece[1]; i++) expect[k++] = (byte) ((piece[0] + i) * 31 + 5);
            for (int i = 0; i < 1000; i++)
                assertEquals(expect[i], dst.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            for (int i = 0; i < 2000; i++)
                assertEquals(
                        expect[1000 + i], dst.segment().get(ValueLayout.JAVA_BYTE, 4000 + i), "byte " + (1000 + i));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);

            // a chain of three writes, only the last signalled: one completion, all three done
            SendWorkRequest w1 = new SendWorkRequest()
                    .wrId(101)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, 100)
                    .remote(dst.address(), dst.rkey());
            SendWorkRequest w2 = new SendWorkRequest()
                    .wrId(102)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 100, 2000)
                    .remote(dst.address() + 100, dst.rkey());
            SendWorkRequest w3 = new SendWorkRequest()
                    .wrId(103)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 2100, 50)
                    .remote(dst.address() + 2100, dst.rkey());
            w1.next(w2);
            w2.next(w3);
            dst.segment().fill((byte) 0);
            p.a.qp.postSend(w1);
            WorkCompletion c = poll(p.a.cq);
            assertEquals(103, c.wrId);
            assertFilled(dst.segment(), 0, 2150, 5);
            assertEquals(0, p.a.cq.poll(WorkCompletion.array(4)));
        }
    }

    @Test
    void inlineSendAndSqSigAll() {
        try (RcPair p = pair(o -> o.qpA(q -> q.maxInlineData(64).sqSigAll(true)))) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            fill(src.segment(), 64, 2);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(5)
                    .opcode(WrOpcode.SEND)
                    .flag(SendFlag.INLINE, true)
                    .buffer(src, 0, 60);
            p.a.qp.postSend(s);
            src.segment().fill((byte) 0); // inline data was copied at post time
            WorkCompletion c = poll(p.a.cq); // not SIGNALED, but sq_sig_all
            assertEquals(5, c.wrId);
            assertEquals(WcStatus.SUCCESS, c.status);
            assertEquals(60, poll(p.b.cq).byteLen);
            assertFilled(dst.segment(), 0, 60, 2);
        }
    }

    /** INLINE data needs no lkey (ibverbs ignores it): the device finds the PD's region by address, and refuses memory outside every one. */
    @Test
    void inlineDataWithoutAnLkeyIsFoundByItsAddress() {
        try (RcPair p = pair(o -> o.qpA(q -> q.maxInlineData(64)))) {
            MemoryRegion other = p.a.mrAll(4096), src = p.a.mrAll(64), dst = p.b.mrAll(64);
            fill(src.segment(), 64, 6);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(7)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .flag(SendFlag.INLINE, true)
                    .buffer(src, 8, 40);
            s.sge(0).lkey = 0;
            p.a.qp.postSend(s);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertEquals(40, poll(p.b.cq).byteLen);
            for (int i = 0; i < 40; i++)
                assertEquals(
                        src.segment().get(ValueLayout.JAVA_BYTE, 8 + i),
                        dst.segment().get(ValueLayout.JAVA_BYTE, i));
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                java.lang.foreign.MemorySegment unregistered = arena.allocate(64);
                SendWorkRequest outside = new SendWorkRequest()
                        .wrId(8)
                        .opcode(WrOpcode.SEND)
                        .signaled(true)
                        .flag(SendFlag.INLINE, true);
                outside.sge(0).set(unregistered.address(), 40, other.lkey());
                assertThrows(
                        dev.jrdma.verbs.PostException.class,
                        () -> p.a.qp.postSend(outside),
                        "memory in no region of the PD");
            }
        }
    }

    @Test
    void manyMessagesPipelinedWithMtu4096AndQpsOnOneDevice() {
        try (RcPair p = pair(devA(), devA(), o -> o.mtu(Mtu.MTU_4096))) {
            int n = 200, size = 10_000;
            MemoryRegion src = p.a.mrAll(size), dst = p.b.mrAll((long) size * 8);
            fill(src.segment(), size, 4);
            RecvWorkRequest r = new RecvWorkRequest();
            SendWorkRequest s =
                    new SendWorkRequest().opcode(WrOpcode.SEND).signaled(true).buffer(src, 0, size);
            int posted = 0, sent = 0, recvd = 0, sendDone = 0;
            for (int i = 0; i < 8; i++) p.b.qp.postRecv(r.wrId(posted++).buffer(dst, (long) (i % 8) * size, size));
            WorkCompletion[] wc = WorkCompletion.array(16);
            long end = System.nanoTime() + 20_000_000_000L;
            while ((recvd < n || sendDone < n) && System.nanoTime() < end) {
                if (sent < n && sent - sendDone < 16) {
                    p.a.qp.postSend(s.wrId(sent++));
                }
                int k = p.a.cq.poll(wc);
                for (int i = 0; i < k; i++) {
                    assertEquals(WcStatus.SUCCESS, wc[i].status, wc[i]::toString);
                    sendDone++;
                }
                k = p.b.cq.poll(wc);
                for (int i = 0; i < k; i++) {
                    assertEquals(WcStatus.SUCCESS, wc[i].status, wc[i]::toString);
                    assertEquals(size, wc[i].byteLen);
                    recvd++;
                    p.b.qp.postRecv(r.wrId(posted).buffer(dst, (long) (posted % 8) * size, size));
                    posted++;
                }
            }
            assertEquals(n, recvd);
            assertEquals(n, sendDone);
            assertFilled(dst.segment(), 0, size, 4);
        }
    }

    @Test
    void fencedSendWaitsForReadsAndReadsAreLimitedByMaxRdAtomic() {
        try (RcPair p = pair(o -> {
            o.maxRdAtomic(1);
            o.maxDestRdAtomic(1);
        })) {
            MemoryRegion remote = p.b.mrAll(64 * 1024), local = p.a.mrAll(64 * 1024), rb = p.b.mrAll(64);
            fill(remote.segment(), 64 * 1024, 8);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(9).buffer(rb, 0, 64));
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
            p.a.qp.postSend(r1);
            assertEquals(1, poll(p.a.cq).wrId);
            assertEquals(2, poll(p.a.cq).wrId);
            assertEquals(3, poll(p.a.cq).wrId);
            assertFilled(local.segment(), 0, 64 * 1024, 8);
            // the fenced SEND carried what the READ had fetched
            WorkCompletion rc = poll(p.b.cq);
            assertEquals(64, rc.byteLen);
            assertFilled(rb.segment(), 0, 64, 8);
        }
    }
}
