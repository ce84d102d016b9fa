package dev.jrdma.soft;

import static dev.jrdma.soft.EngineRig.*;
import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.UdWalk;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Issue 8 §2 on the software device: a forged, stray or stale packet is dropped and counted, never obeyed. */
class WireHardeningTest {

    private static SendWorkRequest write(MemoryRegion src, long wrId, int len) {
        return new SendWorkRequest()
                .wrId(wrId)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(src, 0, len)
                .remote(0x1000, 0x1234);
    }

    @Test
    void responsesOutsideTheOutstandingWindowAreCountedNotObeyed() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(4096);
            // nothing outstanding: no NAK of any PSN may touch the QP
            rig.feed(nak(MY_PSN, Aeth.NAK_REMOTE_ACCESS_ERROR));
            rig.feed(nak(MY_PSN - 1, Aeth.NAK_REMOTE_ACCESS_ERROR));
            assertEquals(2, rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW));
            rig.qp.postSend(write(src, 1, 2000)); // PSNs 100, 101
            rig.drain();
            int[] outside = {MY_PSN - 1, MY_PSN - 1000, MY_PSN + 2, MY_PSN + 5000, Psn.add(MY_PSN, Psn.HALF)};
            for (int psn : outside) {
                rig.feed(nak(psn, Aeth.NAK_REMOTE_ACCESS_ERROR));
                rig.feed(nak(psn, Aeth.NAK_PSN_SEQUENCE_ERROR));
                rig.feed(rnrNak(psn, 1));
                rig.feed(new EngineRig.Pkt(Opcode.ATOMIC_ACKNOWLEDGE.code(), psn, false, 0)
                        .aeth(0x1F, 0)
                        .atomicAck(1));
                rig.feed(new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), psn, false, 8).aeth(0x1F, 0));
                if (psn != MY_PSN - 1)
                    rig.feed(ack(psn)); // an ACK of the PSN before the window only repeats the last ACK
            }
            assertEquals(2 + 6 * outside.length - 1, rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW));
            assertTrue(rig.drain().isEmpty(), "no retransmission was set off");
            rig.assertNoCompletion();
            assertEquals(QpState.RTS, rig.qp.state());
            assertEquals(0, rig.count(Counter.RETRANSMITS));
            rig.feed(ack(MY_PSN + 1));
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
        }
    }

    @Test
    void aFatalNakMustNameARequestInFlight() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(4096);
            rig.qp.postSend(write(src, 1, 8)); // PSN 100
            rig.drain();
            rig.feed(nak(MY_PSN, 0x1F & 9)); // a reserved NAK code for a PSN in flight is still a remote error
            assertEquals(WcStatus.REM_OP_ERR, rig.poll().status);
        }
    }

    @Test
    void anRnrNakStormNeitherExtendsTheWaitNorOutlastsRnrRetry() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.rnrRetry = 3;
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(5)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            rig.drain();
            int waits = 0;
            for (; ; ) {
                rig.feed(rnrNak(MY_PSN, 14)); // 1.28 ms
                if (rig.qp.state() == QpState.ERR) break;
                waits++;
                for (int i = 0; i < 10; i++) { // a storm during the wait
                    rig.clock.advanceMillis(0.1);
                    rig.feed(rnrNak(MY_PSN, 31));
                }
                rig.clock.advanceMillis(0.3);
                rig.tick();
                assertEquals(MY_PSN, rig.one().psn(), "resent when the first RNR wait ended, not later");
                assertTrue(waits <= 3, "rnr_retry 3 allows three waits");
            }
            assertEquals(3, waits);
            assertEquals(30, rig.count(Counter.RX_RESPONSE_IGNORED));
            assertEquals(34, rig.count(Counter.RNR_NAKS_RECEIVED));
            WorkCompletion wc = rig.poll();
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status);
        }
    }

    @Test
    void aConnectedQpHearsOnlyItsPeer() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(64);
            buf.segment().fill((byte) 0x33);
            rig.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(buf, 0, 64));
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(write(src, 2, 8));
            rig.drain();
            java.net.Inet4Address stranger = SoftDevices.ip("127.0.0.9");
            assertFalse(rig.feedFrom(request(Opcode.SEND_ONLY, PEER_PSN, 8).payload(8, 1), stranger));
            assertFalse(rig.feedFrom(
                    request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 8)
                            .reth(buf.address(), buf.rkey(), 8)
                            .payload(8, 1),
                    stranger));
            assertFalse(rig.feedFrom(nak(MY_PSN, Aeth.NAK_REMOTE_ACCESS_ERROR), stranger));
            assertFalse(rig.feedFrom(ack(MY_PSN), stranger));
            assertEquals(4, rig.count(Counter.RX_WRONG_SOURCE));
            rig.assertNoCompletion();
            for (long i = 0; i < 64; i++)
                assertEquals((byte) 0x33, buf.segment().get(ValueLayout.JAVA_BYTE, i));
            assertTrue(rig.drain().isEmpty());
            assertTrue(rig.feed(ack(MY_PSN)));
            assertEquals(2, rig.poll().wrId);
        }
    }

    @Test
    void overTheSocketAForgedPacketFromAnotherAddressIsCountedByName() throws Exception {
        try (RcPair p = SoftDevices.pair();
                java.nio.channels.DatagramChannel ch =
                        java.nio.channels.DatagramChannel.open(java.net.StandardProtocolFamily.INET)) {
            java.net.Inet4Address stranger = SoftDevices.ip("127.0.0.3");
            ch.bind(new java.net.InetSocketAddress(stranger, 0));
            int srcPort = ((java.net.InetSocketAddress) ch.getLocalAddress()).getPort();
            MemoryRegion dst = p.b.mrAll(64);
            long before = p.b.ctx.counters().get("rx_wrong_source");
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(128);
            int len = RocePacket.writeBth(
                    b,
                    0,
                    Opcode.RDMA_WRITE_ONLY.code(),
                    false,
                    dev.jrdma.soft.wire.Bth.DEFAULT_PKEY,
                    p.b.qp.qpNum(),
                    true,
                    5000,
                    8);
            dev.jrdma.soft.wire.Reth.write(b, dev.jrdma.soft.wire.Bth.BYTES, dst.address(), dst.rkey(), 8);
            new dev.jrdma.soft.wire.Icrc()
                    .generate(b, 0, len, stranger.hashCode(), SoftDevices.B.hashCode(), srcPort, SoftDevices.PORT);
            ch.send(b.slice(0, len), new java.net.InetSocketAddress(SoftDevices.B, SoftDevices.PORT));
            long end = System.nanoTime() + 5_000_000_000L;
            while (p.b.ctx.counters().get("rx_wrong_source") == before && System.nanoTime() < end) Thread.sleep(1);
            assertEquals(before + 1, p.b.ctx.counters().get("rx_wrong_source"));
            for (long i = 0; i < 64; i++) assertEquals(0, dst.segment().get(ValueLayout.JAVA_BYTE, i));
            for (String name : List.of(
                    "rx_qp_not_ready",
                    "rx_bad_pkey",
                    "rx_out_of_sequence",
                    "rx_duplicate_request",
                    "rx_duplicate_unanswered",
                    "rx_response_out_of_window",
                    "rx_response_ignored",
                    "rnr_naks_received",
                    "rx_bad_qkey",
                    "rx_no_receive")) assertTrue(p.b.ctx.counters().containsKey(name), name);
            MemoryRegion src = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            assertEquals(WcStatus.SUCCESS, SoftDevices.poll(p.a.cq).status, "the QP is unharmed");
        }
    }

    /**
     * Issue 21 §6 over real sockets: a forger on the peer's host (its address, any other port: the peer's own port is
     * bound by the peer) is dropped by the port check once the QP has heard its peer, and counted by name.
     */
    @Test
    void overTheSocketAForgedPacketFromThePeersAddressButAnotherPortIsDropped() throws Exception {
        try (RcPair p = SoftDevices.pair();
                java.nio.channels.DatagramChannel ch =
                        java.nio.channels.DatagramChannel.open(java.net.StandardProtocolFamily.INET)) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address() + 32, dst.rkey()));
            assertEquals(WcStatus.SUCCESS, SoftDevices.poll(p.a.cq).status); // b has heard a: it knows a's port now
            ch.bind(new java.net.InetSocketAddress(SoftDevices.A, 0));
            int srcPort = ((java.net.InetSocketAddress) ch.getLocalAddress()).getPort();
            long before = p.b.ctx.counters().get("rx_wrong_source_port");
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(128);
            int expected = ((SoftQp) p.b.qp).responder.expectedPsn; // the forger guessed the PSN, not the port
            int len = RocePacket.writeBth(
                    b,
                    0,
                    Opcode.RDMA_WRITE_ONLY.code(),
                    false,
                    dev.jrdma.soft.wire.Bth.DEFAULT_PKEY,
                    p.b.qp.qpNum(),
                    true,
                    expected,
                    8);
            dev.jrdma.soft.wire.Reth.write(b, dev.jrdma.soft.wire.Bth.BYTES, dst.address(), dst.rkey(), 8);
            for (int i = 0; i < 8; i++)
                b.put(dev.jrdma.soft.wire.Bth.BYTES + dev.jrdma.soft.wire.Reth.BYTES + i, (byte) 0x5A);
            new dev.jrdma.soft.wire.Icrc()
                    .generate(b, 0, len, SoftDevices.A.hashCode(), SoftDevices.B.hashCode(), srcPort, SoftDevices.PORT);
            ch.send(b.slice(0, len), new java.net.InetSocketAddress(SoftDevices.B, SoftDevices.PORT));
            long end = System.nanoTime() + 5_000_000_000L;
            while (p.b.ctx.counters().get("rx_wrong_source_port") == before && System.nanoTime() < end) Thread.sleep(1);
            assertEquals(before + 1, p.b.ctx.counters().get("rx_wrong_source_port"));
            for (long i = 0; i < 8; i++)
                assertEquals(0, dst.segment().get(ValueLayout.JAVA_BYTE, i), "the forged WRITE executed");
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 8)
                    .remote(dst.address(), dst.rkey()));
            assertEquals(WcStatus.SUCCESS, SoftDevices.poll(p.a.cq).status, "the QP is unharmed");
        }
    }

    @Test
    void theResourceRingWrapsPast2To31And2To32RequestsAndAtomicsRunOnce() {
        for (long skip : new long[] {Integer.MAX_VALUE - 2L, (1L << 32) - 2}) {
            EngineRig.Opts o = new EngineRig.Opts();
            o.maxDestRdAtomic = 3; // not a power of two: the slot sequence must stay in order across the boundary
            try (EngineRig rig = new EngineRig(o)) {
                rig.qp.responder.skipResources(skip);
                MemoryRegion counter = rig.mrBindable(4096);
                int psn = PEER_PSN;
                for (int i = 0; i < 8; i++, psn++) {
                    rig.feed(request(Opcode.FETCH_ADD, psn, 0).atomic(counter.address(), counter.rkey(), 1, 0));
                    assertEquals(i, rig.one().atomicAckOriginal());
                    rig.feed(request(Opcode.FETCH_ADD, psn, 0)
                            .atomic(counter.address(), counter.rkey(), 1, 0)); // a retry
                    assertEquals(i, rig.one().atomicAckOriginal(), "the duplicate gets the recorded value");
                    if (i > 0) { // the one before is still in the ring (3 slots)
                        rig.feed(request(Opcode.FETCH_ADD, psn - 1, 0).atomic(counter.address(), counter.rkey(), 1, 0));
                        assertEquals(i - 1, rig.one().atomicAckOriginal());
                    }
                }
                assertEquals(
                        8, counter.segment().get(ValueLayout.JAVA_LONG, 0), "8 atomics, each executed exactly once");
                rig.feed(request(Opcode.FETCH_ADD, PEER_PSN, 0)
                        .atomic(counter.address(), counter.rkey(), 1, 0)); // long gone from the ring
                assertTrue(rig.drain().isEmpty());
                assertEquals(1, rig.count(Counter.RX_DUPLICATE_UNANSWERED));
                assertEquals(8, counter.segment().get(ValueLayout.JAVA_LONG, 0));
                assertEquals(QpState.RTS, rig.qp.state());
            }
        }
    }

    @Test
    void aDuplicateAskingForAnotherRangeOrKeyIsNotAnswered() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion src = rig.mrBindable(8192), counter = rig.mrBindable(8);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0).reth(src.address(), src.rkey(), 3000));
            assertEquals(3, rig.drain().size());
            rig.feed(request(Opcode.FETCH_ADD, PEER_PSN + 3, 0).atomic(counter.address(), counter.rkey(), 1, 0));
            rig.drain();
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN + 1, 0)
                    .reth(src.address() + 4096, src.rkey(), 2000)); // not where packet 1 lies
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN + 1, 0)
                    .reth(src.address() + 1024, src.rkey(), 5000)); // longer than the READ
            rig.feed(request(Opcode.FETCH_ADD, PEER_PSN + 3, 0)
                    .atomic(counter.address() - 8, counter.rkey(), 1, 0)); // another address
            assertTrue(rig.drain().isEmpty());
            assertEquals(3, rig.count(Counter.RX_DUPLICATE_UNANSWERED));
            assertEquals(1, counter.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void messagesLongerThanMaxMsgSzAreRefused() {
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(4096);
            rig.feed(request(Opcode.RDMA_WRITE_FIRST, PEER_PSN, 1024)
                    .reth(buf.address(), buf.rkey(), SoftContext.MAX_MSG + 1));
            assertEquals(Responder.State.ERR_INVALID_REQUEST, rig.qp.responder.lastOutcome);
            RocePacket nak = rig.one();
            assertEquals(Aeth.NAK_INVALID_REQUEST, Aeth.value(nak.aethSyndrome()));
        }
        try (EngineRig rig = new EngineRig()) {
            MemoryRegion buf = rig.mrBindable(4096);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0).reth(buf.address(), buf.rkey(), 0xFFFF_FFFFL));
            assertEquals(Aeth.NAK_INVALID_REQUEST, Aeth.value(rig.one().aethSyndrome()));
            assertEquals(QpState.ERR, rig.qp.state());
        }
    }

    @Test
    void thePsnSpanInFlightStaysInsideAQuarterOfThePsnSpace() {
        assertTrue(SoftContext.MAX_MSG / 256 <= Requester.MAX_OUTSTANDING_PSNS, "the largest message at MTU 256 fits");
        assertTrue(2L * Requester.MAX_OUTSTANDING_PSNS <= Psn.HALF);
        EngineRig.Opts o = new EngineRig.Opts();
        o.mtu = Mtu.MTU_256;
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion big = rig.sparseMr(SoftContext.MAX_MSG), small = rig.mrBindable(64);
            // one byte more than max_msg_sz: refused locally
            SendWorkRequest tooLong = new SendWorkRequest(2)
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .numSge(2)
                    .remote(0x1000, 0x1234);
            tooLong.sge(0).set(big, 0, (int) SoftContext.MAX_MSG);
            tooLong.sge(1).set(small, 0, 1);
            rig.qp.postSend(tooLong);
            assertEquals(WcStatus.LOC_LEN_ERR, rig.poll().status);
        }
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion big = rig.sparseMr(SoftContext.MAX_MSG), small = rig.mrBindable(64);
            rig.qp.postSend(write(small, 1, 8)); // PSN 100, not yet acknowledged
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(big, 0, (int) SoftContext.MAX_MSG)
                    .remote(0x1000, 0x1234)); // 2^22 packets: would span 2^22 + 1 PSNs
            assertEquals(1, rig.drain().size());
            assertEquals(Requester.State.WAIT_PSN_SPACE, rig.qp.requester.stoppedAt);
            rig.feed(ack(MY_PSN));
            List<RocePacket> burst = rig.drain();
            assertEquals(rig.qp.requester.window, burst.size(), "a window of the big WRITE goes out");
            assertEquals(MY_PSN + 1, burst.getFirst().psn());
            int lastPsn = MY_PSN + 1 + (1 << 22) - 1;
            rig.feed(nak(lastPsn, Aeth.NAK_PSN_SEQUENCE_ERROR)); // the big WRITE's last PSN: assigned, not sent yet
            rig.feed(ack(lastPsn));
            assertEquals(2, rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW));
            assertEquals(MY_PSN + 1, rig.qp.completer.oldestUnacked, "an ACK of an unsent PSN moves nothing");
            rig.feed(ack(MY_PSN + rig.qp.requester.window));
            assertEquals(rig.qp.requester.window, rig.drain().size(), "the window slides by what was acknowledged");
        }
    }

    @Test
    void readResponsesGoOutOneWindowPerTurnAndAcksWaitBehindThem() {
        try (EngineRig rig = new EngineRig()) {
            int size = 2 << 20, packets = size / 1024, turn = rig.qp.requester.ackEvery; // a quarter window per turn
            MemoryRegion src = rig.mrBindable(size), dst = rig.mrBindable(64);
            RcPair.fill(src.segment(), size, 5);
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN, 0).reth(src.address(), src.rkey(), size));
            assertEquals(turn, rig.drain().size(), "one turn, then the receive loop serves others");
            // a WRITE that asks for an ACK arrives meanwhile: its ACK must not overtake the READ's responses
            rig.feed(request(Opcode.RDMA_WRITE_ONLY, PEER_PSN + packets, 8)
                    .reth(dst.address(), dst.rkey(), 8)
                    .payload(8, 1));
            assertTrue(rig.drain().isEmpty());
            int turns = 0, sent = turn;
            RocePacket last = null;
            for (boolean more = true; more; turns++) {
                more = rig.transport.runTurns();
                List<RocePacket> out = rig.drain();
                assertTrue(out.size() <= turn + 1, "at most a quarter window per turn");
                sent += out.size();
                if (!out.isEmpty()) last = out.getLast();
            }
            assertEquals(packets / turn - 1, turns, "the first turn went out with the request");
            assertEquals(packets + 1, sent, "every response, then the ACK");
            assertEquals(Opcode.ACKNOWLEDGE.code(), last.opcode());
            assertEquals(PEER_PSN + packets, last.psn());
            // a duplicate asking for five packets from the tenth gets exactly those five
            rig.feed(request(Opcode.RDMA_READ_REQUEST, PEER_PSN + 10, 0)
                    .reth(src.address() + 10 * 1024, src.rkey(), 5 * 1024));
            List<RocePacket> replay = rig.drain();
            assertEquals(5, replay.size(), EngineRig.describe(replay));
            assertEquals(PEER_PSN + 10, replay.getFirst().psn());
            assertEquals(PEER_PSN + 14, replay.getLast().psn());
            assertEquals(
                    Opcode.RDMA_READ_RESPONSE_MIDDLE.code(), replay.getLast().opcode());
            RcPair.assertFilled(
                    java.lang.foreign.MemorySegment.ofBuffer(replay.getFirst().buffer()),
                    replay.getFirst().payloadOffset(),
                    1024,
                    5 + 31 * 10 * 1024);
        }
    }

    @Test
    void aLargeReadIsAskedForOneWindowAtATime() {
        try (EngineRig rig = new EngineRig()) {
            int window = rig.qp.requester.window, size = 3 * window * 1024 + 100;
            MemoryRegion local = rig.mrBindable(size);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 0, size)
                    .remote(0x10000, 0x99));
            rig.qp.postSend(write(local, 2, 8));
            RocePacket req = rig.one();
            assertEquals(MY_PSN, req.psn());
            assertEquals((long) window * 1024, req.rethLength());
            assertEquals(Requester.State.WAIT_READ_RESPONSES, rig.qp.requester.stoppedAt);
            int psn = MY_PSN;
            for (int chunk = 0; chunk < 4; chunk++) {
                int n = chunk < 3 ? window : 1;
                for (int k = 0; k < n; k++, psn++) {
                    int opc = n == 1
                            ? Opcode.RDMA_READ_RESPONSE_ONLY.code()
                            : k == 0
                                    ? Opcode.RDMA_READ_RESPONSE_FIRST.code()
                                    : k == n - 1
                                            ? Opcode.RDMA_READ_RESPONSE_LAST.code()
                                            : Opcode.RDMA_READ_RESPONSE_MIDDLE.code();
                    EngineRig.Pkt p = new EngineRig.Pkt(opc, psn, false, chunk < 3 ? 1024 : 100);
                    if (k == 0 || k == n - 1) p.aeth(0x1F, 1);
                    rig.feed(p.payload(chunk < 3 ? 1024 : 100, chunk));
                    if (k < n - 1) assertTrue(rig.sent.isEmpty(), "no request before the window's responses are in");
                }
                if (chunk < 3) {
                    List<RocePacket> sent = rig.drain();
                    RocePacket next = sent.getFirst();
                    assertEquals(Opcode.RDMA_READ_REQUEST.code(), next.opcode());
                    assertEquals(psn, next.psn());
                    assertEquals(0x10000 + (long) (chunk + 1) * window * 1024, next.rethVa());
                    // the WRITE behind the READ goes out once the READ's last window is asked for
                    assertEquals(chunk == 2 ? 2 : 1, sent.size(), EngineRig.describe(sent));
                }
            }
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
        }
    }

    /**
     * Every datagram a UD or RC QP cannot take is counted, none silently lost (they were uncounted before): a wrong
     * Q_Key (rx_bad_qkey), no receive posted (rx_no_receive), a UD datagram addressed to an RC QP (rx_malformed).
     */
    @Test
    void datagramsThatCannotBeTakenAreCounted() throws Exception {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
                RcPair rc = SoftDevices.pair()) { // an RC connection in RTS; UD QPs beside it on side a
            dev.jrdma.verbs.Context ctx = rc.a.ctx;
            {
                dev.jrdma.verbs.ProtectionDomain pd = rc.a.pd;
                dev.jrdma.verbs.CompletionQueue cqA = ctx.createCq(16, null), cqB = ctx.createCq(16, null);
                dev.jrdma.verbs.QueuePair a = pd.createQueuePair(dev.jrdma.verbs.QpInitAttr.builder(cqA)
                        .type(dev.jrdma.verbs.QpType.UD)
                        .maxSendWr(8)
                        .maxRecvWr(8)
                        .build());
                dev.jrdma.verbs.QueuePair b = pd.createQueuePair(dev.jrdma.verbs.QpInitAttr.builder(cqB)
                        .type(dev.jrdma.verbs.QpType.UD)
                        .maxSendWr(8)
                        .maxRecvWr(8)
                        .build());
                for (dev.jrdma.verbs.QueuePair q : List.of(a, b)) UdWalk.walk(q, 1, 0x1111, 1);
                MemoryRegion buf = pd.registerMemory(arena.allocate(4096, 64), dev.jrdma.verbs.Access.LOCAL_WRITE);
                dev.jrdma.verbs.AddressHandle toA = pd.createAddressHandle(
                        new dev.jrdma.verbs.AhAttr().portNum(1).global(ctx.queryGid(1, 0), 0));
                dev.jrdma.verbs.AddressHandle toB = pd.createAddressHandle(
                        new dev.jrdma.verbs.AhAttr().portNum(1).global(rc.b.ctx.queryGid(1, 0), 0));
                java.util.Map<String, Long> before = ctx.counters();
                b.postRecv(new RecvWorkRequest().wrId(1).buffer(buf, 1024, 1024));
                a.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .wrId(1)
                        .signaled(true)
                        .buffer(buf, 0, 8)
                        .ud(toA, b.qpNum(), 0x2222)); // wrong Q_Key
                awaitCounter(ctx, "rx_bad_qkey", before.get("rx_bad_qkey") + 1);
                b.postRecv(new RecvWorkRequest()
                        .wrId(2)
                        .buffer(buf, 2048, 1024)); // two receives now: the first must still be there
                a.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .wrId(2)
                        .signaled(true)
                        .buffer(buf, 0, 8)
                        .ud(toA, a.qpNum(), 0x1111)); // a posted none
                awaitCounter(ctx, "rx_no_receive", before.get("rx_no_receive") + 1);
                long malformed = rc.b.ctx.counters().get("rx_malformed");
                a.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .wrId(3)
                        .signaled(true)
                        .buffer(buf, 0, 8)
                        .ud(toB, rc.b.qp.qpNum(), 0x1111)); // an RC QP
                awaitCounter(rc.b.ctx, "rx_malformed", malformed + 1);
                WorkCompletion[] wc = WorkCompletion.array(4);
                assertEquals(0, cqB.poll(wc), "the datagram with the wrong Q_Key took no receive");
                a.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .wrId(4)
                        .signaled(true)
                        .buffer(buf, 0, 8)
                        .ud(toA, b.qpNum(), 0x1111));
                assertEquals(1, SoftDevices.poll(cqB).wrId, "a right datagram takes the first receive");
            }
        }
    }

    private static void awaitCounter(dev.jrdma.verbs.Context ctx, String name, long want) throws InterruptedException {
        assertEquals(want, SoftDevices.awaitCounter(ctx, name, want), name);
    }

    @Test
    void corruptedAndMalformedPacketsAreDroppedAndCounted() throws Exception {
        try (RcPair p = pair();
                DatagramChannel ch = DatagramChannel.open(StandardProtocolFamily.INET)) {
            ch.bind(new InetSocketAddress(A, 0));
            int srcPort = ((InetSocketAddress) ch.getLocalAddress()).getPort();
            SoftContext ctx = (SoftContext) p.b.ctx;
            SoftContext.Stats before = ctx.stats();
            long icrcBefore = p.b.ctx.counters().get("rx_bad_icrc");
            ByteBuffer b = ByteBuffer.allocate(64);
            int len = RocePacket.writeBth(
                    b, 0, Opcode.SEND_ONLY.code(), false, Bth.DEFAULT_PKEY, p.b.qp.qpNum(), true, 5000, 8);
            new Icrc().generate(b, 0, len, A.hashCode(), B.hashCode(), srcPort, SoftDevices.PORT);
            b.put(14, (byte) (b.get(14) ^ 0x10)); // flip a payload bit after the ICRC
            ch.send(b.slice(0, len), new InetSocketAddress(B, SoftDevices.PORT));
            ch.send(ByteBuffer.wrap(new byte[] {1, 2, 3}), new InetSocketAddress(B, SoftDevices.PORT));
            // valid ICRC, unknown opcode
            ByteBuffer m = ByteBuffer.allocate(64);
            RocePacket.writeBth(m, 0, Opcode.SEND_ONLY.code(), false, Bth.DEFAULT_PKEY, p.b.qp.qpNum(), true, 5000, 0);
            m.put(0, (byte) 0x15);
            new Icrc().generate(m, 0, 16, A.hashCode(), B.hashCode(), srcPort, SoftDevices.PORT);
            ch.send(m.slice(0, 16), new InetSocketAddress(B, SoftDevices.PORT));
            long end = System.nanoTime() + 5_000_000_000L;
            while (ctx.stats().rxMalformed() == before.rxMalformed() && System.nanoTime() < end) Thread.sleep(1);
            SoftContext.Stats after = ctx.stats();
            assertEquals(2, after.rxBadIcrc() - before.rxBadIcrc());
            assertEquals(1, after.rxMalformed() - before.rxMalformed());
            assertEquals(2, p.b.ctx.counters().get("rx_bad_icrc") - icrcBefore);
            // the QP is unharmed
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 8));
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        }
    }
}
