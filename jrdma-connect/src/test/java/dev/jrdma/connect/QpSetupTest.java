package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import java.net.InetAddress;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Set-up as a unit: two QPs of one device brought to RTS from each other's announced parameters. */
class QpSetupTest {
    static {
        TestSupport.init();
    }

    @Test
    void bothQpsReachRtsTowardsEachOtherWithOnlyTheConfiguredRights() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (EndpointGroup group = EndpointGroup.forLocalAddress(InetAddress.getByName(TestSupport.HOST), cfg);
                QueuePair a = group.pd()
                        .createQueuePair(QpInitAttr.builder(group.cq())
                                .maxSendWr(4)
                                .maxRecvWr(4)
                                .build());
                QueuePair b = group.pd()
                        .createQueuePair(QpInitAttr.builder(group.cq())
                                .maxSendWr(4)
                                .maxRecvWr(4)
                                .build())) {
            RemoteBuffer export = new RemoteBuffer(0x1000, 0x1234, 64);
            ConnParams pa = QpSetup.localParams(group, a, export), pb = QpSetup.localParams(group, b, null);
            assertEquals(a.qpNum(), pa.qpNum());
            assertEquals(0x1000, pa.addr());
            assertEquals(0x1234, pa.rkey());
            assertEquals(0, pb.addr());
            assertTrue(pa.psn() >= 0 && pa.psn() <= 0xFFFFFF);
            Set<Access> rights = EnumSet.of(Access.REMOTE_READ);
            QpSetup.toInit(a, rights, 0, EndpointGroup.PORT);
            QpSetup.toInit(b, rights, 0, EndpointGroup.PORT);
            QpSetup.toRtr(a, group, pa, pb);
            QpSetup.toRtr(b, group, pb, pa);
            QpSetup.toRts(a, group, pa);
            QpSetup.toRts(b, group, pb);

            QpAttr qa = a.query(), qb = b.query();
            assertEquals(QpState.RTS, qa.state());
            assertEquals(QpState.RTS, qb.state());
            assertEquals(b.qpNum(), qa.destQpNum());
            assertEquals(a.qpNum(), qb.destQpNum());
            assertEquals(pa.psn(), qa.sqPsn(), "a sends from the PSN it announced");
            assertEquals(pb.psn(), qa.rqPsn(), "a expects the PSN b announced");
            assertEquals(pa.mtu().min(pb.mtu()), qa.pathMtu());
            assertTrue(qa.access().contains(Access.REMOTE_READ));
            assertFalse(qa.access().contains(Access.REMOTE_WRITE), "only the rights asked for");
            assertFalse(qa.access().contains(Access.REMOTE_ATOMIC));
            assertEquals(QpSetup.ACK_TIMEOUT, qa.timeout());
            assertEquals(QpSetup.RETRY_COUNT, qa.retryCnt());
            assertEquals(QpSetup.MIN_RNR_TIMER, qa.minRnrTimer());
            assertEquals(QpSetup.rdAtomic(group.deviceAttr()), qa.maxRdAtomic());
        }
    }

    @Test
    void firstPsnsAreDrawnAtRandom() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (EndpointGroup group = EndpointGroup.forLocalAddress(InetAddress.getByName(TestSupport.HOST), cfg);
                QueuePair q = group.pd()
                        .createQueuePair(QpInitAttr.builder(group.cq())
                                .maxSendWr(1)
                                .maxRecvWr(1)
                                .build())) {
            Set<Integer> psns = new java.util.HashSet<>();
            for (int i = 0; i < 8; i++)
                psns.add(QpSetup.localParams(group, q, null).psn());
            assertTrue(psns.size() > 1, "eight draws gave one PSN: " + psns);
            assertNotEquals(0, psns.stream().mapToInt(Integer::intValue).max().getAsInt());
        }
    }
}
