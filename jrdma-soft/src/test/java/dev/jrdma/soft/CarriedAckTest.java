package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.CarriedAck;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * jrdma's carried ACKs ({@link CarriedAcks}, issue 23 §2) on two devices joined by the test ({@link DeterministicNetwork},
 * manual clock) and on one QP fed by hand ({@link EngineRig}): negotiated in band between jrdma QPs and never toward a
 * peer that did not offer, one datagram per half round trip of a ping-pong, the bound on a held ACK, what a forged or
 * malformed one gets, coalescing, and loss of packets that carry ACKs.
 */
@Timeout(60)
class CarriedAckTest {
    private static boolean carries(DeterministicNetwork.Packet pk) {
        return Bth.carriesAck(ByteBuffer.wrap(pk.bytes()), 0);
    }

    private static boolean offers(DeterministicNetwork.Packet pk) {
        return Bth.takesAcks(ByteBuffer.wrap(pk.bytes()), 0);
    }

    private static SendWorkRequest write(MemoryRegion src, MemoryRegion dst, int len) {
        return new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(src, 0, len)
                .remote(dst.address(), dst.rkey())
                .signaled(true);
    }

    /**
     * perftest's write_lat on two jrdma devices: each side's application handles what arrived in a poll (a polling
     * thread's drive) and posts its WRITE right after. The first answer goes with the ACK alone (nothing is negotiated
     * yet: the first request came before its requester knew the peer was jrdma); from then on every half round trip is
     * one datagram, the answer carrying the ACK of the request it answers. The last ACK, with no request to carry it,
     * leaves alone at the next drive; every WRITE completes, nothing is sent again.
     */
    @Test
    void aPingPongSendsOneDatagramPerHalfRoundTripOnceNegotiated() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion a = pair.a.mrAll(64), b = pair.b.mrAll(64);
            SendWorkRequest toB = write(a, b, 64), toA = write(b, a, 64);
            int rounds = 20;
            pair.a.qp.postSend(toB);
            List<Integer> datagrams = new ArrayList<>();
            List<DeterministicNetwork.Packet> answers = new ArrayList<>();
            for (int i = 0; i < 2 * rounds - 1; i++) {
                boolean atB = i % 2 == 0;
                int before = net.log.size();
                pollDrive(net, atB ? tb : ta);
                (atB ? pair.b.qp : pair.a.qp).postSend(atB ? toA : toB);
                datagrams.add(net.log.size() - before);
                answers.add(net.log.getLast());
            }
            assertEquals(2, datagrams.getFirst(), "the first answer, then its ACK alone");
            assertFalse(offers(net.log.getFirst()), "the first request: A does not know B yet");
            assertTrue(offers(answers.getFirst()), "B's answer offers: A's request showed it is jrdma");
            for (int i = 1; i < datagrams.size(); i++) {
                assertEquals(1, datagrams.get(i), "half round trip " + i + ": " + datagrams);
                assertTrue(carries(answers.get(i)), "the answer carries the ACK of the request it answers");
            }
            assertEquals(Opcode.RDMA_WRITE_ONLY.code(), answers.getLast().opcode());
            // A handles B's last answer and posts nothing: its ACK is held one drive, then leaves alone
            int before = net.log.size();
            pollDrive(net, ta);
            assertEquals(before, net.log.size(), "held for a request to carry");
            ta.pollDriveForTest(() -> {}); // A's next poll, with nothing arrived
            assertEquals(before + 1, net.log.size());
            assertEquals(Opcode.ACKNOWLEDGE.code(), net.log.getLast().opcode(), "the ACK alone");
            pollDrive(net, tb);
            assertEquals(rounds, drainOk(pair.a.cq), "every WRITE of A completed");
            assertEquals(rounds, drainOk(pair.b.cq), "every WRITE of B completed");
            assertEquals(0, ta.counters.get(Counter.RETRANSMITS) + tb.counters.get(Counter.RETRANSMITS));
            assertEquals(
                    2L * rounds - 2,
                    ta.counters.get(Counter.TX_CARRIED_ACKS) + tb.counters.get(Counter.TX_CARRIED_ACKS));
            assertEquals(
                    ta.counters.get(Counter.TX_CARRIED_ACKS), tb.counters.get(Counter.RX_CARRIED_ACKS), "B took each");
            assertEquals(0, ta.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_MALFORMED));
        }
    }

    /**
     * The same ping-pong, once negotiated, reads the clock twice per half round trip: the carried ACK's progress (its
     * round-trip sample and the retry timer's stop) and the answer's send (a new sample and the timer's start, one read
     * for both; main read it once more for the timer).
     */
    @Test
    void aPingPongReadsTheClockTwicePerHalfRoundTrip() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion a = pair.a.mrAll(64), b = pair.b.mrAll(64);
            SendWorkRequest toB = write(a, b, 64), toA = write(b, a, 64);
            pair.a.qp.postSend(toB);
            int hops = 40, warm = 4;
            long readsBefore = 0;
            int packetsBefore = 0;
            for (int i = 0; i < hops; i++) {
                if (i == warm) {
                    readsBefore = net.clock.reads;
                    packetsBefore = net.log.size();
                }
                boolean atB = i % 2 == 0;
                pollDrive(net, atB ? tb : ta);
                (atB ? pair.b.qp : pair.a.qp).postSend(atB ? toA : toB);
            }
            int packets = net.log.size() - packetsBefore;
            assertEquals(hops - warm, packets, "one datagram per half round trip");
            assertEquals(
                    2L * (hops - warm),
                    net.clock.reads - readsBefore - packets, // the test network dates each packet it carries
                    "two clock reads per half round trip");
        }
    }

    /** Hands what is in flight to {@code t} in one polling thread's drive. */
    private static void pollDrive(DeterministicNetwork net, Transport t) {
        List<DeterministicNetwork.Packet> arrived = List.copyOf(net.inFlight);
        net.inFlight.clear();
        for (DeterministicNetwork.Packet pk : arrived) assertSame(t, pk.to());
        t.pollDriveForTest(() -> arrived.forEach(net::handleInDrive));
    }

    private static int drainOk(dev.jrdma.verbs.CompletionQueue cq) {
        WorkCompletion[] wcs = WorkCompletion.array(64);
        int total = 0;
        for (int n; (n = cq.poll(wcs)) > 0; total += n)
            for (int i = 0; i < n; i++) assertEquals(WcStatus.SUCCESS, wcs[i].status, wcs[i].toString());
        return total;
    }

    /**
     * A jrdma QP with carried ACKs off, and a peer as rxe is (no selective-repeat mark, no offer): nothing is offered
     * to it, no ACK rides in a request either way, every answer is followed by its ACK alone, and the other side's
     * packets carry none of the carried-ACK bits.
     */
    @Test
    void neverTowardAPeerThatDidNotOffer() {
        for (boolean rxeLike : new boolean[] {false, true}) {
            DeterministicNetwork net = DeterministicNetwork.faultless();
            try (RcPair pair = net.pair()) {
                Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
                soft(pair.b.qp).carried.enabled = false;
                if (rxeLike) soft(pair.b.qp).selectiveRepeat = false;
                MemoryRegion a = pair.a.mrAll(64), b = pair.b.mrAll(64);
                SendWorkRequest toB = write(a, b, 64), toA = write(b, a, 64);
                pair.a.qp.postSend(toB);
                for (int i = 0; i < 9; i++) {
                    boolean atB = i % 2 == 0;
                    int before = net.log.size();
                    pollDrive(net, atB ? tb : ta);
                    (atB ? pair.b.qp : pair.a.qp).postSend(atB ? toA : toB);
                    assertEquals(2, net.log.size() - before, "the answer and its ACK, half round trip " + i);
                }
                for (DeterministicNetwork.Packet pk : net.log) {
                    assertFalse(carries(pk), "no ACK rides in a request");
                    if (pk.from() == tb) assertFalse(offers(pk), "B offers nothing");
                    if (rxeLike && pk.from() == ta)
                        assertFalse(offers(pk), "A offers nothing to a peer it does not know as jrdma");
                }
                assertEquals(0, ta.counters.get(Counter.TX_CARRIED_ACKS) + tb.counters.get(Counter.TX_CARRIED_ACKS));
                assertEquals(0, ta.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_MALFORMED));
            }
        }
    }

    /**
     * Losses of the packets that carry ACKs (every fifth, on top of 3% of all packets) in a send_lat ping-pong in the
     * selective-repeat mode: each lost answer and the ACK it carried are recovered (the answer by its requester's
     * retransmission, the ACK by the next ACK or the re-ACK of a duplicate), every message arrives once and in order,
     * and nothing is dropped as malformed.
     */
    @Test
    void lostPacketsThatCarryAcksAreRecovered() {
        DeterministicNetwork net = new DeterministicNetwork(0.03, 11);
        net.keepLog = true;
        int[] carriedSeen = {0}, carriedLost = {0};
        net.drop = pk -> {
            if (!carries(pk) || ++carriedSeen[0] % 5 != 0) return false;
            carriedLost[0]++;
            return true;
        };
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion a = pair.a.mrAll(64), b = pair.b.mrAll(64);
            int rounds = 150;
            PingPongSide sa = new PingPongSide(pair.a.qp, pair.a.cq, a, true),
                    sb = new PingPongSide(pair.b.qp, pair.b.cq, b, false);
            sb.postRecv();
            sa.postRecv();
            sa.send(0);
            long start = net.clock.nanoTime();
            while (sa.received < rounds || sb.received < rounds) {
                assertTrue(
                        net.clock.nanoTime() - start < 60_000_000_000L, "stuck at " + sa.received + "/" + sb.received);
                if (net.idle()) {
                    net.tick(); // the timers: retransmissions
                    continue;
                }
                net.pollerDrives = true;
                net.deliverRound();
                sa.answer(rounds);
                sb.answer(rounds);
                ta.pollDriveForTest(() -> {}); // each application polls again: what no request carried leaves alone
                tb.pollDriveForTest(() -> {});
            }
            net.pollerDrives = false;
            assertTrue(carriedLost[0] > 5, "packets carrying an ACK lost: " + carriedLost[0]);
            assertTrue(ta.counters.get(Counter.TX_CARRIED_ACKS) > rounds / 2, "ACKs carried");
            assertEquals(0, ta.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_MALFORMED));
            net.runUntil(
                    () -> {
                        sa.answer(rounds);
                        sb.answer(rounds);
                        return sa.completedSends == rounds && sb.completedSends == rounds;
                    },
                    1_000_000,
                    10_000_000_000L);
        }
    }

    /** One side of a send_lat ping-pong: message {@code k} carries {@code k}; each received one is answered with the next. */
    private static final class PingPongSide {
        final QueuePair qp;
        final dev.jrdma.verbs.CompletionQueue cq;
        final MemoryRegion mr;
        final boolean first;
        int received, completedSends;
        private final WorkCompletion[] wcs = WorkCompletion.array(16);

        PingPongSide(QueuePair qp, dev.jrdma.verbs.CompletionQueue cq, MemoryRegion mr, boolean first) {
            this.qp = qp;
            this.cq = cq;
            this.mr = mr;
            this.first = first;
        }

        void postRecv() {
            qp.postRecv(new RecvWorkRequest().wrId(1).buffer(mr, 32, 8));
        }

        void send(int k) {
            mr.segment().set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 0, k);
            qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .buffer(mr, 0, 8)
                    .signaled(true));
        }

        /** Polls; answers each message received (the first side stops after {@code rounds}). */
        void answer(int rounds) {
            for (int n; (n = cq.poll(wcs)) > 0; ) {
                for (int i = 0; i < n; i++) {
                    WorkCompletion wc = wcs[i];
                    assertEquals(WcStatus.SUCCESS, wc.status, wc.toString());
                    if (wc.opcode == WcOpcode.SEND) {
                        completedSends++;
                        continue;
                    }
                    int k = mr.segment().get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 32);
                    assertEquals(first ? 2 * received + 1 : 2 * received, k, "messages arrive once and in order");
                    received++;
                    postRecv();
                    if (!first || received < rounds) send(k + 1);
                }
            }
        }
    }

    // ---- one QP fed by hand ----------------------------------------------------------------------------------

    /** The rig's QP has taken the peer's offer with the peer's first request (executed in sequence) and holds its ACK. */
    private static MemoryRegion negotiated(EngineRig rig, EngineRig.InboundLink link, int requests) {
        MemoryRegion dst = rig.mrBindable(4096);
        for (int i = 0; i < requests; i++)
            link.arrive(
                    EngineRig.request(Opcode.RDMA_WRITE_ONLY, EngineRig.PEER_PSN + i, 64)
                            .reth(dst.address() + 64L * i, dst.rkey(), 64)
                            .payload(64, i)
                            .takesAcks(),
                    rig.qp.qpNum());
        rig.cq.poll(WorkCompletion.array(1)); // the application's poll: one drive takes them all
        assertEquals(EngineRig.PEER_PSN + requests, rig.qp.responder.expectedPsn);
        assertTrue(rig.qp.carried.peerTakes, "the offer was taken");
        assertTrue(rig.drain().isEmpty(), "the ACK is held for a request to carry");
        return dst;
    }

    /**
     * The ACK held for a run of requests is one ACK, for the last, and rides in the next request the QP posts: its PSN,
     * an ACK's syndrome and the MSN, as the ACK alone would have said; nothing else goes.
     */
    @Test
    void theNextRequestCarriesOneAckForTheRun() {
        EngineRig.InboundLink link = new EngineRig.InboundLink();
        try (EngineRig rig = new EngineRig(new EngineRig.Opts(), link)) {
            MemoryRegion dst = negotiated(rig, link, 3);
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(write(src, dst, 64)); // (the peer's memory: only the packet matters)
            RocePacket p = rig.one();
            assertEquals(Opcode.RDMA_WRITE_ONLY.code(), p.opcode());
            assertEquals(64, p.payloadLength(), "the payload as before");
            assertTrue(p.carriesAck());
            ByteBuffer b = p.buffer();
            int at = p.carriedAckOffset();
            assertTrue(CarriedAck.wellFormed(b, at));
            assertEquals(EngineRig.PEER_PSN + 2, CarriedAck.psn(b, at), "one ACK for the run, at its last PSN");
            assertEquals(Aeth.TYPE_ACK, Aeth.type(CarriedAck.syndrome(b, at)));
            assertEquals(3, CarriedAck.msn(b, at), "three messages done");
            assertEquals(1, rig.count(Counter.TX_CARRIED_ACKS));
            rig.transport.progress().progressFromPoll(rig.clock.nanoTime());
            assertTrue(rig.drain().isEmpty(), "nothing owed any more");
        }
    }

    /** A request that would outgrow a full-MTU packet carries nothing: the ACK leaves alone right after it. */
    @Test
    void aFullMtuRequestCarriesNothingAndTheAckLeavesAfterIt() {
        EngineRig.InboundLink link = new EngineRig.InboundLink();
        try (EngineRig rig = new EngineRig(new EngineRig.Opts(), link)) {
            MemoryRegion dst = negotiated(rig, link, 1);
            MemoryRegion src = rig.mrBindable(1024);
            rig.qp.postSend(write(src, dst, 1024));
            List<RocePacket> sent = rig.drain();
            assertEquals(2, sent.size(), EngineRig.describe(sent));
            assertFalse(sent.get(0).carriesAck());
            assertEquals(1024, sent.get(0).payloadLength());
            assertEquals(Opcode.ACKNOWLEDGE.code(), sent.get(1).opcode());
            assertEquals(EngineRig.PEER_PSN, sent.get(1).psn());
        }
    }

    /** The bound: a held ACK with no request to carry it leaves alone at the polling thread's next drive. */
    @Test
    void aHeldAckLeavesAloneAtTheNextDrive() {
        EngineRig.InboundLink link = new EngineRig.InboundLink();
        try (EngineRig rig = new EngineRig(new EngineRig.Opts(), link)) {
            negotiated(rig, link, 1);
            rig.cq.poll(WorkCompletion.array(1)); // the next poll: nothing arrived
            RocePacket ack = rig.one();
            assertEquals(Opcode.ACKNOWLEDGE.code(), ack.opcode());
            assertEquals(EngineRig.PEER_PSN, ack.psn());
            assertFalse(ack.carriesAck());
        }
    }

    /**
     * A held ACK still leaves when the application destroys the QP or moves it to RESET right after the poll that
     * received the request (as a NIC's ACK would have left at once): otherwise the peer would resend into a QP that is
     * gone and end in RETRY_EXC_ERR (a process that read its last message and closed its device, NetnsTest's initiator).
     */
    @Test
    void aHeldAckLeavesWhenTheQpIsDestroyedOrReset() {
        for (boolean destroy : new boolean[] {true, false}) {
            EngineRig.InboundLink link = new EngineRig.InboundLink();
            try (EngineRig rig = new EngineRig(new EngineRig.Opts(), link)) {
                negotiated(rig, link, 1);
                if (destroy) rig.qp.close();
                else rig.qp.modify(new dev.jrdma.verbs.QpAttr().state(dev.jrdma.verbs.QpState.RESET));
                RocePacket ack = rig.one();
                assertEquals(Opcode.ACKNOWLEDGE.code(), ack.opcode(), destroy ? "destroyed" : "reset");
                assertEquals(EngineRig.PEER_PSN, ack.psn());
            }
        }
    }

    /** The authenticated mode: the tag covers the carried ACK (what the QP sends verifies; a changed ACK does not). */
    @Test
    void theAuthenticatedModeCoversTheCarriedAck() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.authKey = new byte[16];
        for (int i = 0; i < 16; i++) o.authKey[i] = (byte) (i * 7 + 1);
        EngineRig.InboundLink link = new EngineRig.InboundLink();
        try (EngineRig rig = new EngineRig(o, link)) {
            MemoryRegion src = rig.mrBindable(64), dst = rig.mrBindable(64);
            rig.qp.postSend(write(src, dst, 64)); // outstanding: MY_PSN
            rig.drain();
            EngineRig.Pkt req = EngineRig.request(Opcode.RDMA_WRITE_ONLY, EngineRig.PEER_PSN, 64)
                    .reth(dst.address(), dst.rkey(), 64)
                    .payload(64, 1)
                    .takesAcks()
                    .carriedAck(false, EngineRig.MY_PSN, Aeth.ackSyndrome(Aeth.CREDITS_INVALID), 1);
            // signed, then the carried PSN changed: the tag no longer fits
            assertFalse(rig.feedWireTampered(req, rig.peerAuth, b -> b.put(req.len - 4 - 8 + 3, (byte) 0x55)));
            assertEquals(1, rig.count(Counter.RX_BAD_MAC));
            assertEquals(EngineRig.PEER_PSN, rig.qp.responder.expectedPsn, "nothing executed");
            rig.assertNoCompletion();
            // signed as sent: taken (in a polling thread's drive, which holds the QP's own ACK for a request to carry)
            rig.transport.pollDriveForTest(() -> assertTrue(rig.feedWire(req, rig.peerAuth)));
            assertEquals(1, rig.count(Counter.RX_CARRIED_ACKS));
            assertEquals(WcStatus.SUCCESS, rig.poll().status, "the carried ACK completed the WRITE");
            // and the QP's own carried ACK goes signed (drain checks every tag)
            rig.qp.postSend(write(src, dst, 64));
            RocePacket p = rig.one();
            assertTrue(p.carriesAck());
            assertEquals(EngineRig.PEER_PSN, CarriedAck.psn(p.buffer(), p.carriedAckOffset()));
        }
    }

    /**
     * What arrives carried is checked as the same ACK alone: one in the window completes the QP's request; one outside
     * it is a counted drop while the request it rode in is still executed; a malformed one (a flag jrdma never sets, a
     * NAK's syndrome), one in a response, one to a QP that never offered and one that leaves no room for itself drop the
     * whole packet as malformed.
     */
    @Test
    void aForgedOrMalformedCarriedAckIsDroppedAndCounted() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(64), dst = rig.mrBindable(4096);
            rig.qp.postSend(write(src, dst, 64)); // outstanding: MY_PSN
            rig.drain();
            int psn = EngineRig.PEER_PSN;
            int ack = Aeth.ackSyndrome(Aeth.CREDITS_INVALID);
            // out of the window: dropped as an ACK alone would be; the request is executed
            long outOfWindow = rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW);
            assertTrue(rig.feedWire(req(dst, psn).carriedAck(false, EngineRig.MY_PSN + 5, ack, 0), null));
            assertEquals(outOfWindow + 1, rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW));
            assertEquals(psn + 1, rig.qp.responder.expectedPsn, "the request it rode in executed");
            rig.assertNoCompletion();
            psn++;
            long malformed = rig.count(Counter.RX_MALFORMED);
            // malformed: a flag jrdma never sets, a NAK's syndrome
            EngineRig.Pkt flagged = req(dst, psn).carriedAck(false, EngineRig.MY_PSN, ack, 0);
            flagged.buf.put(flagged.len - 4 - 8, (byte) 0x01);
            rig.feedWire(flagged, null); // (it reaches the QP, which drops it)
            rig.feedWire(
                    req(dst, psn)
                            .carriedAck(false, EngineRig.MY_PSN, Aeth.nakSyndrome(Aeth.NAK_REMOTE_ACCESS_ERROR), 0),
                    null);
            // in a response
            rig.feedWire(EngineRig.ack(EngineRig.MY_PSN).carriedAck(false, EngineRig.MY_PSN, ack, 0), null);
            // no room for itself: the bit on a request 4 bytes too short
            EngineRig.Pkt shortOne = req(dst, psn);
            Bth.setCarriesAck(shortOne.buf, 0, true);
            shortOne.len = dev.jrdma.soft.wire.Opcode.headerLength(Opcode.RDMA_WRITE_ONLY.code()) + 4;
            assertFalse(rig.feedWire(shortOne, null), "dropped before it reaches the QP");
            assertEquals(malformed + 4, rig.count(Counter.RX_MALFORMED));
            assertEquals(psn, rig.qp.responder.expectedPsn, "none of them executed");
            rig.assertNoCompletion();
            // a QP that never offered takes none
            rig.qp.carried.enabled = false;
            rig.feedWire(req(dst, psn).carriedAck(false, EngineRig.MY_PSN, ack, 0), null);
            assertEquals(malformed + 5, rig.count(Counter.RX_MALFORMED));
            rig.qp.carried.enabled = true;
            // in the window: the QP's WRITE completes, the request is executed
            assertTrue(rig.feedWire(req(dst, psn).carriedAck(false, EngineRig.MY_PSN, ack, 1), null));
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
            assertEquals(psn + 1, rig.qp.responder.expectedPsn);
            assertEquals(2, rig.count(Counter.RX_CARRIED_ACKS), "the two well-formed ones reached the completer");
        }
    }

    private static EngineRig.Pkt req(MemoryRegion dst, int psn) {
        return EngineRig.request(Opcode.RDMA_WRITE_ONLY, psn, 64)
                .reth(dst.address(), dst.rkey(), 64)
                .payload(64, psn);
    }
}
