package dev.jrdma.soft;

import static dev.jrdma.soft.EngineRig.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.AsyncEvent;
import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 21 §6: the attacks found against main with two soft devices, replayed on one QP with a manual clock. The
 * attacker knows the QP number and sends from the peer's address (a forger on the peer's host, or one that spoofs IP);
 * it does not know the PSN, and unless it can spoof the UDP source port too, not the peer's port.
 */
class ForgeryTest {
    /** A port on the peer's host that is not the peer's (what an unprivileged forger there gets). */
    private static final int OTHER_PORT = 40_123;

    private static SendWorkRequest write(MemoryRegion src, long wrId, int len) {
        return new SendWorkRequest()
                .wrId(wrId)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(src, 0, len)
                .remote(0x1000, 0x1234);
    }

    /** The peer's first valid packet: a WRITE acknowledged (PSN MY_PSN), which teaches the QP the peer's port. */
    private static void firstExchange(EngineRig rig, MemoryRegion src) {
        rig.qp.postSend(write(src, 100, 8));
        rig.drain();
        assertTrue(rig.feed(ack(MY_PSN)));
        assertEquals(100, rig.poll().wrId);
        assertEquals(PORT, rig.qp.peerPort, "learned from the first packet that moved the connection on");
    }

    @Test
    void aForgedAckFromAnotherPortCompletesNothing() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(64);
            firstExchange(rig, src);
            rig.qp.postSend(write(src, 1, 8)); // PSN MY_PSN + 1, in flight
            rig.drain();
            assertFalse(rig.feedFrom(ack(MY_PSN + 1), PEER, OTHER_PORT));
            rig.assertNoCompletion(); // on main the forged ACK completed a WRITE the peer never acknowledged
            assertEquals(1, rig.count(Counter.RX_WRONG_SOURCE_PORT));
            assertTrue(rig.feed(ack(MY_PSN + 1)));
            assertEquals(1, rig.poll().wrId);
        }
    }

    @Test
    void aForgedReadResponseFromAnotherPortLandsNothing() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(64), dst = rig.mrBindable(64);
            firstExchange(rig, src);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(dst, 0, 16)
                    .remote(0x2000, 0x99));
            assertEquals(Opcode.RDMA_READ_REQUEST.code(), rig.one().opcode());
            int psn = MY_PSN + 1;
            assertFalse(rig.feedFrom(
                    new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), psn, false, 16)
                            .aeth(0x1F, 0)
                            .payload(16, 66),
                    PEER,
                    OTHER_PORT));
            for (long i = 0; i < 64; i++) assertEquals(0, dst.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            rig.assertNoCompletion();
            assertTrue(rig.feed(new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), psn, false, 16)
                    .aeth(0x1F, 0)
                    .payload(16, 7)));
            WorkCompletion wc = rig.poll();
            assertEquals(WcStatus.SUCCESS, wc.status);
            RcPair.assertFilled(dst.segment(), 0, 16, 7);
        }
    }

    @Test
    void aForgedWriteAtTheExpectedPsnFromAnotherPortIsNotExecutedAndThePeersIs() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(64);
            assertTrue(rig.feed(request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 8)
                    .reth(buf.address(), buf.rkey(), 8)
                    .payload(8, 1)));
            assertEquals(PORT, rig.qp.peerPort);
            rig.drain();
            // the forger guessed the PSN the responder expects next
            assertFalse(rig.feedFrom(
                    request(Opcode.RDMA_WRITE_ONLY, PEER_PSN + 1, 8)
                            .reth(buf.address() + 16, buf.rkey(), 8)
                            .payload(8, 99),
                    PEER,
                    OTHER_PORT));
            for (long i = 16; i < 24; i++)
                assertEquals(0, buf.segment().get(ValueLayout.JAVA_BYTE, i), "the forged WRITE executed");
            assertTrue(rig.drain().isEmpty());
            // the peer's own WRITE at that PSN is executed, not dropped as a duplicate and reported SUCCESS
            assertTrue(rig.feed(request(Opcode.RDMA_WRITE_ONLY, PEER_PSN + 1, 8)
                    .reth(buf.address() + 16, buf.rkey(), 8)
                    .payload(8, 2)));
            RcPair.assertFilled(buf.segment(), 16, 8, 2);
            assertEquals(0, rig.count(Counter.RX_DUPLICATE_REQUEST));
            RocePacket ack = rig.one();
            assertEquals(PEER_PSN + 1, ack.psn());
        }
    }

    /**
     * A response must answer a request of its kind before it may acknowledge what came before it: on main an atomic ACK
     * at a WRITE's PSN completed the WRITE before it, and an ACK in the middle of a READ moved the window past the READ's
     * first responses, which were then dropped as out of window: the READ never completed.
     */
    @Test
    void aResponseThatFitsNoRequestAcknowledgesNothing() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(write(src, 1, 8)); // PSN 100
            rig.qp.postSend(write(src, 2, 8)); // PSN 101
            rig.drain();
            rig.feed(new EngineRig.Pkt(Opcode.ATOMIC_ACKNOWLEDGE.code(), MY_PSN + 1, false, 0)
                    .aeth(0x1F, 0)
                    .atomicAck(5));
            rig.feed(new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), MY_PSN + 1, false, 8).aeth(0x1F, 0));
            rig.assertNoCompletion();
            assertEquals(MY_PSN, rig.qp.completer.oldestUnacked);
            assertEquals(2, rig.count(Counter.RX_RESPONSE_IGNORED));
            // the peer refuses the first WRITE: on main the forged atomic ACK had marked it done, and this NAK was lost
            // on it
            rig.feed(nak(MY_PSN, Aeth.NAK_REMOTE_ACCESS_ERROR));
            WorkCompletion wc = rig.poll();
            assertEquals(1, wc.wrId);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status);
            assertEquals(WcStatus.WR_FLUSH_ERR, rig.poll().status);
        }
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion local = rig.mrBindable(4096);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 0, 3000)
                    .remote(0x2000, 0x99)); // 100..102
            rig.qp.postSend(write(local, 2, 8)); // 103
            assertEquals(2, rig.drain().size());
            rig.feed(ack(MY_PSN + 1)); // in the middle of the READ's responses
            assertEquals(MY_PSN, rig.qp.completer.oldestUnacked, "an ACK inside a READ moved the window");
            rig.feed(nak(MY_PSN + 1, Aeth.NAK_REMOTE_ACCESS_ERROR)); // a NAK names a request: the READ's is at 100
            assertEquals(QpState.RTS, rig.qp.state());
            int[] ops = {
                Opcode.RDMA_READ_RESPONSE_FIRST.code(),
                Opcode.RDMA_READ_RESPONSE_MIDDLE.code(),
                Opcode.RDMA_READ_RESPONSE_LAST.code()
            };
            for (int k = 0; k < 3; k++) {
                EngineRig.Pkt p = new EngineRig.Pkt(ops[k], MY_PSN + k, false, k < 2 ? 1024 : 952);
                if (k != 1) p.aeth(0x1F, 0);
                assertTrue(rig.feed(p.payload(k < 2 ? 1024 : 952, 3)));
            }
            WorkCompletion wc = rig.poll();
            assertEquals(1, wc.wrId);
            assertEquals(WcStatus.SUCCESS, wc.status);
            rig.feed(ack(MY_PSN + 3));
            assertEquals(2, rig.poll().wrId);
        }
    }

    /**
     * The NAK sweep of issue 21 §6, measured. 256 packets in flight (a 256 KiB WRITE at MTU 1024: the whole window); the
     * attacker sends fatal NAKs from the peer's address and port (it can spoof both), stepping the PSN by the window's
     * width, the fastest way to land one NAK in the window (2^24 / 256 = 65,536 packets per pass), at 100,000 packets a
     * second. On main that pass killed the QP (REM_ACCESS_ERR) after {@code killedAfter} packets (printed). Now the
     * far-off NAKs of the sweep start a guard within its first 64 packets, and while guarded a NAK is obeyed only at
     * the oldest unacknowledged PSN: one PSN of 2^24, so a sweep must step by 1 and costs up to 2^24 packets (2^23 on
     * average), 256 times the pass that was enough before.
     */
    @Test
    void aNakSweepNoLongerFindsTheWindow() {
        EngineRig.Opts o = new EngineRig.Opts();
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion src = rig.mrBindable(256 << 10);
            firstExchange(rig, src);
            rig.qp.postSend(write(src, 1, 256 << 10));
            int window = rig.qp.requester.window;
            assertEquals(256, window);
            assertEquals(window, rig.drain().size());
            int oldest = rig.qp.completer.oldestUnacked,
                    start = Psn.add(oldest, 17 + (1 << 23)); // lands on oldest + 17
            long sent = 0, killedAfter = -1;
            for (int i = 0; i < (1 << 24) / window; i++) {
                rig.clock.advanceNanos(10_000);
                rig.feed(nak(Psn.add(start, i * window), Aeth.NAK_REMOTE_ACCESS_ERROR));
                sent++;
                if (rig.qp.state() != QpState.RTS) {
                    killedAfter = sent;
                    break;
                }
            }
            System.out.printf(
                    "NAK sweep, stride %d: %d packets sent, QP killed after %d (-1: survived the pass)%n",
                    window, sent, killedAfter);
            assertEquals(-1, killedAfter, "the strided pass killed the QP");
            assertEquals(1, rig.count(Counter.RX_FORGERY_BURSTS), "one burst within the first second");
            AsyncEvent e = rig.ctx.awaitAsyncEvent(Duration.ZERO);
            assertNotNull(e, "a burst raises an event");
            assertEquals(AsyncEventType.QP_FORGERY_SUSPECTED, e.type());
            assertSame(rig.qp, e.queuePair());
            assertNull(rig.ctx.awaitAsyncEvent(Duration.ZERO), "one event per guard, not one per burst or packet");
            // PSNs of the whole window at which a fatal NAK still kills: only the oldest unacknowledged one
            int killing = 0;
            for (int k = window - 1; k >= 0; k--) {
                rig.feed(nak(Psn.add(oldest, k), Aeth.NAK_REMOTE_ACCESS_ERROR));
                if (rig.qp.state() != QpState.RTS) killing++;
            }
            System.out.printf("PSNs of the %d in flight at which a NAK kills while guarded: %d%n", window, killing);
            assertEquals(1, killing);
            assertEquals(
                    QpState.ERR,
                    rig.qp.state(),
                    "the NAK at the oldest PSN is obeyed: the peer's own refusal still works");
            assertEquals(WcStatus.REM_ACCESS_ERR, rig.poll().status);
        }
    }

    /**
     * A burst is {@link ForgeryWatch#BURST} far-off or wrong-port packets within a second: fewer raise nothing; the guard
     * ends {@link ForgeryWatch#GUARD_NANOS} after the last burst, and from then on a NAK in the middle of the window is
     * obeyed again. While guarded, the honest peer's loss in mid-window is repaired by the retransmission timer.
     */
    @Test
    void aBurstOfFarOffPacketsRaisesOneEventAndGuardsForAWhile() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(4096);
            firstExchange(rig, src);
            int far = Psn.add(MY_PSN, 1 << 20);
            for (int i = 0; i < ForgeryWatch.BURST - 2; i++) rig.feed(ack(Psn.add(far, i)));
            rig.feedFrom(ack(MY_PSN), PEER, OTHER_PORT); // a wrong port counts as well
            assertEquals(0, rig.count(Counter.RX_FORGERY_BURSTS));
            assertNull(rig.ctx.awaitAsyncEvent(Duration.ZERO));
            rig.clock.advanceMillis(1000); // a new second: the count starts again
            rig.feed(ack(far));
            assertEquals(0, rig.count(Counter.RX_FORGERY_BURSTS), "63 in one second and one in the next are no burst");
            // requests far from the PSN the responder expects count too
            for (int i = 1; i < ForgeryWatch.BURST; i++)
                rig.feed(request(Opcode.SEND_ONLY, Psn.add(PEER_PSN, -(1 << 20) - i), 0));
            assertEquals(1, rig.count(Counter.RX_FORGERY_BURSTS));
            assertEquals(
                    AsyncEventType.QP_FORGERY_SUSPECTED,
                    rig.ctx.awaitAsyncEvent(Duration.ZERO).type());
            rig.drain();
            // guarded: a sequence NAK in mid-window is ignored; the timer repairs the loss
            for (int i = 0; i < 4; i++) rig.qp.postSend(write(src, i, 8)); // PSNs 101..104
            assertEquals(4, rig.drain().size());
            rig.feed(nak(MY_PSN + 3, Aeth.NAK_PSN_SEQUENCE_ERROR));
            assertTrue(rig.drain().isEmpty(), "a mid-window NAK was obeyed while guarded");
            rig.clock.advanceMillis(68);
            rig.tick();
            assertEquals(4, rig.drain().size(), "the timeout resends from the oldest unacknowledged PSN");
            rig.feed(ack(MY_PSN + 4));
            for (int i = 0; i < 4; i++) assertEquals(WcStatus.SUCCESS, rig.poll().status);
            // the guard ends a while after the last burst: a mid-window NAK goes back at once again
            rig.clock.advanceNanos(ForgeryWatch.GUARD_NANOS);
            for (int i = 0; i < 4; i++) rig.qp.postSend(write(src, 10 + i, 8)); // 105..108
            assertEquals(4, rig.drain().size());
            rig.feed(nak(MY_PSN + 7, Aeth.NAK_PSN_SEQUENCE_ERROR));
            List<RocePacket> again = rig.drain();
            assertEquals(2, again.size(), EngineRig.describe(again));
            assertEquals(MY_PSN + 7, again.getFirst().psn());
            assertNull(rig.ctx.awaitAsyncEvent(Duration.ZERO));
        }
    }
}
