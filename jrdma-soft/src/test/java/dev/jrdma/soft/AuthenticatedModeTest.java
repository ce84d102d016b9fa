package dev.jrdma.soft;

import static dev.jrdma.soft.EngineRig.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 21 §7: the authenticated mode ({@code QpAttr.packetAuthKey}, {@link PacketAuth}). An outsider on the peer's
 * address who knows the QP numbers and rkeys and guesses PSNs, and computes the ICRC (a CRC), forges each packet
 * here. Each test runs twice: plain ({@code false}), where the forgery does what it does on RoCEv2 today, and
 * authenticated ({@code true}), where it is dropped in {@code rx_bad_mac} and changes nothing: no memory, no
 * completion, no QP state, no packet sent. The packets go through the device's receive checks ({@link PacketDispatch}).
 */
class AuthenticatedModeTest {
    static final byte[] KEY = java.util.HexFormat.of().parseHex("000102030405060708090a0b0c0d0e0f");

    private static EngineRig rig(boolean authenticated) {
        EngineRig.Opts o = new EngineRig.Opts();
        if (authenticated) o.authKey = KEY.clone();
        return new EngineRig(o);
    }

    private static SendWorkRequest send(MemoryRegion src, long wrId, int len) {
        return new SendWorkRequest()
                .wrId(wrId)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(src, 0, len);
    }

    /** Nothing the forgeries could have changed did: no completion, no packet sent, the QP still in RTS. */
    private static void assertUntouched(EngineRig rig, long forged) {
        assertEquals(forged, rig.count(Counter.RX_BAD_MAC), "every forgery counted");
        rig.assertNoCompletion();
        assertTrue(rig.drain().isEmpty(), "no packet sent in answer");
        assertEquals(QpState.RTS, rig.qp.state());
        assertEquals(
                0,
                rig.count(Counter.RX_RESPONSE_OUT_OF_WINDOW)
                        + rig.count(Counter.RX_RESPONSE_IGNORED)
                        + rig.count(Counter.RX_OUT_OF_SEQUENCE)
                        + rig.count(Counter.RX_DUPLICATE_REQUEST),
                "no forgery reached the transport");
    }

    @ParameterizedTest(name = "authenticated={0}")
    @ValueSource(booleans = {false, true})
    void naksSweepingThePsnSpace(boolean authenticated) {
        try (EngineRig rig = rig(authenticated)) {
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(send(src, 1, 8)); // PSN 100
            rig.drain();
            long forged = 0;
            for (int psn = 0;
                    psn < 1 << 24;
                    psn += 4096) { // the whole space coarsely, the window's neighbourhood one by one
                rig.feedWire(nak(psn, Aeth.NAK_REMOTE_ACCESS_ERROR), null);
                forged++;
            }
            for (int d = -2048; d < 2048; d++) {
                rig.feedWire(nak(Psn.add(MY_PSN, d), Aeth.NAK_REMOTE_ACCESS_ERROR), null);
                forged++;
            }
            if (!authenticated) { // plain RoCEv2: the NAK at the PSN in flight tears the connection down
                assertEquals(WcStatus.REM_ACCESS_ERR, rig.poll().status);
                assertEquals(QpState.ERR, rig.qp.state());
                assertEquals(0, rig.count(Counter.RX_BAD_MAC));
                return;
            }
            assertUntouched(rig, forged);
            rig.feedWire(ack(MY_PSN), rig.peerAuth); // the peer's own ACK still completes the send
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
        }
    }

    @ParameterizedTest(name = "authenticated={0}")
    @ValueSource(booleans = {false, true})
    void anInWindowForgedAck(boolean authenticated) {
        try (EngineRig rig = rig(authenticated)) {
            MemoryRegion src = rig.mrBindable(64);
            rig.qp.postSend(send(src, 1, 8)); // PSN 100: not yet received by the peer
            rig.drain();
            rig.feedWire(ack(MY_PSN), null);
            if (!authenticated) { // plain: the send completes as delivered though the peer never got it
                assertEquals(WcStatus.SUCCESS, rig.poll().status);
                return;
            }
            assertUntouched(rig, 1);
            rig.clock.advanceMillis(200); // the send is still outstanding: its timer resends it
            rig.tick();
            assertEquals(MY_PSN, rig.one().psn());
        }
    }

    @ParameterizedTest(name = "authenticated={0}")
    @ValueSource(booleans = {false, true})
    void aForgedReadResponse(boolean authenticated) {
        try (EngineRig rig = rig(authenticated)) {
            MemoryRegion dst = rig.mrBindable(64);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(dst, 0, 8)
                    .remote(0x1000, 0x1234));
            rig.drain();
            rig.feedWire(
                    new Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), MY_PSN, false, 8)
                            .aeth(Aeth.ackSyndrome(Aeth.CREDITS_INVALID), 0)
                            .payload(8, 66),
                    null);
            MemorySegment mem = dst.segment();
            if (!authenticated) { // plain: the forger's bytes land in the reader's memory and the READ completes
                assertEquals(WcStatus.SUCCESS, rig.poll().status);
                assertEquals((byte) 66, mem.get(ValueLayout.JAVA_BYTE, 0));
                return;
            }
            assertUntouched(rig, 1);
            for (int i = 0; i < 8; i++)
                assertEquals(0, mem.get(ValueLayout.JAVA_BYTE, i), "the reader's memory is untouched");
            rig.feedWire(
                    new Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), MY_PSN, false, 8)
                            .aeth(Aeth.ackSyndrome(Aeth.CREDITS_INVALID), 0)
                            .payload(8, 5),
                    rig.peerAuth);
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
            assertEquals((byte) 5, mem.get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    @ParameterizedTest(name = "authenticated={0}")
    @ValueSource(booleans = {false, true})
    void aWriteAtTheExactPsn(boolean authenticated) {
        try (EngineRig rig = rig(authenticated)) {
            MemoryRegion target = rig.mrBindable(4096);
            rig.feedWire(
                    request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 64)
                            .reth(target.address(), target.rkey(), 64)
                            .payload(64, 9),
                    null);
            MemorySegment mem = target.segment();
            if (!authenticated) { // plain: the forger writes the server's memory and is ACKed
                assertEquals((byte) 9, mem.get(ValueLayout.JAVA_BYTE, 0));
                assertEquals(Opcode.ACKNOWLEDGE.code(), rig.one().opcode());
                return;
            }
            assertUntouched(rig, 1);
            for (int i = 0; i < 64; i++) assertEquals(0, mem.get(ValueLayout.JAVA_BYTE, i), "memory untouched");
            // the expected PSN did not move: the peer's own WRITE at that PSN is executed and ACKed
            rig.feedWire(
                    request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 64)
                            .reth(target.address(), target.rkey(), 64)
                            .payload(64, 1),
                    rig.peerAuth);
            assertEquals((byte) 1, mem.get(ValueLayout.JAVA_BYTE, 0));
            RocePacket acked = rig.one();
            assertEquals(Opcode.ACKNOWLEDGE.code(), acked.opcode());
            assertEquals(PEER_PSN, acked.psn());
        }
    }

    @ParameterizedTest(name = "authenticated={0}")
    @ValueSource(booleans = {false, true})
    void aBlindPsnSweepOfWritesWithAKnownRkey(boolean authenticated) {
        try (EngineRig rig = rig(authenticated)) {
            MemoryRegion target = rig.mrBindable(4096);
            int forged = 0;
            for (int d = -1024; d < 1024; d++, forged++) {
                rig.feedWire(
                        request(Opcode.RDMA_WRITE_ONLY, Psn.add(PEER_PSN, d), 64)
                                .reth(target.address(), target.rkey(), 64)
                                .payload(64, 0x40 + (d & 0x3F)),
                        null);
            }
            boolean written = false;
            for (int i = 0; i < 64; i++) written |= target.segment().get(ValueLayout.JAVA_BYTE, i) != 0;
            if (!authenticated) { // plain: the guess at the expected PSN lands
                assertTrue(written, "the sweep wrote the memory");
                return;
            }
            assertFalse(written, "memory untouched");
            assertUntouched(rig, forged);
        }
    }

    @Test
    void aTagUnderAnotherKeyOrForAnotherSenderIsAForgeryToo() {
        try (EngineRig rig = rig(true)) {
            MemoryRegion target = rig.mrBindable(4096);
            byte[] other = KEY.clone();
            other[15] ^= 1;
            rig.feedWire(
                    request(Opcode.RDMA_WRITE_ONLY, PEER_PSN, 64)
                            .reth(target.address(), target.rkey(), 64)
                            .payload(64, 9),
                    new PacketAuth(other));
            // the QP's own packet reflected back to it: signed by the right key, but as this QP's, not as its peer's
            rig.qp.postSend(send(rig.mrBindable(64), 1, 8));
            List<java.nio.ByteBuffer> out = List.copyOf(rig.sent);
            rig.sent.clear();
            assertEquals(1, out.size());
            java.nio.ByteBuffer reflected = out.getFirst();
            PacketDispatch d = new PacketDispatch(IpAddress.of(LOCAL), PORT, rig.transport.qps, rig.transport.counters);
            dev.jrdma.soft.wire.Bth.setDestQp(reflected, 0, rig.qp.qpNum());
            int len = reflected.capacity();
            new dev.jrdma.soft.wire.Icrc()
                    .generate(
                            reflected,
                            0,
                            len,
                            IpAddress.of(PEER).ipv4(),
                            IpAddress.of(LOCAL).ipv4(),
                            PORT,
                            PORT);
            assertFalse(d.handle(
                    new Receiver(3, new OwedAcks(rig.transport.counters, "test")),
                    new java.net.InetSocketAddress(PEER, PORT),
                    reflected,
                    MemorySegment.ofBuffer(reflected),
                    len,
                    false));
            assertEquals(2, rig.count(Counter.RX_BAD_MAC));
            assertEquals(0, target.segment().get(ValueLayout.JAVA_BYTE, 0));
        }
    }

    @Test
    void theKeyIsTakenInInitToRtrOfAnRcQpOnlyAndIsSixteenBytes() {
        assertThrows(IllegalArgumentException.class, () -> new QpAttr().packetAuthKey(new byte[15]));
        try (EngineRig rig = rig(false)) {
            assertTrue(rig.ctx.supportsPacketAuth());
            VerbsException e = assertThrows(VerbsException.class, () -> rig.qp.modify(new QpAttr().packetAuthKey(KEY)));
            assertTrue(e.getMessage().contains("PACKET_AUTH_KEY"), e.getMessage());
            assertFalse(new QpAttr().packetAuthKey(KEY).toString().contains("0f"), "the key is never printed");
            QueuePair ud = rig.pd.createQueuePair(
                    dev.jrdma.verbs.QpInitAttr.builder(rig.cq).type(QpType.UD).build());
            ud.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(1));
            assertThrows(
                    VerbsException.class,
                    () -> ud.modify(new QpAttr().state(QpState.RTR).packetAuthKey(KEY)));
        }
    }

    /**
     * {@code -Djrdma.soft.packetAuthKey} (for programs that never negotiate, e.g. jrdma perf): every RC QP of the
     * process takes it in INIT->RTR. A child JVM with the property connects two devices with no key in any modify.
     */
    @Test
    void aPresharedKeyPropertyPutsEveryRcQpOfTheProcessInTheMode() throws Exception {
        assertNull(PacketAuth.PRESHARED, "this JVM runs without the property");
        String javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java")
                .toString();
        Process child = new ProcessBuilder(
                        javaBin,
                        "--enable-native-access=ALL-UNNAMED",
                        "-Djrdma.soft.packetAuthKey=" + java.util.HexFormat.of().formatHex(KEY),
                        "-cp",
                        System.getProperty("java.class.path"),
                        PresharedKeyMain.class.getName())
                .redirectErrorStream(true)
                .start();
        String out = new String(child.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(child.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
        assertEquals(0, child.exitValue(), out);
        assertTrue(out.contains("qps_packet_auth=2 rx_bad_mac=0 OK"), out);
    }

    /** Two devices over UDP: with the same key they talk; a peer without it is not heard, and its requests time out. */
    @Test
    void overTheSocketOnlyThePeerWithTheKeyIsHeard() throws Exception {
        try (RcPair p = SoftDevices.pair(o -> o.authKey(KEY.clone()))) {
            // the two devices are shared by the JVM's tests: their counters start where earlier tests left them
            long badMacBefore =
                    p.a.ctx.counters().get("rx_bad_mac") + p.b.ctx.counters().get("rx_bad_mac");
            MemoryRegion a = p.a.mrAll(8192), b = p.b.mrAll(8192);
            RcPair.fill(a.segment(), 3000, 4);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(b, 0, 4096));
            p.a.qp.postSend(send(a, 1, 3000));
            assertEquals(WcStatus.SUCCESS, SoftDevices.poll(p.a.cq).status);
            WorkCompletion got = SoftDevices.poll(p.b.cq);
            assertEquals(WcStatus.SUCCESS, got.status);
            assertEquals(3000, got.byteLen);
            RcPair.assertFilled(b.segment(), 0, 3000, 4);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(a, 4096, 3000)
                    .remote(b.address(), b.rkey()));
            assertEquals(WcStatus.SUCCESS, SoftDevices.poll(p.a.cq).status);
            RcPair.assertFilled(a.segment(), 4096, 3000, 4);
            assertEquals(
                    badMacBefore,
                    p.a.ctx.counters().get("rx_bad_mac") + p.b.ctx.counters().get("rx_bad_mac"));
        }
        try (RcPair p = SoftDevices.pair(o -> o.cqe(64).connect(false))) {
            RcPair.Side a = p.a, b = p.b;
            p.walk(a, b, 100, 5000).packetAuthKey(KEY.clone()).walk(a.qp);
            p.walk(b, a, 5000, 100).timeout(10).retryCnt(1).walk(b.qp);
            MemoryRegion mb = b.mrAll(64), ma = a.mrAll(64);
            long badMac = a.ctx.counters().get("rx_bad_mac");
            b.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(mb, 0, 8)
                    .remote(ma.address(), ma.rkey()));
            assertEquals(WcStatus.RETRY_EXC_ERR, SoftDevices.poll(b.cq, 10_000).status);
            // b's retries end in 13 ms (timeout 10, retry_cnt 1): a's receive thread may not have been scheduled to
            // take the retry yet (failed once at load 17 on 2 cores)
            assertTrue(
                    SoftDevices.awaitCounter(a.ctx, "rx_bad_mac", badMac + 2) >= badMac + 2,
                    "the first send and its retry dropped: " + a.ctx.counters());
            assertEquals(0, ma.segment().get(ValueLayout.JAVA_BYTE, 0));
        }
    }
}
