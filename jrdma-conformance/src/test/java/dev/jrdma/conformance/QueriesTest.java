package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpAttrMask;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The queries and CQ controls beyond the basics: P_Keys, completion vectors, resizing a CQ with completions in it. */
@Timeout(60)
class QueriesTest {

    @Test
    void pkeyZeroIsTheDefaultFullMemberKey() {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            assertEquals(0xFFFF, p.a.ctx.queryPkey(RcPair.PORT, 0));
            int len = p.a.ctx.queryPort(RcPair.PORT).pkeyTblLen();
            assertThrows(VerbsException.class, () -> p.a.ctx.queryPkey(RcPair.PORT, Math.max(len, 1) + 1000));
        }
    }

    /** ibv_query_qp returns every attribute of struct ibv_qp_attr, each with the value the modifies set. */
    @Test
    void queryQpReturnsEveryAttributeAsSet() {
        try (RcPair p = Suite.threadedPair()
                .retryCnt(5)
                .rnrRetry(6)
                .minRnrTimer(14)
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ)
                .build()) {
            QpAttr q = p.a.qp.query();
            for (QpAttrMask m : new QpAttrMask[] {
                QpAttrMask.STATE,
                QpAttrMask.CUR_STATE,
                QpAttrMask.EN_SQD_ASYNC_NOTIFY,
                QpAttrMask.ACCESS_FLAGS,
                QpAttrMask.PKEY_INDEX,
                QpAttrMask.PORT,
                QpAttrMask.QKEY,
                QpAttrMask.AV,
                QpAttrMask.PATH_MTU,
                QpAttrMask.TIMEOUT,
                QpAttrMask.RETRY_CNT,
                QpAttrMask.RNR_RETRY,
                QpAttrMask.RQ_PSN,
                QpAttrMask.MAX_QP_RD_ATOMIC,
                QpAttrMask.ALT_PATH,
                QpAttrMask.MIN_RNR_TIMER,
                QpAttrMask.SQ_PSN,
                QpAttrMask.MAX_DEST_RD_ATOMIC,
                QpAttrMask.PATH_MIG_STATE,
                QpAttrMask.CAP,
                QpAttrMask.DEST_QPN
            }) {
                assertTrue(q.has(m), m + " missing from " + q);
            }
            assertEquals(QpState.RTS, q.state());
            assertEquals(QpState.RTS, q.curState());
            assertEquals(
                    java.util.EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ),
                    java.util.EnumSet.copyOf(remoteOnly(q.access())));
            assertEquals(0, q.pkeyIndex());
            assertEquals(RcPair.PORT, q.port());
            assertEquals(Mtu.MTU_1024.min(p.a.ctx.queryPort(RcPair.PORT).activeMtu()), q.pathMtu());
            assertEquals(12, q.timeout());
            assertEquals(5, q.retryCnt());
            assertEquals(6, q.rnrRetry());
            assertEquals(0x100, q.rqPsn());
            assertEquals(0x200, q.sqPsn());
            assertEquals(4, q.maxRdAtomic());
            assertEquals(4, q.maxDestRdAtomic());
            assertEquals(14, q.minRnrTimer());
            assertEquals(p.b.qp.qpNum(), q.destQpNum());
            assertTrue(q.ah().isGlobal, "a RoCE path is global");
            assertEquals(p.a.ctx.queryGid(RcPair.PORT, p.a.ctx.defaultGidIndex(RcPair.PORT)), q.ah().dgid);
            assertEquals(p.a.ctx.defaultGidIndex(RcPair.PORT), q.ah().sgidIndex);
            assertEquals(RcPair.PORT, q.ah().portNum);
            assertTrue(
                    q.cap().maxSendWr() >= 64
                            && q.cap().maxRecvWr() >= 64
                            && q.cap().maxSendSge() >= 4
                            && q.cap().maxRecvSge() >= 4,
                    q.cap()::toString);
            assertFalse(q.enSqdAsyncNotify());
            assertFalse(q.sqDraining(), "not in SQD");
            assertEquals(QpAttr.MIG_MIGRATED, q.pathMigState(), "no alternate path was ever loaded");
            assertEquals(0, q.altPort(), "no alternate path");
            assertEquals(0, q.altTimeout());

            p.a.qp.modify(new QpAttr().state(QpState.SQD).enSqdAsyncNotify(true));
            QpAttr sqd = p.a.qp.query();
            assertEquals(QpState.SQD, sqd.state());
            // Linux 6.1's rxe does not report en_sqd_async_notify back (its query says 0); the software device
            // reports what the modify set, as ibv_query_qp's contract says
            if (!p.isRxe()) assertTrue(sqd.enSqdAsyncNotify(), "the move to SQD asked for SQ_DRAINED");
            assertFalse(sqd.sqDraining(), "nothing was in flight, so nothing drains");
        }
    }

    private static java.util.Set<Access> remoteOnly(java.util.Set<Access> a) {
        java.util.EnumSet<Access> r = java.util.EnumSet.noneOf(Access.class);
        for (Access x : a)
            if (x == Access.REMOTE_WRITE || x == Access.REMOTE_READ || x == Access.REMOTE_ATOMIC) r.add(x);
        return r;
    }

    @Test
    void cqOnEachCompletionVectorAndNoneBeyond() {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            int n = p.a.ctx.numCompVectors();
            assertTrue(n >= 1, "num_comp_vectors " + n);
            for (int v = 0; v < n; v++) p.a.ctx.createCq(8, null, v).close();
            assertThrows(VerbsException.class, () -> p.a.ctx.createCq(8, null, n));
            assertThrows(VerbsException.class, () -> p.a.ctx.createCq(8, null, -1));
        }
    }

    @Test
    void resizeKeepsTheCompletionInIt() {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            CompletionChannel ch = p.a.ctx.createCompletionChannel();
            CompletionQueue cq = p.a.ctx.createCq(4, ch);
            QueuePair x = p.a.pd.createQueuePair(QpInitAttr.builder(cq).build()),
                    y = p.a.pd.createQueuePair(QpInitAttr.builder(cq).build());
            SrqTest.connect(p, x, y);
            MemoryRegion ma = p.a.mrAll(64), mb = p.a.mrAll(64);
            cq.requestNotify(false);
            x.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(1)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())); // unsignalled
            x.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .wrId(2)
                    .buffer(ma, 0, 8)
                    .remote(mb.address(), mb.rkey())
                    .signaled(true));
            assertSame(
                    cq,
                    ch.awaitEvent(Duration.ofSeconds(20)),
                    "no completion event"); // the completion is in the CQ now
            cq.ackEvents(1);
            int before = cq.capacity();
            cq.resize(before * 8);
            assertTrue(cq.capacity() >= before * 8, "capacity " + cq.capacity() + " after resizing to " + before * 8);
            WorkCompletion wc = p.await(cq);
            assertEquals(WcStatus.SUCCESS, wc.status);
            assertEquals(2, wc.wrId, "the completion stays across the resize");
            assertThrows(VerbsException.class, () -> cq.resize(0));
        }
    }
}
