package dev.jrdma.soft;

import static dev.jrdma.soft.EngineRig.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The responder driven packet by packet: no socket, no threads, no sleeping. */
class ResponderTest {

    private static void assertAeth(RocePacket p, int psn, int type, int value) {
        assertEquals(Opcode.ACKNOWLEDGE.code(), p.opcode());
        assertEquals(psn, p.psn(), "AETH PSN");
        assertEquals(type, Aeth.type(p.aethSyndrome()), "AETH type");
        if (type != Aeth.TYPE_ACK) assertEquals(value, Aeth.value(p.aethSyndrome()), "AETH value");
    }

    @Test
    void inSequenceSendIsDeliveredAndAcked() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(4096);
            rig.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(buf, 0, 4096));
            assertTrue(rig.feed(request(Opcode.SEND_FIRST, PEER_PSN, 1024).payload(1024, 1)));
            assertEquals(Responder.State.ACKNOWLEDGE, rig.qp.responder.lastOutcome);
            assertTrue(rig.feed(request(Opcode.SEND_LAST_WITH_IMMEDIATE, PEER_PSN + 1, 100)
                    .imm(0x1234)
                    .payload(100, 2)));
            WorkCompletion wc = rig.poll();
            assertEquals(WcStatus.SUCCESS, wc.status);
            assertEquals(7, wc.wrId);
            assertEquals(1124, wc.byteLen);
            assertEquals(0x1234, wc.immData);
            RcPair.assertFilled(buf.segment(), 0, 1024, 1);
            RcPair.assertFilled(buf.segment(), 1024, 100, 2);
            List<RocePacket> out =
                    rig.drain(); // each packet asked for an ACK; off the receive thread they go out at once
            assertEquals(2, out.size());
            assertAeth(out.get(1), PEER_PSN + 1, Aeth.TYPE_ACK, 0);
        }
    }

    @Test
    void aCoalescedAckIsSentBeforeTheQpGoesToErr() {
        // the completion thread can end a QP (an application's handler failed) while the burst that delivered the
        // SEND still owes its ACK: the SEND was executed, so the peer must hear so, not retry into RETRY_EXC_ERR
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(64);
            rig.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(buf, 0, 64));
            rig.transport.driveForTest(() -> {
                assertTrue(rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 3)));
                assertEquals(1, rig.poll().wrId);
                assertEquals(List.of(), rig.drain(), "inside a burst the ACK waits for its end");
                rig.qp.modify(new QpAttr().state(QpState.ERR));
                assertAeth(rig.one(), PEER_PSN, Aeth.TYPE_ACK, 0);
            });
            assertEquals(List.of(), rig.drain(), "acknowledged once");
        }
    }

    @Test
    void duplicateIsReAckedNotDeliveredAgain() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(64);
            rig.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(buf, 0, 64));
            rig.qp.postRecv(new RecvWorkRequest().wrId(2).buffer(buf, 0, 64));
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 3));
            assertEquals(1, rig.poll().wrId);
            rig.drain();
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 3));
            assertEquals(Responder.State.DUPLICATE, rig.qp.responder.lastOutcome);
            rig.assertNoCompletion();
            assertAeth(rig.one(), PEER_PSN, Aeth.TYPE_ACK, 0);
        }
    }

    @Test
    void packetAheadOfSequenceIsNakedOncePerBurst() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(64);
            rig.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(buf, 0, 64));
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN + 2, 8));
            assertEquals(Responder.State.ERR_PSN_SEQUENCE, rig.qp.responder.lastOutcome);
            assertAeth(rig.one(), PEER_PSN, Aeth.TYPE_NAK, Aeth.NAK_PSN_SEQUENCE_ERROR);
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN + 3, 8));
            assertTrue(rig.drain().isEmpty(), "one NAK per burst");
            rig.assertNoCompletion();
            // the requester goes back: the expected PSN is served again
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8));
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
            assertEquals(QpState.RTS, rig.qp.state());
        }
    }

    @Test
    void sendWithoutReceiveIsRnrNaked() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.minRnrTimer = 12;
        try (EngineRig rig = new EngineRig(o)) {
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8));
            assertEquals(Responder.State.ERR_RNR, rig.qp.responder.lastOutcome);
            assertAeth(rig.one(), PEER_PSN, Aeth.TYPE_RNR_NAK, 12);
            assertEquals(QpState.RTS, rig.qp.state(), "an RNR NAK is not an error");
        }
    }

    @Test
    void accessIsCheckedBeforeMemoryIsTouched() {
        // each bad request: NAKed with the right code, the target bytes unchanged, the QP in ERR
        record Case(String what, Opcode op, int nak) {}
        for (int c = 0; c < 6; c++) {
            try (EngineRig rig = new EngineRig()) {
                MemoryRegion all = rig.mrBindable(64), readOnly = rig.mr(64, Access.LOCAL_WRITE, Access.REMOTE_READ);
                MemorySegment canaryAll = all.segment(), canaryRo = readOnly.segment();
                canaryAll.fill((byte) 0x5A);
                canaryRo.fill((byte) 0x5A);
                EngineRig.Pkt p = switch (c) {
                    case 0 ->
                        request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 8)
                                .reth(all.address(), all.rkey() ^ 0x100, 8)
                                .payload(8, 9); // wrong key
                    case 1 ->
                        request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 8)
                                .reth(all.address() + 60, all.rkey(), 8)
                                .payload(8, 9); // out of bounds
                    case 2 ->
                        request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 8)
                                .reth(readOnly.address(), readOnly.rkey(), 8)
                                .payload(8, 9); // no REMOTE_WRITE
                    case 3 ->
                        request(Opcode.FETCH_ADD, PEER_PSN, 0)
                                .atomic(readOnly.address(), readOnly.rkey(), 1, 0); // no REMOTE_ATOMIC
                    case 4 ->
                        request(Opcode.COMPARE_SWAP, PEER_PSN, 0)
                                .atomic(all.address() + 4, all.rkey(), 1, 0); // misaligned
                    default ->
                        request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0)
                                .reth(all.address(), all.rkey(), 65); // READ out of bounds
                };
                int want = c == 4 ? Aeth.NAK_INVALID_REQUEST : Aeth.NAK_REMOTE_ACCESS_ERROR;
                rig.feed(p);
                assertAeth(rig.one(), PEER_PSN, Aeth.TYPE_NAK, want);
                assertEquals(QpState.ERR, rig.qp.state(), "case " + c);
                for (long i = 0; i < 64; i++) {
                    assertEquals((byte) 0x5A, canaryAll.get(ValueLayout.JAVA_BYTE, i), "case " + c + " byte " + i);
                    assertEquals((byte) 0x5A, canaryRo.get(ValueLayout.JAVA_BYTE, i), "case " + c + " byte " + i);
                }
                assertFalse(rig.feed(request(Opcode.SEND_ONLY, PEER_PSN + 1, 8)), "a QP in ERR drops what comes");
            }
        }
    }

    @Test
    void duplicateAtomicIsAnsweredWithoutExecutingAgain() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion counter = rig.mrBindable(8);
            counter.segment().set(ValueLayout.JAVA_LONG, 0, 40);
            rig.feed(request(Opcode.FETCH_ADD, PEER_PSN, 0).atomic(counter.address(), counter.rkey(), 2, 0));
            RocePacket first = rig.one();
            assertEquals(Opcode.ATOMIC_ACKNOWLEDGE.code(), first.opcode());
            assertEquals(40, first.atomicAckOriginal());
            for (int i = 0; i < 3; i++) {
                rig.feed(request(Opcode.FETCH_ADD, PEER_PSN, 0).atomic(counter.address(), counter.rkey(), 2, 0));
                RocePacket again = rig.one();
                assertEquals(Opcode.ATOMIC_ACKNOWLEDGE.code(), again.opcode());
                assertEquals(40, again.atomicAckOriginal(), "the recorded original value");
            }
            assertEquals(42, counter.segment().get(ValueLayout.JAVA_LONG, 0), "executed exactly once");
        }
    }

    @Test
    void duplicateReadIsReplayedFromThePacketAskedFor() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(4096);
            RcPair.fill(src.segment(), 4096, 6);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0).reth(src.address(), src.rkey(), 3000));
            List<RocePacket> out = rig.drain();
            assertEquals(3, out.size());
            assertEquals(Opcode.RDMA_READ_RESPONSE_FIRST.code(), out.get(0).opcode());
            assertEquals(Opcode.RDMA_READ_RESPONSE_LAST.code(), out.get(2).opcode());
            assertEquals(PEER_PSN + 2, out.get(2).psn());
            // the requester lost the last two and asks again from the second packet
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN + 1, 0)
                    .reth(src.address() + 1024, src.rkey(), 3000 - 1024));
            assertEquals(Responder.State.DUPLICATE, rig.qp.responder.lastOutcome);
            out = rig.drain();
            assertEquals(2, out.size(), EngineRig.describe(out));
            assertEquals(PEER_PSN + 1, out.get(0).psn());
            assertEquals(Opcode.RDMA_READ_RESPONSE_MIDDLE.code(), out.get(0).opcode());
            assertEquals(3000 - 2048, out.get(1).payloadLength());
            // the next new request is expected after the READ's three PSNs
            MemoryRegion dst = rig.mrBindable(64);
            rig.feed(request(Opcode.RDMA_WRITE_ONLY, PEER_PSN + 3, 8)
                    .reth(dst.address(), dst.rkey(), 8)
                    .payload(8, 4));
            RcPair.assertFilled(dst.segment(), 0, 8, 4);
        }
    }

    @Test
    void writeOfSeveralPacketsLandsAndCompletesAWriteWithImmediate() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion dst = rig.mrBindable(4096);
            rig.qp.postRecv(new RecvWorkRequest().wrId(9).numSge(0));
            rig.feed(request(Opcode.RDMA_WRITE_FIRST, PEER_PSN, 1024)
                    .reth(dst.address(), dst.rkey(), 1500)
                    .payload(1024, 5));
            rig.feed(request(Opcode.RDMA_WRITE_LAST_WITH_IMMEDIATE, PEER_PSN + 1, 476)
                    .imm(77)
                    .payload(476, 6));
            WorkCompletion wc = rig.poll();
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wc.opcode);
            assertEquals(1500, wc.byteLen);
            assertEquals(77, wc.immData);
            RcPair.assertFilled(dst.segment(), 0, 1024, 5);
            RcPair.assertFilled(dst.segment(), 1024, 476, 6);
            // a middle packet where a first was expected is an invalid request
            rig.feed(request(Opcode.RDMA_WRITE_MIDDLE, PEER_PSN + 2, 1024));
            assertEquals(Responder.State.ERR_INVALID_REQUEST, rig.qp.responder.lastOutcome);
            assertEquals(QpState.ERR, rig.qp.state());
        }
    }

    /** The affiliated asynchronous error of IBA 11.6.3.1 for each class of NAK that moves the responder to ERR. */
    @Test
    void fatalNaksRaiseTheMatchingAffiliatedError() {
        try (EngineRig rig = new EngineRig()) {
            rig.feed(request(Opcode.SEND_MIDDLE, PEER_PSN, 1024).payload(1024, 1)); // a middle with no first
            assertEquals(Responder.State.ERR_INVALID_REQUEST, rig.qp.responder.lastOutcome);
            dev.jrdma.verbs.AsyncEvent e = rig.ctx.awaitAsyncEvent(java.time.Duration.ZERO);
            assertNotNull(e, "no event after an invalid request NAK");
            assertEquals(dev.jrdma.verbs.AsyncEventType.QP_REQ_ERR, e.type());
            assertSame(rig.qp, e.queuePair());
            assertNull(rig.ctx.awaitAsyncEvent(java.time.Duration.ZERO), "one event per error");
        }
        try (EngineRig rig = new EngineRig()) {
            RecvWorkRequest bad = new RecvWorkRequest().wrId(1);
            bad.sge(0).set(0x1000, 64, 0x7777); // a receive with a bad lkey
            rig.qp.postRecv(bad);
            rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 1));
            assertEquals(Responder.State.ERR_REMOTE_OPERATIONAL, rig.qp.responder.lastOutcome);
            assertEquals(
                    dev.jrdma.verbs.AsyncEventType.QP_FATAL,
                    rig.ctx.awaitAsyncEvent(java.time.Duration.ZERO).type());
        }
    }

    /** A datagram (DETH) aimed at an RC QP never reaches its responder: dropped, no receive consumed, no NAK. */
    @Test
    void datagramAtAnRcQpIsDropped() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(4096);
            rig.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(buf, 0, 4096));
            assertFalse(rig.feed(request(Opcode.UD_SEND_ONLY, PEER_PSN, 8).payload(8, 1)));
            rig.assertNoCompletion();
            assertTrue(rig.drain().isEmpty(), "no answer to a datagram");
            assertEquals(QpState.RTS, rig.qp.state());
            assertTrue(rig.feed(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 2)));
            assertEquals(7, rig.poll().wrId, "the receive is still there for the RC peer");
        }
    }

    /**
     * The soak's REM_INV_REQ_ERR (3 Dec): a READ response came late, so its requester asked again for it and then had
     * the READ complete; the re-request's replay was still waiting for its turn when the next READ/atomic arrived for
     * the same slot of the max_dest_rd_atomic ring, and that request was NAKed as beyond the limit (QP to ERR). A stale
     * replay gives the slot up; replies not yet sent once still hold it.
     */
    @Test
    void aStaleReplayGivesItsSlotToTheNextRequestButFirstRepliesHoldIt() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.maxDestRdAtomic = 2;
        try (EngineRig rig = new EngineRig(o)) {
            int turn = rig.qp.requester.ackEvery, packets = turn + 2, psn = PEER_PSN;
            long size = packets * 1024L;
            MemoryRegion src = rig.mrBindable((int) size), counter = rig.mrBindable(8);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, psn, 0).reth(src.address(), src.rkey(), size)); // slot 0
            assertEquals(turn, rig.drain().size());
            int sent = turn;
            while (rig.transport.runTurns()) sent += rig.drain().size();
            assertEquals(packets, sent + rig.drain().size());
            rig.feed(request(Opcode.FETCH_ADD, psn + packets, 0).atomic(counter.address(), counter.rkey(), 1, 0));
            assertEquals(0, rig.one().atomicAckOriginal()); // slot 1
            // the READ asked again whole, late: its replay waits for the next turn
            rig.feed(request(Opcode.RDMA_READ_REQUEST, psn, 0).reth(src.address(), src.rkey(), size));
            assertEquals(turn, rig.drain().size());
            // the requester had every response meanwhile, so its next atomic takes slot 0 again
            rig.feed(request(Opcode.FETCH_ADD, psn + packets + 1, 0).atomic(counter.address(), counter.rkey(), 1, 0));
            RocePacket ack = rig.one();
            assertEquals(
                    Opcode.ATOMIC_ACKNOWLEDGE.code(), ack.opcode(), "the atomic executes; the stale replay is gone");
            assertEquals(1, ack.atomicAckOriginal());
            assertEquals(2, counter.segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(1, rig.count(Counter.STALE_REPLAYS_DROPPED));
            assertEquals(QpState.RTS, rig.qp.state());
            while (rig.transport.runTurns()) assertTrue(rig.drain().isEmpty(), "nothing of the replay goes out");
            assertTrue(rig.drain().isEmpty());
        }
        // a READ whose responses have not all gone out once still holds its slot: a request for that slot means the
        // peer runs beyond max_dest_rd_atomic
        o.maxDestRdAtomic = 1;
        try (EngineRig rig = new EngineRig(o)) {
            int turn = rig.qp.requester.ackEvery, packets = turn + 2;
            MemoryRegion src = rig.mrBindable(packets * 1024), counter = rig.mrBindable(8);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0).reth(src.address(), src.rkey(), packets * 1024L));
            assertEquals(turn, rig.drain().size());
            rig.feed(request(Opcode.FETCH_ADD, PEER_PSN + packets, 0).atomic(counter.address(), counter.rkey(), 1, 0));
            assertAeth(rig.one(), PEER_PSN + packets, Aeth.TYPE_NAK, Aeth.NAK_INVALID_REQUEST);
            assertEquals(QpState.ERR, rig.qp.state());
            assertEquals(0, counter.segment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, rig.count(Counter.STALE_REPLAYS_DROPPED));
        }
    }
}
