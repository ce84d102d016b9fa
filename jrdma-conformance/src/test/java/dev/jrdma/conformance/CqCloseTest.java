package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 8 §5: closing a completion queue behaves the same on both providers. A CQ that queue pairs still use closes
 * those queue pairs first (as a protection domain closes its children): a queue pair never lives on with a CQ that is
 * gone (libibverbs' {@code ibv_destroy_cq} refuses with EBUSY; the native provider closes the users, and so does the
 * software device). Completions still in the CQ are discarded with it. Afterwards every use of the CQ and of those
 * queue pairs ends in {@link ClosedException} naming the verb; other CQs and queue pairs are untouched.
 */
@Timeout(120)
class CqCloseTest {
    @Test
    void closingACqWithPendingCompletionsClosesTheQueuePairsThatUseIt() {
        try (RcPair p = Suite.threadedPair().build()) {
            MemoryRegion ma = p.a.mrAll(4096), mb = p.a.mrAll(4096);
            // a third QP whose receive CQ is its own and whose send CQ is B's: closing the receive CQ closes it too
            CompletionQueue cqC = p.a.ctx.createCq(16, null);
            QueuePair c = p.a.pd.createQueuePair(QpInitAttr.builder(p.b.cq)
                    .recvCq(cqC)
                    .maxSendWr(4)
                    .maxRecvWr(4)
                    .maxSendSge(1)
                    .maxRecvSge(1)
                    .build());
            // completions pending on A's CQ: four signaled WRITEs, only the first polled
            SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < 4; i++) {
                p.a.qp.postSend(wr.opcode(WrOpcode.RDMA_WRITE)
                        .wrId(i)
                        .buffer(ma, 0, 64)
                        .remote(mb.address(), mb.rkey())
                        .signaled(true));
            }
            WorkCompletion first = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, first.status, first::toString);
            long end = System.nanoTime() + 2_000_000_000L;
            while (mb.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0)
                            != ma.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0)
                    && System.nanoTime() < end) Thread.onSpinWait();

            p.a.cq.close();
            assertTrue(p.a.cq.isClosed());
            assertTrue(p.a.qp.isClosed(), "the QP that used the CQ is closed with it");
            ClosedException poll = assertThrows(
                    ClosedException.class, () -> p.a.cq.poll(WorkCompletion.array(4)), "polling a closed CQ");
            assertTrue(poll.getMessage().contains("ibv_poll_cq"), poll.getMessage());
            assertThrows(ClosedException.class, () -> p.a.cq.requestNotify(false));
            ClosedException post = assertThrows(
                    ClosedException.class,
                    () -> p.a.qp.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.RDMA_WRITE)
                            .wrId(9)
                            .buffer(ma, 0, 8)
                            .remote(mb.address(), mb.rkey())));
            assertTrue(post.getMessage().contains("ibv_post_send"), post.getMessage());
            p.a.cq.close(); // idempotent
            p.a.qp.close();

            cqC.close();
            assertTrue(c.isClosed(), "a QP whose receive CQ was closed is closed with it");
            assertThrows(
                    ClosedException.class,
                    () -> c.postRecv(new RecvWorkRequest().wrId(1).buffer(mb, 0, 8)));

            // the others are untouched: B, its CQ and the protection domain work on
            assertFalse(p.b.qp.isClosed());
            assertFalse(p.b.cq.isClosed());
            assertFalse(p.a.pd.isClosed());
            assertEquals(0, p.b.cq.poll(WorkCompletion.array(4)), "B's CQ got nothing from C's close");
            p.b.qp.postRecv(new RecvWorkRequest().wrId(3).buffer(mb, 0, 64));
        }
    }
}
