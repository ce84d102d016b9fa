package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One QP's large READ cannot stall the device: while it runs, another QP on the same two devices ping-pongs, and
 * the test reports the ping-pong's latency during the READ next to the same ping-pong alone. Size:
 * {@code -Djrdma.soft.bigReadMiB} (64 by default, CI-sized; 1024 for the 1 GiB figure). Only liveness is
 * asserted (every round trip under a generous bound, the data intact); the latencies are printed.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class ReadIsolationTest {

    /** One ping-pong exchange of 64 B SENDs between the two sides of {@code p}: the round trip in nanoseconds. */
    private static long roundTrip(
            RcPair p,
            SendWorkRequest ping,
            SendWorkRequest pong,
            RecvWorkRequest recvA,
            RecvWorkRequest recvB,
            WorkCompletion[] wc) {
        p.b.qp.postRecv(recvB);
        p.a.qp.postRecv(recvA);
        long t0 = System.nanoTime();
        p.a.qp.postSend(ping);
        awaitRecv(p.b, wc);
        p.b.qp.postSend(pong);
        awaitRecv(p.a, wc);
        return System.nanoTime() - t0;
    }

    private static void awaitRecv(Side s, WorkCompletion[] wc) {
        long end = System.nanoTime() + 30_000_000_000L;
        for (int spins = 0; ; spins++) {
            if (s.cq.poll(wc) == 1) {
                assertEquals(WcStatus.SUCCESS, wc[0].status, wc[0].toString());
                return;
            }
            if (System.nanoTime() > end) fail("a ping-pong round trip took more than 30 s: the device stalled");
            if (spins > 200) Thread.yield();
            else Thread.onSpinWait();
        }
    }

    private static String summary(long[] rtts, int n) {
        long[] s = Arrays.copyOf(rtts, n);
        Arrays.sort(s);
        return String.format(
                "n=%d p50=%.1f us p99=%.1f us max=%.1f us",
                n, s[n / 2] / 1e3, s[(int) (n * 0.99)] / 1e3, s[n - 1] / 1e3);
    }

    @Test
    void aLargeReadDoesNotStallAnotherQpOnTheSameDevice() {
        long size = Long.getLong("jrdma.soft.bigReadMiB", 64) << 20;
        try (RcPair bulk = pair(o -> o.mtu(Mtu.MTU_4096));
                RcPair ping = pair(o -> o.mtu(Mtu.MTU_4096))) {
            MemoryRegion src = bulk.b.mrAll(size), dst = bulk.a.mr(size, Access.LOCAL_WRITE);
            MemorySegment s = src.segment();
            for (long i = 0; i < size; i += 8) s.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            MemoryRegion pa = ping.a.mrAll(64), pb = ping.b.mrAll(64);
            SendWorkRequest pingWr =
                    new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).buffer(pa, 0, 64);
            SendWorkRequest pongWr =
                    new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).buffer(pb, 0, 64);
            RecvWorkRequest recvA = new RecvWorkRequest().wrId(3).buffer(pa, 0, 64),
                    recvB = new RecvWorkRequest().wrId(4).buffer(pb, 0, 64);
            WorkCompletion[] wc = WorkCompletion.array(1), bulkWc = WorkCompletion.array(1);
            long[] alone = new long[2000];
            for (int i = 0; i < 500; i++) roundTrip(ping, pingWr, pongWr, recvA, recvB, wc); // warm up
            for (int i = 0; i < alone.length; i++) alone[i] = roundTrip(ping, pingWr, pongWr, recvA, recvB, wc);

            long[] during = new long[1 << 20];
            int n = 0;
            long t0 = System.nanoTime();
            bulk.a.qp.postSend(new SendWorkRequest()
                    .wrId(9)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(dst, 0, (int) size)
                    .remote(src.address(), src.rkey()));
            while (bulk.a.cq.poll(bulkWc) == 0) {
                if (n < during.length) during[n++] = roundTrip(ping, pingWr, pongWr, recvA, recvB, wc);
                assertTrue(System.nanoTime() - t0 < 300_000_000_000L, "the READ did not finish in 300 s");
            }
            long readNanos = System.nanoTime() - t0;
            assertEquals(WcStatus.SUCCESS, bulkWc[0].status, bulkWc[0].toString());
            assertEquals(-1, src.segment().mismatch(dst.segment()), "the READ's bytes arrived intact");
            System.out.printf(
                    "READ of %d MiB (MTU 4096): %.2f s, %.0f MB/s; ping-pong 64 B on another QP of the same devices:%n"
                            + "  alone:       %s%n  during READ: %s%n",
                    size >> 20,
                    readNanos / 1e9,
                    size / 1e6 / (readNanos / 1e9),
                    summary(alone, alone.length),
                    n == 0 ? "no round during the READ" : summary(during, n));
            long max = 0;
            for (int i = 0; i < n; i++) max = Math.max(max, during[i]);
            assertTrue(max < 10_000_000_000L, "a round trip during the READ took " + max / 1e6 + " ms");
        }
    }
}
