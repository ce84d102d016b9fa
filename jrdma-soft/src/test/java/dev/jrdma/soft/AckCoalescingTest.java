package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 23 §2, ACKs off the critical path, on two devices joined by the test ({@link DeterministicNetwork}, manual clock): which
 * packets ask for an ACK, how many ACKs a run of requests costs, the order of an answer and the ACK it carries, and
 * that a lost coalesced ACK is recovered by the requester's timeout.
 */
@Timeout(60)
class AckCoalescingTest {
    static final int WRITES = 100;

    /** A chain of {@code n} 64 B WRITEs from A to B, only the last signalled, posted at once. */
    private static void postWrites(RcPair pair, MemoryRegion src, MemoryRegion dst, int n) {
        SendWorkRequest first = null, prev = null;
        for (int i = 0; i < n; i++) {
            SendWorkRequest wr = new SendWorkRequest()
                    .wrId(i)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 64L * i, 64)
                    .remote(dst.address() + 64L * i, dst.rkey())
                    .signaled(i == n - 1);
            if (prev == null) first = wr;
            else prev.next = wr;
            prev = wr;
        }
        pair.a.qp.postSend(first);
    }

    private static WorkCompletion pollOne(RcPair pair) {
        WorkCompletion[] wcs = WorkCompletion.array(4);
        int n = pair.a.cq.poll(wcs);
        return n == 0 ? null : wcs[0];
    }

    @Test
    void aRunOfUnsignalledWritesAsksForOneAckPerQuarterWindowAndForTheSignalledLast() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll(64L * WRITES), dst = pair.b.mrAll(64L * WRITES);
            RcPair.fill(src.segment(), 64L * WRITES, 3);
            postWrites(pair, src, dst, WRITES);
            List<DeterministicNetwork.Packet> requests = List.copyOf(net.log);
            assertEquals(WRITES, requests.size());
            int every = soft(pair.a.qp).requester.ackEvery; // 64 at MTU 1024
            for (int i = 0; i < WRITES; i++) {
                boolean expected = (i + 1) % every == 0 || i == WRITES - 1;
                assertEquals(expected, requests.get(i).ackReq(), "AckReq of packet " + i);
            }
            net.deliver(); // each packet a receive burst of its own: the worst case for coalescing at a burst's end
            assertEquals(2, net.count(tb, Opcode.ACKNOWLEDGE.code()), "one ACK per packet that asked");
            WorkCompletion wc = pollOne(pair);
            assertNotNull(wc);
            assertEquals(WcStatus.SUCCESS, wc.status);
            assertEquals(WRITES - 1, wc.wrId);
            RcPair.assertFilled(dst.segment(), 0, 64L * WRITES, 3);
            assertEquals(0, ta.counters.get(Counter.RETRANSMITS));
        }
    }

    @Test
    void theLastRequestQueuedAsksForAnAckEvenUnsignalled() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll(64), dst = pair.b.mrAll(64);
            pair.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey())
                    .signaled(false));
            assertTrue(net.log.get(0).ackReq(), "nothing follows it: without the ACK the window would never move");
            net.deliver();
            assertEquals(1, net.count(tb, Opcode.ACKNOWLEDGE.code()));
            assertEquals(
                    soft(pair.a.qp).requester.nextPsn,
                    soft(pair.a.qp).completer.oldestUnacked,
                    "the WRITE is acknowledged");
        }
    }

    @Test
    void anUnsignalledWriteFollowedOnlyByALocalOperationAsksForAnAck() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            MemoryRegion src = pair.a.mrAll(64), dst = pair.b.mrAll(64), local = pair.a.mrBindable(4096);
            MemoryWindow mw = pair.a.pd.allocMemoryWindow(MwType.TYPE_2);
            SendWorkRequest bind =
                    new SendWorkRequest().opcode(WrOpcode.BIND_MW).signaled(false);
            bind.bindMw = mw;
            bind.bindMr = local;
            bind.bindAddr = local.address();
            bind.bindLength = 4096;
            bind.bindAccess.add(Access.REMOTE_WRITE);
            pair.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey())
                    .signaled(false)
                    .next(bind));
            assertEquals(1, net.log.size());
            assertTrue(
                    net.log.get(0).ackReq(),
                    "the bind sends nothing: without AckReq the WRITE would wait for a timeout");
            net.deliver();
            assertEquals(soft(pair.a.qp).requester.nextPsn, soft(pair.a.qp).completer.oldestUnacked, "acknowledged");
        }
    }

    @Test
    void aLostCoalescedAckIsRecoveredByTheTimeoutAndTheResponderAcknowledgesTheDuplicates() {
        // the walk's default timeout, 14: 67 ms
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            soft(pair.a.qp).selectiveRepeat =
                    false; // the default, go-back-N (whatever -Djrdma.soft.selectiveRepeat says)
            soft(pair.b.qp).selectiveRepeat = false;
            MemoryRegion src = pair.a.mrAll(64L * WRITES), dst = pair.b.mrAll(64L * WRITES);
            RcPair.fill(src.segment(), 64L * WRITES, 9);
            boolean[] lostOne = {false};
            int lastPsn = 100 + WRITES - 1; // the connection's first PSN from A is 100
            net.drop = p -> { // the ACK of the whole run, the first time
                if (lostOne[0] || p.from() != tb || p.opcode() != Opcode.ACKNOWLEDGE.code() || p.psn() != lastPsn)
                    return false;
                return lostOne[0] = true;
            };
            postWrites(pair, src, dst, WRITES);
            WorkCompletion[] got = {null};
            long before = net.clock.nanoTime();
            net.runUntil(() -> (got[0] = pollOne(pair)) != null, 1_000_000, 1_000_000_000L);
            assertTrue(lostOne[0], "the ACK was lost");
            assertEquals(WcStatus.SUCCESS, got[0].status);
            long waited = net.clock.nanoTime() - before;
            assertTrue(
                    waited >= 67_000_000L,
                    "completed only after the retransmission timeout, not after " + waited + " ns; retransmits "
                            + ta.counters.get(Counter.RETRANSMITS) + ", late "
                            + ta.counters.get(Counter.RETRY_TIMER_LATE));
            assertEquals(1, ta.counters.get(Counter.RETRANSMITS));
            // go-back-N from the first PSN the lost ACK covered: those packets are duplicates at B, ACKed again
            long resent = WRITES - soft(pair.a.qp).requester.ackEvery;
            assertEquals(resent, tb.counters.get(Counter.RX_DUPLICATE_REQUEST));
            RcPair.assertFilled(dst.segment(), 0, 64L * WRITES, 9);
        }
    }

    @Test
    void anAnswerPostedWhileItsPeersRequestIsHandledLeavesBeforeTheAck() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport tb = net.transport(DeterministicNetwork.B);
            MemoryRegion srcA = pair.a.mrAll(64), dstA = pair.a.mrAll(64);
            MemoryRegion srcB = pair.b.mrAll(64), dstB = pair.b.mrAll(64);
            pair.a.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(srcA, 0, 64)
                    .remote(dstB.address(), dstB.rkey())
                    .signaled(true));
            DeterministicNetwork.Packet ping = net.inFlight.poll();
            assertNotNull(ping);
            net.log.clear();
            // B's drive handles the ping and, before its end, B's application posts the pong (a ping-pong's answer):
            // the ACK B owes for the ping goes with the pong, after it
            tb.driveForTest(() -> {
                net.handleInDrive(ping);
                pair.b.qp.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.RDMA_WRITE)
                        .buffer(srcB, 0, 64)
                        .remote(dstA.address(), dstA.rkey())
                        .signaled(true));
            });
            assertEquals(2, net.log.size(), "the pong and one ACK");
            assertEquals(Opcode.RDMA_WRITE_ONLY.code(), net.log.get(0).opcode(), "the answer first");
            assertEquals(Opcode.ACKNOWLEDGE.code(), net.log.get(1).opcode(), "then the ACK it carries");
        }
    }

    /**
     * The ACK held for a request to carry ({@link CarriedAcks}), on the device's manual clock: a polling thread that
     * handles a request of a peer that takes carried ACKs keeps its ACK (for its next post on the QP to carry), and when
     * it neither posts nor polls again the device's receive thread sends it once nobody has polled for {@link
     * ProgressEngine#POLL_QUIET_NANOS} (1 ms), half the least retransmission timeout a requester uses (2 ms; 67 ms at
     * the usual timeout 14).
     */
    @Test
    void aHeldAckLeavesOnceThePollerHasBeenQuietForAMillisecond() {
        EngineRig.InboundLink link = new EngineRig.InboundLink();
        try (EngineRig rig = new EngineRig(new EngineRig.Opts(), link)) {
            MemoryRegion dst = rig.mrBindable(64);
            link.arrive(
                    EngineRig.request(Opcode.RDMA_WRITE_ONLY, EngineRig.PEER_PSN, 64)
                            .reth(dst.address(), dst.rkey(), 64)
                            .payload(64, 3)
                            .takesAcks(),
                    rig.qp.qpNum());
            long polledAt = rig.clock.nanoTime();
            WorkCompletion[] wcs = WorkCompletion.array(1);
            assertEquals(0, rig.cq.poll(wcs), "a WRITE completes nothing at the responder");
            assertEquals(0, link.waiting(), "the poll took the request");
            assertEquals(EngineRig.PEER_PSN + 1, rig.qp.responder.expectedPsn, "and executed it");
            assertTrue(rig.drain().isEmpty(), "the ACK is held for the poller's next post");
            ProgressEngine engine = rig.transport.progress();
            long waitMore = engine.doWork(polledAt + ProgressEngine.POLL_QUIET_NANOS - 1);
            assertEquals(1, waitMore, "the receive thread waits out the quiet time");
            assertTrue(rig.drain().isEmpty(), "still held");
            engine.doWork(polledAt + ProgressEngine.POLL_QUIET_NANOS);
            var sent = rig.drain();
            assertEquals(1, sent.size(), "the ACK, after 1 ms");
            assertEquals(Opcode.ACKNOWLEDGE.code(), sent.getFirst().opcode());
            assertEquals(EngineRig.PEER_PSN, sent.getFirst().psn());
            assertTrue(
                    ProgressEngine.POLL_QUIET_NANOS < SoftQp.MIN_TIMEOUT_NANOS,
                    "the delay stays under the least retransmission timeout a QP of this device uses");
        }
    }
}
