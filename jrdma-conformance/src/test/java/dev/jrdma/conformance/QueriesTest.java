package dev.jrdma.conformance;

import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The queries and CQ controls beyond the basics: P_Keys, completion vectors, resizing a CQ with completions in it. */
@Timeout(60)
class QueriesTest {

    @Test
    void pkeyZeroIsTheDefaultFullMemberKey() {
        try (Pair p = new Pair()) {
            assertEquals(0xFFFF, p.ctx.queryPkey(Pair.PORT, 0));
            int len = p.ctx.queryPort(Pair.PORT).pkeyTblLen();
            assertThrows(VerbsException.class, () -> p.ctx.queryPkey(Pair.PORT, Math.max(len, 1) + 1000));
        }
    }

    @Test
    void cqOnEachCompletionVectorAndNoneBeyond() {
        try (Pair p = new Pair()) {
            int n = p.ctx.numCompVectors();
            assertTrue(n >= 1, "num_comp_vectors " + n);
            for (int v = 0; v < n; v++) p.ctx.createCq(8, null, v).close();
            assertThrows(VerbsException.class, () -> p.ctx.createCq(8, null, n));
            assertThrows(VerbsException.class, () -> p.ctx.createCq(8, null, -1));
        }
    }

    @Test
    void resizeKeepsTheCompletionInIt() {
        try (Pair p = new Pair()) {
            CompletionChannel ch = p.ctx.createCompletionChannel();
            CompletionQueue cq = p.ctx.createCq(4, ch);
            QueuePair x = p.pd.createQueuePair(QpInitAttr.builder(cq).build()), y = p.pd.createQueuePair(QpInitAttr.builder(cq).build());
            SrqTest.connect(p, x, y);
            MemoryRegion ma = p.mrAll(64), mb = p.mrAll(64);
            cq.requestNotify(false);
            x.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).buffer(ma, 0, 8).remote(mb.address(), mb.rkey())); // unsignalled
            x.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(2).buffer(ma, 0, 8).remote(mb.address(), mb.rkey()).signaled(true));
            assertSame(cq, ch.awaitEvent(Duration.ofSeconds(20)), "no completion event"); // the completion is in the CQ now
            cq.ackEvents(1);
            int before = cq.capacity();
            cq.resize(before * 8);
            assertTrue(cq.capacity() >= before * 8, "capacity " + cq.capacity() + " after resizing to " + before * 8);
            WorkCompletion wc = Pair.one(cq);
            assertEquals(WcStatus.SUCCESS, wc.status);
            assertEquals(2, wc.wrId, "the completion stays across the resize");
            assertThrows(VerbsException.class, () -> cq.resize(0));
        }
    }
}
