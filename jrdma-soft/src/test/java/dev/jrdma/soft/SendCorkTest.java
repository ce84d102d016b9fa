package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The sender's cork ({@link SendCork}, issue 23) and where requests set AckReq, on two jrdma devices joined by the
 * test ({@link DeterministicNetwork}, manual clock): a post with nothing in flight leaves at once; posts made while
 * packets are in flight wait and leave together at the next poll, ACK, full batch or deadline; nothing is lost or
 * doubled when the network loses, reorders and duplicates packets.
 */
@Timeout(120)
class SendCorkTest {
    private static SendWorkRequest write(MemoryRegion src, MemoryRegion dst, long off, int len, boolean signalled) {
        return new SendWorkRequest()
                .wrId(off)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(src, off, len)
                .remote(dst.address() + off, dst.rkey())
                .signaled(signalled);
    }

    /** A pair whose QPs know each other as jrdma devices (the cork's condition), nothing in flight. */
    private static RcPair jrdmaPair(DeterministicNetwork net, MemoryRegion[] mrs, long size) {
        RcPair pair = net.pair();
        mrs[0] = pair.a.mrAll(size);
        mrs[1] = pair.b.mrAll(size);
        SelectiveRepeatTest.offerTheMode(net, pair, mrs[0], mrs[1]);
        assertTrue(soft(pair.a.qp).out.toJrdmaPeer());
        return pair;
    }

    private static long counter(DeterministicNetwork net, Counter c) {
        return net.transport(DeterministicNetwork.A).counters.get(c);
    }

    @Test
    void aBurstPostedWhilePacketsAreInFlightLeavesAsOneBatchAtThePoll() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 4096)) {
            RcPair.fill(mr[0].segment(), 4096, 5);
            int before = net.log.size();
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, false));
            assertEquals(before + 1, net.log.size(), "nothing in flight: the first post leaves at once");
            for (int i = 1; i <= 10; i++) pair.a.qp.postSend(write(mr[0], mr[1], 64L * i, 64, i == 10));
            assertEquals(before + 1, net.log.size(), "packets in flight: the next posts wait");
            assertEquals(10, counter(net, Counter.TX_CORKED_POSTS));
            assertTrue(soft(pair.a.qp).cork.holding());

            assertEquals(0, pair.a.cq.poll(WorkCompletion.array(4)), "nothing is complete yet");
            assertEquals(before + 11, net.log.size(), "the poll sent the ten held posts");
            assertFalse(soft(pair.a.qp).cork.holding());
            assertEquals(1, counter(net, Counter.TX_CORK_RELEASES));
            List<DeterministicNetwork.Packet> batch = net.log.subList(before + 1, before + 11);
            for (int i = 0; i < 9; i++) assertFalse(batch.get(i).ackReq(), "one run: only its last packet asks");
            assertTrue(batch.get(9).ackReq());

            net.deliver();
            WorkCompletion wc = pair.awaitOk(pair.a.cq);
            assertEquals(640, wc.wrId, "the signalled last WRITE");
            RcPair.assertFilled(mr[1].segment(), 0, 704, 5);
            assertEquals(0, net.retransmissions());
        }
    }

    @Test
    void anAckReleasesWhatTheCorkHolds() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 4096)) {
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, false));
            pair.a.qp.postSend(write(mr[0], mr[1], 64, 64, true));
            assertTrue(soft(pair.a.qp).cork.holding());
            net.deliver(); // the first WRITE's ACK comes back and the requester sends the second
            assertEquals(64, pair.awaitOk(pair.a.cq).wrId);
            assertEquals(0, counter(net, Counter.TX_CORK_RELEASES), "no poll, no deadline: the ACK sent it");
        }
    }

    @Test
    void aPostWithNothingInFlightOrToAPeerThatIsNotJrdmaLeavesAtOnce() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 4096)) {
            for (int i = 0; i < 3; i++) { // a ping-pong of WRITEs: each one's ACK is in before the next post
                int before = net.log.size();
                pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, true));
                assertEquals(before + 1, net.log.size());
                net.deliver();
                pair.awaitOk(pair.a.cq);
            }
            assertEquals(0, counter(net, Counter.TX_CORKED_POSTS));
        }
        DeterministicNetwork other = DeterministicNetwork.faultless();
        try (RcPair pair = other.pair()) {
            soft(pair.b.qp).selectiveRepeat = false; // B plays rxe: A never learns it is jrdma
            MemoryRegion src = pair.a.mrAll(4096), dst = pair.b.mrAll(4096);
            for (int i = 0; i < 4; i++) pair.a.qp.postSend(write(src, dst, 64L * i, 64, true));
            assertEquals(4, other.log.size(), "every post at once");
            assertEquals(0, other.transport(DeterministicNetwork.A).counters.get(Counter.TX_CORKED_POSTS));
            other.deliver();
            assertEquals(4, pair.awaitAll(pair.a.cq, 4).size());
        }
    }

    @Test
    void aPostFollowedByNoPollLeavesAtTheDeadline() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 4096)) {
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, false));
            pair.a.qp.postSend(write(mr[0], mr[1], 64, 64, true));
            int size = net.log.size();
            assertTrue(soft(pair.a.qp).nextDeadline() != 0);
            net.advance(SendCork.DEADLINE_NANOS - 1);
            assertEquals(size, net.log.size(), "before the deadline it waits");
            net.advance(1); // the timer fires on the manual clock
            assertEquals(size + 1, net.log.size(), "at the deadline it leaves");
            assertEquals(1, counter(net, Counter.TX_CORK_RELEASES));
            assertFalse(soft(pair.a.qp).cork.holding());
            for (int i = 0; i < 3; i++) { // no poll: each time the deadline sends what is held, listed once
                pair.a.qp.postSend(write(mr[0], mr[1], 128, 64, false));
                net.advance(SendCork.DEADLINE_NANOS);
            }
            assertEquals(size + 4, net.log.size());
            assertEquals(1, net.transport(DeterministicNetwork.A).corkedQps(), "on the list once");
            net.deliver();
            assertEquals(64, pair.awaitOk(pair.a.cq).wrId);
            assertEquals(0, net.transport(DeterministicNetwork.A).corkedQps(), "the poll took it off");
        }
    }

    @Test
    void aFullBatchOrA64KiBMessageLeavesWithoutWaiting() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 1 << 17)) {
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, false));
            int size = net.log.size();
            for (int i = 1; i < TxBatch.CAPACITY; i++) pair.a.qp.postSend(write(mr[0], mr[1], 64L * i, 64, false));
            assertEquals(size, net.log.size(), "31 packets held");
            pair.a.qp.postSend(write(mr[0], mr[1], 64L * TxBatch.CAPACITY, 64, false));
            assertEquals(size + TxBatch.CAPACITY, net.log.size(), "the 32nd fills the batch: all leave");
            size = net.log.size();
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64 << 10, true)); // 64 packets at MTU 1024
            assertEquals(size + 64, net.log.size(), "64 KiB leaves at once");
            assertEquals(0, counter(net, Counter.TX_CORK_RELEASES));
            net.deliver();
            assertEquals(0, pair.awaitOk(pair.a.cq).wrId);
        }
    }

    @Test
    void heldPostsOfAQpThatFailsAreFlushedAndItsDeadlineCleared() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        MemoryRegion[] mr = new MemoryRegion[2];
        try (RcPair pair = jrdmaPair(net, mr, 4096)) {
            pair.a.qp.postSend(write(mr[0], mr[1], 0, 64, true));
            pair.a.qp.postSend(write(mr[0], mr[1], 64, 64, true));
            assertTrue(soft(pair.a.qp).cork.holding());
            pair.a.qp.modify(new QpAttr().state(QpState.ERR));
            List<WorkCompletion> wcs = pair.awaitAll(pair.a.cq, 2);
            assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status);
            net.advance(SendCork.DEADLINE_NANOS);
            assertEquals(0, soft(pair.a.qp).cork.deadline, "the timer does not fire for it again and again");
        }
    }

    /**
     * AckReq as NICs set it: on the last packet of a signalled message, on the last one sent before the requester
     * stops, and once per quarter of the send queue (16 here, less than a quarter window) in a run of unsignalled ones.
     */
    @Test
    void ackReqOnSignalledAndLastPacketsAndEveryQuarterSendQueue() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair =
                RcPair.on(net).qp(q -> q.maxSendWr(16).maxRecvWr(16)).cqe(64).build()) {
            assertEquals(4, soft(pair.a.qp).requester.ackEvery);
            MemoryRegion src = pair.a.mrAll(4096), dst = pair.b.mrAll(4096);
            SendWorkRequest first = null, last = null;
            for (int i = 0; i < 14; i++) { // one list: one run of the requester
                SendWorkRequest wr = write(src, dst, 64L * i, 64, i == 5);
                if (first == null) first = wr;
                else last.next(wr);
                last = wr;
            }
            pair.a.qp.postSend(first);
            StringBuilder asks = new StringBuilder();
            for (DeterministicNetwork.Packet pk : net.log) asks.append(pk.ackReq() ? 'A' : '.');
            // packets 1-4 (the 4th asks), 5-6 (the 6th is signalled), then 7-10, 11-14 (the last sent)
            assertEquals("...A.A...A...A", asks.toString());
            net.deliver();
            assertEquals(5, pair.awaitOk(pair.a.cq).wrId / 64);
        }
    }

    /**
     * Many SENDs posted as perftest posts them (up to the queue's depth, then a poll) on a network that loses, reorders
     * and duplicates packets: every message arrives once, in order, with its bytes, and the cork was in use.
     */
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {3, 4})
    void sendsUnderLossArriveOnceInOrder(long seed) {
        DeterministicNetwork net = DeterministicNetwork.sharing(0.06, seed);
        int messages = 3000, depth = 64, size = 64;
        MemoryRegion[] mr = new MemoryRegion[2];
        net.keepLog = false;
        try (RcPair pair = jrdmaPair(net, mr, (long) size * 256)) {
            MemoryRegion src = mr[0], dst = mr[1];
            int[] posted = {0}, sent = {0}, received = {0};
            for (int j = 0; j < 128; j++) pair.b.qp.postRecv(recv(dst, j, size));
            WorkCompletion[] wcs = WorkCompletion.array(32);
            net.runUntil(
                    () -> {
                        int n = pair.a.cq.poll(wcs);
                        for (int i = 0; i < n; i++) assertEquals(WcStatus.SUCCESS, wcs[i].status);
                        sent[0] += n;
                        while (posted[0] < messages && posted[0] - sent[0] < depth) {
                            int i = posted[0]++;
                            long off = (long) size * (i % depth);
                            RcPair.fill(src.segment(), off, size, i);
                            pair.a.qp.postSend(new SendWorkRequest()
                                    .wrId(i)
                                    .opcode(WrOpcode.SEND)
                                    .buffer(src, off, size)
                                    .signaled(true));
                        }
                        int m = pair.b.cq.poll(wcs);
                        for (int k = 0; k < m; k++) {
                            WorkCompletion wc = wcs[k];
                            assertEquals(WcStatus.SUCCESS, wc.status);
                            assertEquals(WcOpcode.RECV, wc.opcode);
                            int j = (int) wc.wrId, i = received[0]++;
                            assertEquals(i % 128, j, "in order");
                            RcPair.assertFilled(dst.segment(), (long) size * j, size, i);
                            pair.b.qp.postRecv(recv(dst, j, size));
                        }
                        return sent[0] == messages && received[0] == messages;
                    },
                    100_000,
                    600_000_000_000L);
            assertTrue(counter(net, Counter.TX_CORKED_POSTS) > 0, "the cork held posts");
            assertTrue(net.dropped > 0 && net.duplicated > 0, "the network lost and doubled packets");
        }
    }

    private static RecvWorkRequest recv(MemoryRegion dst, int slot, int size) {
        return new RecvWorkRequest().wrId(slot).buffer(dst, (long) size * slot, size);
    }
}
