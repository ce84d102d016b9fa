package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * The hot path allocates nothing: after warm-up, post_recv + post_send + poll (until both completions came)
 * is measured over many iterations with ThreadMXBean.getCurrentThreadAllocatedBytes.
 * {@code -Djrdma.alloc.iters=N} sets the measured iterations (default 100000).
 */
class AllocationTest {
    @Test
    void postAndPollAllocateNothing() {
        try (RcPair r = DeviceTest.pair(64, 1, 64)) {
            MemoryRegion mrA = r.a.mrAll(4096), mrB = r.b.mrAll(4096);
            MemorySegment bufA = mrA.segment(), bufB = mrB.segment();
            var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            int iters = Integer.getInteger("jrdma.alloc.iters", 100_000);
            int warm = Integer.getInteger("jrdma.alloc.warmup", Math.max(20_000, iters / 5));
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(mrA, 0, 32);
            RecvWorkRequest rv = new RecvWorkRequest().wrId(2).buffer(mrB, 0, 64);
            WorkCompletion[] wcs = WorkCompletion.array(4);
            long t0 = System.nanoTime();
            loop(r, s, rv, wcs, warm);
            long t1 = System.nanoTime();
            long before = mx.getCurrentThreadAllocatedBytes();
            long polls = loop(r, s, rv, wcs, iters);
            long after = mx.getCurrentThreadAllocatedBytes();
            long t2 = System.nanoTime();
            double perOp = (after - before) / (double) iters;
            System.out.printf(
                    "allocation: %d bytes over %d iterations (post_recv + post_send + %d polls in all) = %.4f bytes/iteration; "
                            + "warm-up %d iterations %.1f s, measured %.1f s (%.1f us/iteration)%n",
                    after - before,
                    iters,
                    polls,
                    perOp,
                    warm,
                    (t1 - t0) / 1e9,
                    (t2 - t1) / 1e9,
                    (t2 - t1) / 1e3 / iters);
            assertTrue(perOp < 1.0, "the hot path allocated " + perOp + " bytes per iteration");
        }
    }

    /** The same on any machine, over the null provider (NullProvider): post_recv + post_send + poll through the ops table. */
    @Test
    void nullProviderPostAndPollAllocateNothing() throws Exception {
        java.nio.file.Path dir = java.nio.file.Path.of("target", "nullverbs");
        org.junit.jupiter.api.Assumptions.assumeTrue(
                NullProvider.available(dir), "skipped: -Djrdma.skipLayoutTest is set and no null provider was built");
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            NullProvider np = NullProvider.open(NullProvider.build(dir), arena.allocate(4096, 4096));
            try {
                var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
                int iters = Integer.getInteger("jrdma.alloc.iters", 100_000);
                SendWorkRequest s = new SendWorkRequest()
                        .wrId(1)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(np.mr, 0, 32)
                        .remote(np.mr.address(), np.mr.rkey());
                RecvWorkRequest rv = new RecvWorkRequest().wrId(2).buffer(np.mr, 64, 64);
                WorkCompletion[] wcs = WorkCompletion.array(4);
                nullLoop(np, s, rv, wcs, Math.max(20_000, iters / 5));
                long before = mx.getCurrentThreadAllocatedBytes();
                nullLoop(np, s, rv, wcs, iters);
                long after = mx.getCurrentThreadAllocatedBytes();
                double perOp = (after - before) / (double) iters;
                System.out.printf(
                        "allocation (null provider): %d bytes over %d iterations = %.4f bytes/iteration%n",
                        after - before, iters, perOp);
                assertTrue(perOp < 1.0, "the hot path allocated " + perOp + " bytes per iteration");
            } finally {
                np.free();
            }
        }
    }

    private static void nullLoop(NullProvider np, SendWorkRequest s, RecvWorkRequest rv, WorkCompletion[] wcs, int n) {
        for (int i = 0; i < n; i++) {
            np.qp.postRecv(rv);
            np.qp.postSend(s);
            if (np.cq.poll(wcs, 4) != 1 || !wcs[0].isSuccess())
                throw new AssertionError("the null provider's completion");
        }
    }

    private static long loop(RcPair r, SendWorkRequest s, RecvWorkRequest rv, WorkCompletion[] wcs, int n) {
        long polls = 0;
        for (int i = 0; i < n; i++) {
            r.b.qp.postRecv(rv);
            r.a.qp.postSend(s);
            int got = 0;
            while (got < 2) {
                polls += 2;
                int x = r.a.cq.poll(wcs, 2);
                int y = r.b.cq.poll(wcs, 2);
                for (int k = 0; k < x + y; k++) if (!wcs[k].isSuccess()) throw new AssertionError(wcs[k].explain());
                got += x + y;
            }
        }
        return polls;
    }
}
