package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An operation given up (its timeout passed) may still be at the device: its atomic result or READ response can
 * still land. The buffer it would land in goes back to the pool only once no work request is at the device.
 */
@Timeout(60)
class GivenUpOperationsTest {
    @Test
    void anAtomicsResultBufferStaysOutOfThePoolUntilItsWorkRequestIsRetired() throws Exception {
        try (TestSupport.Pair p =
                        TestSupport.pair(TestSupport.configWithRights().build());
                RegisteredBuffer word = p.serverSide().pool().allocate(64)) {
            Endpoint c = p.clientSide();
            RemoteBuffer granted =
                    p.serverSide().grant(word, 0, 64, TestSupport.ALL_RIGHTS).remote();
            BufferPool results = c.group().messagePool();
            // the client's owner stops polling its CQ, so the atomic's completion is not seen before it is given up
            Runnable resume = TestSupport.pauseCompletions(c);
            int before = results.inUse();
            CompletableFuture<Long> cas = c.compareAndSwap(granted, 0, 0, 42);
            assertEquals(before + 1, results.inUse(), "the atomic took a result buffer");
            // the test's clock: an hour later, the atomic is overdue and given up; the endpoint breaks
            TestSupport.checkTimeoutsOnOwner(c, System.nanoTime() + TimeUnit.HOURS.toNanos(1));
            assertTrue(cas.isCompletedExceptionally(), "given up at its deadline");
            assertEquals(RdmaException.Kind.TIMEOUT, ((RdmaException) cas.exceptionNow()).kind());
            assertEquals(
                    before + 1,
                    results.inUse(),
                    "its work request is still at the device: the buffer must not go back yet");
            assertEquals(1, c.heldBuffers());
            resume.run();
            // the completion (the result landed, or the flush after ERR) retires the work request: now it goes back
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (results.inUse() != before && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(before, results.inUse());
            assertEquals(0, c.heldBuffers());
        }
    }
}
