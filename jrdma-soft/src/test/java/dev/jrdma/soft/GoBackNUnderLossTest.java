package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.Random;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 23 §4, go-back-N as the specification says (the mode used with rxe and NICs): under 1% loss each way a long
 * run of large messages is slow, never fatal, because every acknowledgement that makes progress reloads the retry
 * counter (IBA 9.7.6.1.3; rxe's {@code reset_retry_counters}), so RETRY_EXC_ERR needs retry_cnt + 1 failures in a row
 * at one PSN. The deterministic network (manual clock) with perftest's timeout (14: 67 ms) and retry count (7).
 */
@Timeout(120)
class GoBackNUnderLossTest {
    static final int SIZE = 65536, MESSAGES = 2000, DEPTH = 128;

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {7, 8})
    void onePercentLossEachWayIsSlowNeverFatal(long seed) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        net.keepLog = false;
        try (RcPair pair = net.bulkPair()) {
            soft(pair.a.qp).selectiveRepeat = false;
            soft(pair.b.qp).selectiveRepeat = false;
            Random rnd = new Random(seed);
            long[] lost = {0};
            net.drop = p -> rnd.nextDouble() < 0.01 && ++lost[0] > 0;
            long bytes = (long) SIZE * DEPTH;
            MemoryRegion src = pair.a.mrAll(bytes), dst = pair.b.mrAll(bytes);
            RcPair.fill(src.segment(), bytes, (int) seed);
            int[] posted = {0}, done = {0};
            long[] lastCompletion = {net.clock.nanoTime()}, longestWait = {0};
            WorkCompletion[] wcs = WorkCompletion.array(64);
            net.runUntil(
                    () -> {
                        int n = pair.a.cq.poll(wcs);
                        for (int i = 0; i < n; i++)
                            assertEquals(WcStatus.SUCCESS, wcs[i].status, () -> "WRITE " + wcs[0].wrId);
                        if (n > 0) {
                            long now = net.clock.nanoTime();
                            longestWait[0] = Math.max(longestWait[0], now - lastCompletion[0]);
                            lastCompletion[0] = now;
                        }
                        done[0] += n;
                        while (posted[0] < MESSAGES && posted[0] - done[0] < DEPTH) {
                            int i = posted[0]++;
                            long off = (long) SIZE * (i % DEPTH);
                            pair.a.qp.postSend(new SendWorkRequest()
                                    .wrId(i)
                                    .opcode(WrOpcode.RDMA_WRITE)
                                    .buffer(src, off, SIZE)
                                    .remote(dst.address() + off, dst.rkey())
                                    .signaled(true));
                        }
                        return done[0] == MESSAGES;
                    },
                    1_000_000,
                    600_000_000_000L);
            RcPair.assertFilled(dst.segment(), 0, bytes, (int) seed);
            Transport ta = net.transport(DeterministicNetwork.A);
            String what = "lost " + lost[0] + ", retries " + ta.counters.get(Counter.RETRANSMITS) + ", longest wait "
                    + longestWait[0] / 1_000_000 + " ms";
            assertTrue(lost[0] > 300, what); // about 1% of some 50,000 packets and their ACKs
            assertTrue(ta.counters.get(Counter.RETRANSMITS) >= lost[0] / 3, what);
            // progress reloads the back-off too: no wait longer than a few timeouts in a row
            assertTrue(longestWait[0] < 500_000_000L, what);
        }
    }
}
