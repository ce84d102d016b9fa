package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.Reth;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 23 §4, IRN proper on the deterministic network (manual clock): WRITE packets beyond a gap placed where they
 * belong (once), every opcode through holes with completions in order, the requester's window running past a hole,
 * and the in-band negotiation of the mode (on between jrdma peers, off against a peer without it, a forged offer
 * ignored).
 */
@Timeout(120)
class IrnTest {
    static final int MTU = 1024;

    /**
     * One WRITE of 16 packets whose second is lost: the 14 after it are placed in B's memory as they arrive (before the
     * gap is filled), and when the resent packet fills the gap they are only counted in, not copied again (bytes
     * overwritten at B in between stay overwritten).
     */
    @Test
    void writePacketsBeyondAGapArePlacedWhereTheyBelongOnce() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = 16 * MTU;
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), len, 31);
            int first = soft(pair.a.qp).requester.nextPsn;
            Set<Integer> lost = new HashSet<>();
            boolean[] holdResend = {true};
            net.drop = p -> {
                if (p.from() != ta || p.psn() != Psn.add(first, 1)) return false;
                if (lost.add(p.psn())) return true; // the first copy is lost
                if (!holdResend[0]) return false;
                net.heldBack.add(p); // the resend waits until the test looked at B's memory
                return true;
            };
            pair.postWrite(1, src, dst, len);
            net.deliverRound(); // the 15 packets that arrive
            net.deliverRound(); // B's marked NAK at A: A sends the lost packet again (held back)
            assertEquals(14, tb.counters.get(Counter.RX_OUT_OF_ORDER_PLACED), "every packet after the gap placed");
            MemorySegment d = dst.segment(), s = src.segment();
            assertEquals(-1, mismatch(d, s, 2L * MTU, len), "placed before the gap is filled");
            assertNotEquals(-1, mismatch(d, s, MTU, 2L * MTU), "the lost packet's bytes are not there yet");
            d.asSlice(5L * MTU, MTU).fill((byte) 0x77); // a probe: a second copy of packet 5 would overwrite this
            holdResend[0] = false;
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 1_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            assertEquals(-1, mismatch(d, s, 0, 5L * MTU));
            assertEquals(-1, mismatch(d, s, 6L * MTU, len));
            for (long i = 5L * MTU; i < 6L * MTU; i++)
                assertEquals((byte) 0x77, d.get(ValueLayout.JAVA_BYTE, i), "placed once, not copied again");
            assertEquals(1, ta.counters.get(Counter.TX_SELECTIVE_RESENDS), "only the lost packet went again");
            assertEquals(0, soft(pair.b.qp).responder.heldCount(), "nothing kept once the gap is filled");
        }
    }

    /**
     * Every opcode (SEND, SEND with immediate, WRITE, WRITE with immediate, READ, compare-and-swap, fetch-and-add), 3
     * packets long where it has data, through a network that loses the first copy of every 5th request packet and of
     * every 7th response: every byte lands once and right, both ends complete in order, each atomic executes once.
     */
    @Test
    void everyOpcodeThroughHolesLandsOnceAndCompletesInOrder() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            int rounds = 12, len = 3 * MTU - 100, slot = 3 * MTU;
            long area = (long) slot * 7 * rounds;
            MemoryRegion src = pair.a.mrAll(area + 8), dst = pair.b.mrAll(area + 8);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), area, 41);
            RcPair.fill(dst.segment(), area, 43); // what the READs fetch
            MemorySegment counter = dst.segment().asSlice(area, 8);
            counter.set(ValueLayout.JAVA_LONG, 0, 0);
            Set<Integer> lost = new HashSet<>();
            net.drop = p -> (p.from() == ta ? p.psn() % 5 == 2 : p.psn() % 7 == 3)
                    && lost.add(p.psn() ^ (p.from() == ta ? 0 : 1 << 24));
            WrOpcode[] ops = {
                WrOpcode.SEND,
                WrOpcode.SEND_WITH_IMM,
                WrOpcode.RDMA_WRITE,
                WrOpcode.RDMA_WRITE_WITH_IMM,
                WrOpcode.RDMA_READ,
                WrOpcode.ATOMIC_CMP_AND_SWP,
                WrOpcode.ATOMIC_FETCH_AND_ADD
            };
            int recvs = 0;
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < ops.length; k++) {
                    long at = (long) slot * (r * ops.length + k);
                    if (ops[k] == WrOpcode.SEND || ops[k] == WrOpcode.SEND_WITH_IMM)
                        pair.b.qp.postRecv(new RecvWorkRequest().wrId(recvs++).buffer(dst, at, len));
                    else if (ops[k] == WrOpcode.RDMA_WRITE_WITH_IMM)
                        pair.b.qp.postRecv(new RecvWorkRequest().wrId(recvs++).buffer(dst, at, 0));
                }
            }
            SendWorkRequest head = null, prev = null;
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < ops.length; k++) {
                    long at = (long) slot * (r * ops.length + k);
                    SendWorkRequest wr = new SendWorkRequest()
                            .wrId(r * ops.length + k)
                            .opcode(ops[k])
                            .signaled(true);
                    wr.immData = k;
                    switch (ops[k]) {
                        case SEND, SEND_WITH_IMM -> wr.buffer(src, at, len);
                        case RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ ->
                            wr.buffer(src, at, len).remote(dst.address() + at, dst.rkey());
                        case ATOMIC_CMP_AND_SWP ->
                            wr.buffer(src, at, 8).atomic(dst.address() + area, dst.rkey(), -1, -1);
                        default -> wr.buffer(src, at, 8).atomic(dst.address() + area, dst.rkey(), 1, 0);
                    }
                    if (head == null) head = wr;
                    else prev.next = wr;
                    prev = wr;
                }
            }
            pair.a.qp.postSend(head);
            int total = rounds * ops.length, want = recvs;
            WorkCompletion[] wcs = WorkCompletion.array(64);
            long[] next = {0, 0};
            net.runUntil(
                    () -> {
                        int n = pair.a.cq.poll(wcs);
                        for (int i = 0; i < n; i++) {
                            assertEquals(WcStatus.SUCCESS, wcs[i].status, () -> "send WR " + wcs[0].wrId);
                            assertEquals(next[0]++, wcs[i].wrId, "the sender completes in order");
                        }
                        n = pair.b.cq.poll(wcs);
                        for (int i = 0; i < n; i++) {
                            assertEquals(WcStatus.SUCCESS, wcs[i].status);
                            assertEquals(next[1]++, wcs[i].wrId, "the receiver completes in order");
                        }
                        return next[0] == total && next[1] == want;
                    },
                    1_000_000,
                    10_000_000_000L);
            MemorySegment s = src.segment(), d = dst.segment();
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 4; k++) { // SENDs and WRITEs: A's bytes at B
                    long at = (long) slot * (r * ops.length + k);
                    assertEquals(-1, mismatch(d, s, at, at + len), "message " + (r * ops.length + k));
                }
                long at = (long) slot * (r * ops.length + 4); // the READ: B's bytes at A
                assertEquals(-1, mismatch(s, d, at, at + len), "READ " + (r * ops.length + 4));
            }
            // each fetch-and-add added 1 once, after the compare-and-swap before it (which compares with -1: no swap)
            assertEquals(rounds, counter.get(ValueLayout.JAVA_LONG, 0), "each atomic executed once");
            assertFalse(lost.isEmpty());
        }
    }

    /** The delivery rounds (half round trips) and timeouts a run of WRITEs took. */
    record Rounds(long rounds, long timeouts) {}

    /**
     * 200 WRITEs of 6 KiB (1200 packets at MTU 1024, a window of 64 packets), the first copies of packets 100, 450 and
     * 800 of the run lost; {@code runPastHoles}: the requester's window counts only packets not known to have arrived
     * (false: as before, every packet beyond the oldest unacknowledged one).
     */
    static Rounds windowRun(boolean runPastHoles, boolean lose) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            SoftQp qa = soft(pair.a.qp), qb = soft(pair.b.qp);
            qa.requester.window = qb.requester.window = 64; // a window small against the run
            qa.requester.ackEvery = qb.requester.ackEvery = 16;
            qa.requester.countsHeldAtPeer = runPastHoles;
            int n = 200, size = 6 * MTU;
            MemoryRegion src = pair.a.mrAll((long) size * n), dst = pair.b.mrAll((long) size * n);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), (long) size * n, 51);
            int first = qa.requester.nextPsn;
            Set<Integer> lost = new HashSet<>();
            net.drop = p -> {
                int k = Psn.diff(p.psn(), first);
                return lose && p.from() == ta && (k == 100 || k == 450 || k == 800) && lost.add(k);
            };
            SendWorkRequest head = null, prev = null;
            for (int i = 0; i < n; i++) {
                SendWorkRequest wr = new SendWorkRequest()
                        .wrId(i)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .buffer(src, (long) size * i, size)
                        .remote(dst.address() + (long) size * i, dst.rkey())
                        .signaled(i == n - 1);
                if (head == null) head = wr;
                else prev.next = wr;
                prev = wr;
            }
            pair.a.qp.postSend(head);
            long rounds = 0, timeouts = 0;
            WorkCompletion[] wc = WorkCompletion.array(1);
            while (pair.a.cq.poll(wc) == 0) {
                assertTrue(timeouts < 100, "not done");
                if (!net.idle()) {
                    net.deliverRound();
                    rounds++;
                } else {
                    net.advance(qa.timeoutNanos); // nothing in flight and not done: only a timeout moves it
                    timeouts++;
                }
            }
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, (long) size * n, 51);
            assertEquals(lose ? 3 : 0, lost.size());
            return new Rounds(rounds, timeouts);
        }
    }

    @Test
    void theWindowRunsPastAHoleWhileItIsRepaired() {
        Rounds clean = windowRun(true, false), past = windowRun(true, true), stalled = windowRun(false, true);
        String what = "no loss " + clean + ", window past the holes " + past + ", window stalled at them " + stalled;
        System.out.println("three holes in 1200 packets: " + what);
        assertEquals(0, past.timeouts(), what);
        assertTrue(past.rounds() < stalled.rounds(), "fewer round trips than a window that stalls: " + what);
        assertTrue(past.rounds() <= clean.rounds() + 3 * 2, "at most a round trip per hole beyond no loss: " + what);
    }

    /** jrdma on both ends (the default): the first request carries A's offer, B takes it, A learns from B's ACK. */
    @Test
    void betweenJrdmaPeersTheModeIsOnByDefault() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            assertTrue(soft(pair.a.qp).selectiveRepeat && soft(pair.b.qp).selectiveRepeat, "on by default");
            assertFalse(soft(pair.b.qp).responder.requesterOffers, "nothing agreed before a request");
            MemoryRegion src = pair.a.mrAll(4096), dst = pair.b.mrAll(4096);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            // B's requester made no offer yet (it sent no request): A keeps to go-back-N for B's requests
            assertFalse(soft(pair.a.qp).responder.requesterOffers);
        }
    }

    /**
     * A peer without the mode (a jrdma QP with it off, as rxe or a NIC): A in the mode offers, B ignores the offer and
     * marks nothing; B's requests carry no offer, so A neither keeps nor marks; losses both ways go back N.
     */
    @Test
    void withAPeerWithoutTheModeNothingIsMarkedAndBothDirectionsGoBackN() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            soft(pair.b.qp).selectiveRepeat = false;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = 8 * MTU;
            MemoryRegion sa = pair.a.mrAll(len), sb = pair.b.mrAll(len);
            RcPair.fill(sa.segment(), len, 61);
            RcPair.fill(sb.segment(), len, 62);
            Set<Integer> lost = new HashSet<>();
            net.drop = p -> Psn.diff(p.psn(), soft(p.from() == ta ? pair.a.qp : pair.b.qp).requester.sentEnd) == -6
                    && Opcode.isRc(p.opcode())
                    && p.opcode() != Opcode.ACKNOWLEDGE.code()
                    && lost.add(p.psn());
            for (int i = 0; i < 3; i++) {
                pair.a.qp.postSend(write(i, sa, sb, len));
                pair.b.qp.postSend(write(i, sb, sa, len));
                assertNotNull(pair.awaitOk(pair.a.cq));
                assertNotNull(pair.awaitOk(pair.b.cq));
            }
            assertFalse(lost.isEmpty());
            assertFalse(soft(pair.b.qp).responder.requesterOffers, "B does not take the offer");
            assertFalse(soft(pair.a.qp).responder.requesterOffers, "B made none");
            for (DeterministicNetwork.Packet p : net.log)
                if (p.from() == tb) assertFalse(Bth.holdsMark(ByteBuffer.wrap(p.bytes()), 0), "B marks nothing");
            for (Transport t : new Transport[] {ta, tb}) {
                assertEquals(0, t.counters.get(Counter.RX_OUT_OF_ORDER_HELD), "nothing kept beyond a gap");
                assertEquals(0, t.counters.get(Counter.TX_SELECTIVE_RESENDS), "go-back-N");
            }
        }
    }

    /**
     * A forged offer: marked WRITEs at PSNs beyond the one B expects (from A's address, a right ICRC) while A is not
     * in the mode. B takes no offer from a request it did not execute in sequence: it keeps nothing, marks nothing
     * and places nothing, and the real WRITEs land untouched.
     */
    @Test
    void aForgedOfferOutOfSequenceIsIgnored() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            SoftQp qa = soft(pair.a.qp), qb = soft(pair.b.qp);
            qa.selectiveRepeat = false;
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = 4 * MTU;
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            RcPair.fill(src.segment(), len, 71);
            for (int k = 1; k <= 5; k++) {
                byte[] forged = forgedMarkedWrite(qb, Psn.add(qb.responder.expectedPsn, k), dst);
                net.inFlight.add(new DeterministicNetwork.Packet(forged, tb, ta));
            }
            net.deliver();
            pair.a.qp.postSend(write(1, src, dst, len));
            assertNotNull(pair.awaitOk(pair.a.cq));
            RcPair.assertFilled(dst.segment(), 0, len, 71);
            assertFalse(qb.responder.requesterOffers, "no offer taken from out of sequence");
            assertEquals(0, tb.counters.get(Counter.RX_OUT_OF_ORDER_HELD));
            for (DeterministicNetwork.Packet p : net.log)
                if (p.from() == tb) assertFalse(Bth.holdsMark(ByteBuffer.wrap(p.bytes()), 0), "B marks nothing");
            assertEquals(dev.jrdma.verbs.QpState.RTS, pair.b.qp.state(), "no QP killed");
        }
    }

    /**
     * A forged copy of a WRITE MIDDLE overtakes the real one beyond a gap, inside the message in progress: the forgery
     * is placed (its bytes in the range the message's checked RETH allows), the real copy then differs from what is in
     * place, so the PSN is forgotten (a gap again, counted, the forgery watch noted), A is NAKed for it and its resend,
     * executed in sequence, writes the real bytes over the forged ones before the WRITE completes.
     */
    @Test
    void aForgedCopyOfAPlacedPacketIsOverwrittenInSequence() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            int len = 8 * MTU;
            MemoryRegion src = pair.a.mrAll(len), dst = pair.b.mrAll(len);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), len, 81);
            int first = soft(pair.a.qp).requester.nextPsn;
            boolean[] done = {false, false};
            net.drop = p -> {
                if (p.from() != ta) return false;
                if (p.psn() == Psn.add(first, 1) && !done[0]) return done[0] = true; // the gap
                if (p.psn() == Psn.add(first, 3) && !done[1]) { // a forged copy overtakes the real one
                    done[1] = true;
                    byte[] forged = p.bytes().clone();
                    forged[Bth.BYTES] ^= 0x5A; // the first payload byte of a WRITE MIDDLE
                    SelectiveRepeatTest.withIcrc(
                            ByteBuffer.wrap(forged), forged.length, DeterministicNetwork.A, DeterministicNetwork.B);
                    net.inFlight.add(new DeterministicNetwork.Packet(forged, p.to(), p.from()));
                    net.inFlight.add(p);
                    return true;
                }
                return false;
            };
            pair.a.qp.postSend(write(1, src, dst, len));
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 1_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            assertTrue(done[1]);
            RcPair.assertFilled(dst.segment(), 0, len, 81); // the real bytes everywhere
            assertEquals(1, tb.counters.get(Counter.RX_OUT_OF_ORDER_NOT_HELD), "the conflict: the PSN forgotten");
            assertEquals(2, ta.counters.get(Counter.TX_SELECTIVE_RESENDS), "the gap and the PSN the conflict emptied");
        }
    }

    /**
     * Forged marked NAKs that claim B keeps 2^24 - 1 packets beyond A's oldest unacknowledged one: A believes no more
     * than it has sent, and its window never reaches past {@link HeldRequests#REACH} windows (what a responder keeps);
     * the WRITEs still land right once the real packets flow.
     */
    @Test
    void aForgedHeldCountMovesTheWindowAtMostReachWindows() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            SoftQp qa = soft(pair.a.qp);
            int n = 50, size = 4 * MTU;
            MemoryRegion src = pair.a.mrAll((long) n * size), dst = pair.b.mrAll((long) n * size);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            qa.requester.window = 16;
            RcPair.fill(src.segment(), (long) n * size, 91);
            int first = qa.requester.nextPsn;
            SendWorkRequest head = null, prev = null;
            for (int i = 0; i < n; i++) {
                SendWorkRequest wr = new SendWorkRequest()
                        .wrId(i)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .buffer(src, (long) size * i, size)
                        .remote(dst.address() + (long) size * i, dst.rkey())
                        .signaled(i == n - 1);
                if (head == null) head = wr;
                else prev.next = wr;
                prev = wr;
            }
            pair.a.qp.postSend(head);
            assertEquals(16, Psn.diff(qa.requester.sentEnd, first), "one window out");
            for (int i = 0; i < 10; i++) {
                byte[] nak = SelectiveRepeatTest.markedNak(qa, first, 0xFFFFFF);
                ta.driveForTest(() -> net.handleInDrive(new DeterministicNetwork.Packet(nak, ta, tb)));
                assertTrue(qa.completer.heldAtPeer < Psn.diff(qa.requester.sentEnd, first), "no more than was sent");
            }
            assertEquals(HeldRequests.REACH * 16, Psn.diff(qa.requester.sentEnd, first), "at most REACH windows");
            WorkCompletion[] wc = WorkCompletion.array(1);
            net.runUntil(() -> pair.a.cq.poll(wc) == 1, 1_000_000, 10_000_000_000L);
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            RcPair.assertFilled(dst.segment(), 0, (long) n * size, 91);
        }
    }

    /** A WRITE ONLY of 64 bytes with jrdma's mark, to B's QP at {@code psn}, into {@code dst}, as A would send it. */
    private static byte[] forgedMarkedWrite(SoftQp to, int psn, MemoryRegion dst) {
        ByteBuffer b = ByteBuffer.allocate(256);
        int len = RocePacket.writeBth(
                b, 0, Opcode.RDMA_WRITE_ONLY.code(), false, Bth.DEFAULT_PKEY, to.qpNum(), true, psn, 64);
        Reth.write(b, Bth.BYTES, dst.address(), dst.rkey(), 64);
        for (int i = 0; i < 64; i++) b.put(Bth.BYTES + Reth.BYTES + i, (byte) 0xEE);
        Bth.setHoldsMark(b, 0);
        new Icrc()
                .generate(
                        b,
                        0,
                        len,
                        IpAddress.of(DeterministicNetwork.A).ipv4(),
                        IpAddress.of(DeterministicNetwork.B).ipv4(),
                        DeterministicNetwork.PORT,
                        DeterministicNetwork.PORT);
        byte[] out = new byte[len];
        b.get(0, out);
        return out;
    }

    private static SendWorkRequest write(long id, MemoryRegion from, MemoryRegion to, int len) {
        return new SendWorkRequest()
                .wrId(id)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(from, 0, len)
                .remote(to.address(), to.rkey())
                .signaled(true);
    }

    /** The first offset in {@code [from, to)} where {@code a} and {@code b} differ, -1 when none. */
    private static long mismatch(MemorySegment a, MemorySegment b, long from, long to) {
        long m = MemorySegment.mismatch(a, from, to, b, from, to);
        return m < 0 ? -1 : from + m;
    }
}
