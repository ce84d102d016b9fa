package dev.jrdma.soft;

import static dev.jrdma.soft.Fixture.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several QP pairs, traffic in both directions at once, every opcode interleaved, 2% of packets lost: every
 * work request completes successfully, data arrives intact, every atomic executes exactly once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SoakTest {
    static final int OPS = 400, SIZE = 5000;

    /** One direction: {@code me} drives a random mix of operations against {@code peer}. */
    private static Integer drive(Side me, Side peer, long seed, MemoryRegion myBuf, MemoryRegion peerBuf, MemoryRegion peerCounter) {
        Random rnd = new Random(seed);
        SendWorkRequest wr = new SendWorkRequest();
        WorkCompletion[] wc = WorkCompletion.array(16);
        int posted = 0, done = 0, received = 0;
        while (done < OPS) {
            while (posted < OPS && posted - done < 8) {
                int len = rnd.nextInt(SIZE);
                long wrId = posted;
                wr.wrId(wrId).signaled(true).flag(SendFlag.FENCE, rnd.nextInt(10) == 0);
                switch (rnd.nextInt(5)) {
                    case 0 -> wr.opcode(WrOpcode.SEND).buffer(myBuf, 0, len);
                    case 1 -> wr.opcode(WrOpcode.SEND_WITH_IMM).immData((int) wrId).buffer(myBuf, 0, len);
                    case 2 -> wr.opcode(WrOpcode.RDMA_WRITE).buffer(myBuf, 0, len).remote(peerBuf.address(), peerBuf.rkey());
                    case 3 -> wr.opcode(WrOpcode.RDMA_READ).buffer(myBuf, SIZE, len).remote(peerBuf.address(), peerBuf.rkey());
                    default -> wr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).buffer(myBuf, 2L * SIZE, 8).atomic(peerCounter.address(), peerCounter.rkey(), 1, 0);
                }
                me.qp.postSend(wr);
                posted++;
            }
            int k = me.cq.poll(wc);
            for (int i = 0; i < k; i++) {
                if (wc[i].status != WcStatus.SUCCESS) fail("QP " + me.qp.qpNum() + ": " + wc[i]);
                if (wc[i].opcode.isReceive()) received++; else done++;
            }
        }
        return received;
    }

    @Test
    void mixedTrafficBothWaysWithLoss() throws Exception {
        List<Pair> pairs = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        Transport ta = null, tb = null;
        try {
            for (int i = 0; i < 2; i++) pairs.add(pair(o -> {
                o.timeout = 14;
                o.cqe = 1024;
                o.qpA = dev.jrdma.verbs.QpInitAttr.builder(null).maxSendWr(16).maxRecvWr(OPS);
                o.qpB = dev.jrdma.verbs.QpInitAttr.builder(null).maxSendWr(16).maxRecvWr(OPS);
            }));
            ta = ((SoftContext) pairs.getFirst().a.ctx).transport;
            tb = ((SoftContext) pairs.getFirst().b.ctx).transport;
            ta.testDropOneIn = 50;
            tb.testDropOneIn = 50;
            List<Future<Integer>> fs = new ArrayList<>();
            List<MemoryRegion[]> counters = new ArrayList<>();
            int seed = 1;
            for (Pair p : pairs) {
                MemoryRegion aBuf = p.a.mrAll(67L * SIZE), bBuf = p.b.mrAll(67L * SIZE);
                MemoryRegion aCnt = p.a.mrAll(8), bCnt = p.b.mrAll(8);
                counters.add(new MemoryRegion[] {aCnt, bCnt});
                for (int i = 0; i < OPS; i++) { // enough receives for every message the peer may send
                    p.a.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(aBuf, 3L * SIZE + (i % 64) * (long) SIZE, SIZE));
                    p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(bBuf, 3L * SIZE + (i % 64) * (long) SIZE, SIZE));
                }
                long s1 = seed++, s2 = seed++;
                fs.add(pool.submit(() -> drive(p.a, p.b, s1, aBuf, bBuf, bCnt)));
                fs.add(pool.submit(() -> drive(p.b, p.a, s2, bBuf, aBuf, aCnt)));
            }
            int[] received = new int[fs.size()];
            for (int i = 0; i < fs.size(); i++) received[i] = fs.get(i).get(50, TimeUnit.SECONDS);
            // each side ran its own seed: replay it to count the FETCH_ADDs and SENDs each drove
            seed = 1;
            WorkCompletion[] wc = WorkCompletion.array(64);
            for (int i = 0; i < pairs.size(); i++) {
                MemoryRegion[] c = counters.get(i);
                long[] byA = count(seed++), byB = count(seed++);
                assertEquals(byA[0], c[1].segment().get(ValueLayout.JAVA_LONG, 0), "atomics executed exactly once");
                assertEquals(byB[0], c[0].segment().get(ValueLayout.JAVA_LONG, 0), "atomics executed exactly once");
                int recvA = received[2 * i] + drain(pairs.get(i).a, wc), recvB = received[2 * i + 1] + drain(pairs.get(i).b, wc);
                assertEquals(byB[1], recvA, "every SEND of B arrived once at A");
                assertEquals(byA[1], recvB, "every SEND of A arrived once at B");
            }
        } finally {
            if (ta != null) ta.testDropOneIn = 0;
            if (tb != null) tb.testDropOneIn = 0;
            pool.shutdownNow();
            for (Pair p : pairs) p.close();
        }
    }

    /** {FETCH_ADDs, SENDs} that the driver with this seed posts. */
    private static long[] count(long seed) {
        Random rnd = new Random(seed);
        long adds = 0, sends = 0;
        for (int i = 0; i < OPS; i++) {
            rnd.nextInt(SIZE);
            rnd.nextInt(10);
            int op = rnd.nextInt(5);
            if (op == 4) adds++;
            if (op <= 1) sends++;
        }
        return new long[] {adds, sends};
    }

    private static int drain(Side s, WorkCompletion[] wc) {
        int n = 0, k;
        while ((k = s.cq.poll(wc)) > 0) {
            for (int i = 0; i < k; i++) {
                assertEquals(WcStatus.SUCCESS, wc[i].status);
                if (wc[i].opcode == WcOpcode.RECV) n++;
            }
        }
        return n;
    }
}
