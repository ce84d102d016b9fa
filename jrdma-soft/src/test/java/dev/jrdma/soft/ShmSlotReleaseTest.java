package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.poll;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A device gives back the slot it holds in a same-host ring once no QP has that ring's device as its destination: a
 * QP connected to itself (jrdma-bench's warm-up) that is aimed elsewhere or destroyed no longer keeps a slot of its own
 * device's ring claimed until the device closes. A slot whose last packet still waits untaken goes back at the watch's
 * next check, not before.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmSlotReleaseTest {

    /** The slots some sender has claimed in {@code t}'s own ring. */
    private static int claimedSlots(Transport t) {
        String rings = t.shmLink().describeRings();
        return rings.isEmpty() ? 0 : rings.split("; ").length;
    }

    private static QueuePair selfConnected(RcPair p) {
        QueuePair qp = p.a.pd.createQueuePair(QpInitAttr.builder(null)
                .maxSendWr(16)
                .maxRecvWr(16)
                .maxSendSge(1)
                .maxRecvSge(1)
                .sendCq(p.a.cq)
                .recvCq(p.a.cq)
                .build());
        p.walk(p.a.ctx, p.a.ctx, qp, 100, 100).walk(qp);
        return qp;
    }

    private static void writeToSelf(QueuePair qp, RcPair p, MemoryRegion mr) {
        qp.postSend(new SendWorkRequest()
                .wrId(9)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(mr, 0, 64)
                .remote(mr.address() + 1024, mr.rkey()));
        assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
    }

    @Test
    void aQpConnectedToItselfGivesItsSlotBackWhenAimedElsewhereOrDestroyed() throws InterruptedException {
        try (RcPair p = ShmLinkTest.pairOn("127.0.0.91", "127.0.0.92", "auto", "auto")) {
            Transport ta = ShmLinkTest.transport(p.a.ctx), tb = ShmLinkTest.transport(p.b.ctx);
            InetSocketAddress self = new InetSocketAddress(ta.local.inet, ta.port);
            InetSocketAddress toB = new InetSocketAddress(tb.local.inet, tb.port);
            ShmLinkTest.awaitRing(ta, toB);
            ShmLinkTest.awaitRing(tb, self);
            assertEquals(
                    1, claimedSlots(ta), "B's slot in A's ring: " + ta.shmLink().describeRings());
            MemoryRegion mr = p.a.mrAll(4096);

            QueuePair warmUp = selfConnected(p);
            ShmLinkTest.awaitRing(ta, self);
            writeToSelf(warmUp, p, mr);
            assertEquals(2, claimedSlots(ta), "and A's own: " + ta.shmLink().describeRings());
            warmUp.modify(new QpAttr().state(QpState.RESET));
            p.walk(p.a.ctx, p.b.ctx, p.b.qp, 200, 200).walk(warmUp); // aimed at B after its warm-up
            assertFalse(ta.shmLink().shmPeers().contains(self), "no route to itself: " + ta.linkName());
            assertEquals(
                    1,
                    claimedSlots(ta),
                    "A's own slot went back: " + ta.shmLink().describeRings());
            assertTrue(ta.shmLink().shmPeers().contains(toB), "B's route stays while QPs aim at B");

            QueuePair second = selfConnected(p);
            ShmLinkTest.awaitRing(ta, self);
            writeToSelf(second, p, mr);
            assertEquals(2, claimedSlots(ta));
            second.close();
            assertEquals(
                    1,
                    claimedSlots(ta),
                    "destroyed: its slot went back: " + ta.shmLink().describeRings());
            warmUp.close();
            assertTrue(ta.shmLink().shmPeers().contains(toB), "the pair's QP still aims at B");
            ShmLinkTest.exchange(p); // the pair still talks through the rings
        }
    }

    @Test
    void aSlotWhoseLastPacketWaitsGoesBackAtTheNextCheck() throws IOException {
        try (PeerBehindTest.Pair p = PeerBehindTest.openPair("127.0.0.93", "127.0.0.94", Clock.SYSTEM, l -> l)) {
            RxBatch atA = new RxBatch(), atB = new RxBatch();
            p.a().prepare(atA);
            p.b().prepare(atB);
            PeerBehindTest.proveRing(p.a(), atA, p.b(), atB, p.toB());
            p.a().expectPeer(p.toB()); // two QPs aim at B
            assertTrue(p.a().send(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), p.toB()));
            p.a().forgetPeer(p.toB());
            assertTrue(p.a().shmPeers().contains(p.toB()), "one QP still aims at B");
            p.a().forgetPeer(p.toB());
            assertTrue(p.a().shmPeers().contains(p.toB()), "the last packet waits in B's ring: the slot stays");
            assertFalse(p.b().describeRings().isEmpty());
            assertEquals(1, p.b().receive(atB), "B takes it");
            p.a().releaseRetiring(); // the watch's check
            assertFalse(p.a().shmPeers().contains(p.toB()), "given back");
            assertTrue(p.b().describeRings().isEmpty(), "no claimed slot in B's ring: " + p.b().describeRings());
            p.a().forgetPeer(p.toB()); // once more: nothing to give back, nothing breaks
            assertTrue(p.a().send(ByteBuffer.wrap(new byte[] {5}), p.toB()), "a later packet goes (UDP, then a ring)");
        }
    }

    /**
     * A device that closes while its last packet still waits in a peer's ring gives its slot back only once the peer
     * took that packet: a receiver reads only slots a sender holds, and the packet was a QP's last ACK, sent as the QP
     * was destroyed just before the close (a peer slow to take it then retried its request until RETRY_EXC_ERR).
     */
    @Test
    void aClosingDeviceWaitsForThePeerToTakeItsLastPacket() throws Exception {
        try (PeerBehindTest.Pair p = PeerBehindTest.openPair("127.0.0.95", "127.0.0.96", Clock.SYSTEM, l -> l)) {
            RxBatch atA = new RxBatch(), atB = new RxBatch();
            p.a().prepare(atA);
            p.b().prepare(atB);
            PeerBehindTest.proveRing(p.a(), atA, p.b(), atB, p.toB());
            assertTrue(p.a().send(ByteBuffer.wrap(new byte[] {7, 7, 7, 7, 7}), p.toB()));
            Thread closer = Thread.ofPlatform().start(p.a()::close);
            Thread.sleep(20); // B is slow to take it: A's close has begun
            assertEquals(1, p.b().receive(atB), "B takes the packet the closing device left: " + p.b().describeRings());
            assertEquals(5, atB.lengths[0]);
            closer.join(10_000);
            assertFalse(closer.isAlive(), "the close ends once the packet is taken");
            assertTrue(p.b().describeRings().isEmpty(), "the slot went back: " + p.b().describeRings());
        }
    }
}
