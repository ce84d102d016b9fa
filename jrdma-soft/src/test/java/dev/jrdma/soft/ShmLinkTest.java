package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The same-host link: devices of this host talk through each other's /dev/shm ring, not UDP; a ring that a sender
 * spoils costs counted drops and nothing else; without rings (off, or a peer without one) the devices fall back to
 * UDP; files go away with their device, and a dead process's files are replaced or swept.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmLinkTest {

    static Transport transport(Context c) {
        return ((SoftContext) c).transport;
    }

    /** Opens a pair of devices on {@code a} and {@code b} on a free port, under {@code -Djrdma.soft.shm=modeA/modeB} (null: default). */
    static RcPair pairOn(String a, String b, String modeA, String modeB) {
        Inet4Address ipA = ip(a), ipB = ip(b);
        for (int attempt = 0; attempt < 50; attempt++) {
            int port = 20000 + (int) (Math.random() * 30000);
            Context anchorA = null, anchorB = null;
            try {
                anchorA = openWith(modeA, ipA, port);
                anchorB = openWith(modeB, ipB, port);
                Context ka = anchorA, kb = anchorB;
                RcPair p = pair(SoftProvider.open(ipA, port), SoftProvider.open(ipB, port), o -> {});
                ka.close(); // the pair's contexts hold the transports now
                kb.close();
                return p;
            } catch (VerbsException e) {
                if (anchorA != null) anchorA.close();
                if (anchorB != null) anchorB.close();
            }
        }
        throw new IllegalStateException("no free UDP port on " + a + " and " + b);
    }

    static Context openWith(String mode, Inet4Address ip, int port) {
        if (mode == null) return SoftProvider.open(ip, port).open();
        String old = System.getProperty("jrdma.soft.shm");
        System.setProperty("jrdma.soft.shm", mode);
        try {
            return SoftProvider.open(ip, port).open();
        } finally {
            if (old == null) System.clearProperty("jrdma.soft.shm");
            else System.setProperty("jrdma.soft.shm", old);
        }
    }

    /**
     * Waits until {@code t} sends to {@code peer} through its ring: the peer answered the HELLO that connecting the QP
     * sent (one UDP round trip; packets before that go over UDP).
     */
    static void awaitRing(Transport t, InetSocketAddress peer) throws InterruptedException {
        long end = System.nanoTime() + 10_000_000_000L;
        while (!t.shmLink().shmPeers().contains(peer) && System.nanoTime() < end) Thread.sleep(1);
        assertTrue(
                t.shmLink().shmPeers().contains(peer),
                () -> "no proven ring to " + peer + ": " + t.linkName() + " " + t.counters.snapshot());
    }

    /** A SEND, a WRITE and a READ from A to B, checked; returns how many packets A sent (ring or UDP). */
    static long exchange(RcPair p) {
        Transport ta = transport(p.a.ctx);
        long sent0 = ta.counters.get(Counter.TX_PACKETS);
        MemoryRegion a = p.a.mrAll(8192), b = p.b.mrAll(8192);
        fill(a.segment(), 3000, 5);
        p.b.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(b, 0, 4096));
        p.a.qp.postSend(new SendWorkRequest()
                .wrId(1)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(a, 0, 3000));
        WorkCompletion s = poll(p.a.cq), r = poll(p.b.cq);
        assertEquals(WcStatus.SUCCESS, s.status, s::toString);
        assertEquals(WcStatus.SUCCESS, r.status, r::toString);
        assertEquals(3000, r.byteLen);
        assertFilled(b.segment(), 0, 3000, 5);
        p.a.qp.postSend(new SendWorkRequest()
                .wrId(2)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(a, 0, 2000)
                .remote(b.address() + 4096, b.rkey()));
        assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        assertFilled(b.segment(), 4096, 2000, 5);
        p.a.qp.postSend(new SendWorkRequest()
                .wrId(3)
                .opcode(WrOpcode.RDMA_READ)
                .signaled(true)
                .buffer(a, 4096, 2000)
                .remote(b.address() + 4096, b.rkey()));
        assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
        assertFilled(a.segment(), 4096, 2000, 5);
        return ta.counters.get(Counter.TX_PACKETS) - sent0;
    }

    @Test
    void twoDevicesOnOneHostTalkThroughTheRings() throws InterruptedException {
        try (RcPair p = pairOn("127.0.0.19", "127.0.0.20", "auto", "auto")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            assertNotNull(ta.shmLink(), ta.linkName());
            assertNotNull(tb.shmLink(), tb.linkName());
            awaitRing(ta, new InetSocketAddress(tb.local.inet, tb.port));
            long txA = ta.counters.get(Counter.TX_SHM_PACKETS), rxB = tb.counters.get(Counter.RX_SHM_PACKETS);
            long badCells = tb.counters.get(Counter.RX_SHM_BAD_CELL), badIcrc = tb.counters.get(Counter.RX_BAD_ICRC);
            long sent = exchange(p);
            long sentShm = ta.counters.get(Counter.TX_SHM_PACKETS) - txA;
            assertTrue(sentShm >= 4, "A sent " + sentShm + " packets through the ring: " + ta.counters.snapshot());
            assertEquals(sent, sentShm, "every packet of A went through the ring");
            assertTrue(tb.counters.get(Counter.RX_SHM_PACKETS) - rxB >= 4, tb.counters.snapshot()::toString);
            assertTrue(ta.linkName().contains("same-host ring /dev/shm/jrdma-soft-"), ta.linkName());
            assertTrue(ta.linkName().contains("to 127.0.0.20:" + tb.port + " over shm"), ta.linkName());
            assertEquals(ta.linkName(), p.a.ctx.linkDescription());
            assertEquals(badCells, tb.counters.get(Counter.RX_SHM_BAD_CELL));
            assertEquals(badIcrc, tb.counters.get(Counter.RX_BAD_ICRC));
        }
    }

    /**
     * Devices that send IPv4 through a raw socket (what a non-loopback address gets with CAP_NET_RAW, e.g. each host of
     * jrdma-bench/scripts/compare-two-hosts.sh) prove their rings too: the proof datagram goes out verbatim. Before, the
     * raw link patched its last four bytes as if they were an ICRC, no HELLO ever matched its slot
     * ({@code rx_shm_unproven}), and such devices never used their rings.
     */
    @Test
    void devicesThatSendThroughARawSocketProveTheirRings() throws InterruptedException {
        RawIpv4Link probe = RawIpv4Link.open(ip("127.0.0.71"), 47917, new FaultyLinkTest.Recording());
        org.junit.jupiter.api.Assumptions.assumeTrue(probe != null, "no raw socket here (needs CAP_NET_RAW)");
        probe.close();
        String old = System.getProperty("jrdma.soft.ipv4.send");
        System.setProperty("jrdma.soft.ipv4.send", "raw");
        RcPair p;
        try {
            p = pairOn("127.0.0.71", "127.0.0.72", "auto", "auto");
        } finally {
            if (old == null) System.clearProperty("jrdma.soft.ipv4.send");
            else System.setProperty("jrdma.soft.ipv4.send", old);
        }
        try (p) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            assertTrue(ta.sendsRawIpv4() && tb.sendsRawIpv4(), ta.linkName());
            awaitRing(ta, new InetSocketAddress(tb.local.inet, tb.port));
            long txA = ta.counters.get(Counter.TX_SHM_PACKETS);
            long sent = exchange(p);
            assertEquals(
                    sent, ta.counters.get(Counter.TX_SHM_PACKETS) - txA, "every packet of A went through the ring");
            assertEquals(0, tb.counters.get(Counter.RX_SHM_UNPROVEN), tb.counters.snapshot()::toString);
        }
    }

    @Test
    void theRingFileIsTheUsersOnlyAndGoesAwayWithItsDevice() throws IOException {
        Path file;
        try (RcPair p = pairOn("127.0.0.21", "127.0.0.22", "auto", "auto")) {
            file = transport(p.b.ctx).shmLink().ring().path;
            assertTrue(Files.exists(file), file::toString);
            assertEquals(
                    EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                    Files.getPosixFilePermissions(file));
            assertEquals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"), Files.getAttribute(file, "unix:uid"));
            exchange(p);
        }
        assertFalse(Files.exists(file), "the ring file outlived its device: " + file);
    }

    @Test
    void withoutRingsTheDevicesFallBackToUdp() {
        // B has no ring (off): A finds none and sends over UDP, B sends over UDP too
        try (RcPair p = pairOn("127.0.0.23", "127.0.0.24", "auto", "off")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            assertNotNull(ta.shmLink());
            assertNull(tb.shmLink(), tb.linkName());
            assertFalse(tb.linkName().contains("same-host"), tb.linkName());
            long sent = exchange(p);
            assertTrue(sent >= 4);
            assertEquals(0, ta.counters.get(Counter.TX_SHM_PACKETS), "A sent nothing into a ring");
            assertEquals(0, tb.counters.get(Counter.TX_SHM_PACKETS), "B sent nothing into a ring");
            assertTrue(tb.counters.get(Counter.RX_PACKETS) >= sent, "B got A's packets over UDP");
            assertFalse(ta.linkName().contains("over shm"), ta.linkName());
        }
        // both off: plain UDP links
        try (RcPair p = pairOn("127.0.0.25", "127.0.0.26", "off", "off")) {
            assertNull(transport(p.a.ctx).shmLink());
            exchange(p);
        }
    }

    /** Without -Djrdma.soft.shm two devices of one host find each other's rings and talk through them. */
    @Test
    void autoIsTheDefault() {
        try (RcPair p = pairOn("127.0.0.45", "127.0.0.46", null, null)) {
            Transport ta = transport(p.a.ctx);
            assertNotNull(ta.shmLink(), ta.linkName());
            long shm0 = ta.counters.get(Counter.TX_SHM_PACKETS);
            exchange(p);
            assertTrue(
                    ta.counters.get(Counter.TX_SHM_PACKETS) > shm0,
                    "the exchange went through the rings: " + ta.linkName());
        }
    }

    @Test
    void aBadModeIsAClearError() {
        VerbsException e = assertThrows(
                VerbsException.class,
                () -> openWith("sometimes", ip("127.0.0.27"), 20000 + (int) (Math.random() * 30000)));
        assertTrue(e.getMessage().contains("jrdma.soft.shm='sometimes' is not auto, off or on"), e.getMessage());
    }

    /**
     * Whoever maps a ring can write anything into it: a length out of range, a cell marked full with garbage in it,
     * indices out of range, slots claimed by nobody. A slot whose sender proved its address (here a liar that holds a
     * UDP port of its own and writes garbage) costs a counted drop per cell (or the drop a UDP datagram with that content
     * costs); an unproven one is never read. The device keeps its receive thread, and the peers' connections work on.
     */
    @Test
    void aSpoiltRingCostsCountedDropsAndNothingElse() throws Exception {
        try (RcPair p = pairOn("127.0.0.28", "127.0.0.29", "auto", "auto")) {
            Transport tb = transport(p.b.ctx);
            exchange(p); // A holds a slot in B's ring now
            ShmRingFile ring = ShmRingFile.openPeer(tb.local, tb.port);
            assertNotNull(ring, "B's ring opens for a process of the same user");
            long bad0 = tb.counters.get(Counter.RX_SHM_BAD_CELL), rx0 = tb.counters.get(Counter.RX_PACKETS);
            long malformed0 = tb.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_BAD_ICRC);
            try (java.net.DatagramSocket liar =
                    new java.net.DatagramSocket(new InetSocketAddress(ip("127.0.0.27"), 0))) {
                MemorySegment seg = ring.segment;
                ShmSender claim = ShmSender.claim(ring, IpAddress.of(liar.getLocalAddress()), liar.getLocalPort());
                assertNotNull(claim);
                prove(liar, claim, tb);
                int slot = claim.slot();
                int[] lengths = {-1, 0, ShmRingFile.MAX_PACKET + 1, Integer.MAX_VALUE, 100, 64, Integer.MIN_VALUE};
                for (int i = 0; i < lengths.length; i++) {
                    long pos = claim.start + i, cell = ShmRingFile.cell(slot, pos);
                    seg.set(ValueLayout.JAVA_INT, cell + ShmRingFile.C_LENGTH, lengths[i]);
                    for (int j = 0; j < 64; j++)
                        seg.set(ValueLayout.JAVA_BYTE, cell + ShmRingFile.CELL_HEADER + j, (byte)
                                (j * 37 + 11)); // no RoCE packet
                    seg.set(
                            ValueLayout.JAVA_LONG,
                            cell + ShmRingFile.C_STATE,
                            pos - (pos & (ShmRingFile.CELLS - 1)) + 1); // full, for position pos
                }
                // a state from no lap at all further on: never taken
                seg.set(
                        ValueLayout.JAVA_LONG,
                        ShmRingFile.cell(slot, claim.start + lengths.length) + ShmRingFile.C_STATE,
                        0x7777_7777_7777L);
                // a slot nobody proved, full of the same garbage, and every claimed bit set: never read
                int other = (slot + 1) % ShmRingFile.SLOTS;
                seg.set(ValueLayout.JAVA_INT, ShmRingFile.H_CLAIMED, -1);
                seg.set(ValueLayout.JAVA_LONG, ShmRingFile.slot(other) + ShmRingFile.S_OWNER, -1L);
                for (int i = 0; i < 4; i++) {
                    long cell = ShmRingFile.cell(other, i);
                    seg.set(ValueLayout.JAVA_INT, cell + ShmRingFile.C_LENGTH, 64);
                    seg.set(ValueLayout.JAVA_LONG, cell + ShmRingFile.C_STATE, 1);
                }
                // wake B's receive thread (it may sleep: nobody polls B)
                try (DatagramChannel bell = DatagramChannel.open()) {
                    bell.send(ByteBuffer.allocate(0), new InetSocketAddress(tb.local.inet, tb.port));
                }
                long end = System.nanoTime() + 10_000_000_000L;
                while (tb.counters.get(Counter.RX_SHM_BAD_CELL) - bad0 < 5 && System.nanoTime() < end) Thread.sleep(5);
                assertEquals(
                        5,
                        tb.counters.get(Counter.RX_SHM_BAD_CELL) - bad0,
                        "lengths -1, 0, too long, MAX and MIN: " + tb.counters.snapshot());
                // rx_packets counts a packet before its checks: wait for the drops
                while (tb.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_BAD_ICRC) - malformed0 < 2
                        && System.nanoTime() < end) Thread.sleep(5);
                assertEquals(
                        2,
                        tb.counters.get(Counter.RX_PACKETS) - rx0,
                        "the two cells of garbage bytes were checked as datagrams, the unproven slot's never");
                assertEquals(
                        2,
                        tb.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_BAD_ICRC) - malformed0,
                        tb.counters.snapshot()::toString);
                assertTrue(tb.rxThreadAlive(), "B's receive thread survived");
            } finally {
                ring.close();
            }
            exchange(p); // and the connection works on
            assertTrue(tb.rxThreadAlive());
        }
    }

    @Test
    void aDeadProcesssFileIsReplacedOrSwept() throws Exception {
        long deadPid = deadPid();
        Inet4Address ip = ip("127.0.0.30");
        int port = 20000 + (int) (Math.random() * 30000);
        // a file left by a killed process: made, its pid changed to a dead one, never closed (the process "died")
        ShmRingFile left = ShmRingFile.create(IpAddress.of(ip), port);
        left.segment.set(ValueLayout.JAVA_LONG, ShmRingFile.H_PID, deadPid);
        ShmRingFile mapped = ShmRingFile.openPeer(IpAddress.of(ip), port);
        assertNull(mapped, "a sender takes no ring of a dead process");
        Object staleKey = Files.readAttributes(left.path, "unix:ino").get("ino");
        try (Context c = openWith("auto", ip, port)) {
            Transport t = transport(c);
            Path now = t.shmLink().ring().path;
            assertEquals(left.path, now);
            assertNotEquals(staleKey, Files.readAttributes(now, "unix:ino").get("ino"), "the device made its own file");
            assertFalse(left.isOpen(), "the stale ring is marked closed (a sender holding it looks again)");
        }
        // the sweep: another dead process's file, on an address no device opens
        ShmRingFile other = ShmRingFile.create(IpAddress.of(ip("127.0.0.31")), port);
        other.segment.set(ValueLayout.JAVA_LONG, ShmRingFile.H_PID, deadPid);
        assertTrue(Files.exists(other.path));
        ShmRingFile.sweepStale();
        assertFalse(Files.exists(other.path), "the sweep removed a dead process's file");
        left.close();
        other.close();
    }

    /** Sends the HELLO of {@code claim} from {@code from} (its own port) to B and waits for B's ACK. */
    private static void prove(java.net.DatagramSocket from, ShmSender claim, Transport tb) throws IOException {
        ByteBuffer hello = ShmProof.encode(ShmProof.HELLO, claim.slot(), claim.nonce, claim.start);
        byte[] bytes = new byte[hello.remaining()];
        hello.get(bytes);
        from.send(new java.net.DatagramPacket(bytes, bytes.length, new InetSocketAddress(tb.local.inet, tb.port)));
        from.setSoTimeout(10_000);
        java.net.DatagramPacket ack = new java.net.DatagramPacket(new byte[64], 64);
        from.receive(ack);
        assertEquals(ShmProof.BYTES, ack.getLength());
        assertEquals(
                ShmProof.ACK,
                ByteBuffer.wrap(ack.getData()).getInt(8),
                "B answers a HELLO from the address the slot names");
        assertEquals(new InetSocketAddress(tb.local.inet, tb.port), ack.getSocketAddress(), "from B's own port");
    }

    /**
     * A process of the same user claims a slot of B's ring in the name of A (A's address and port, which it does not
     * hold) and writes a well-formed RDMA WRITE at the PSN B expects from A, with a valid ICRC: B never takes it (the
     * slot is unproven: its HELLO came from another address), so B's memory keeps A's bytes. Before slots were proven,
     * B executed it.
     */
    @Test
    void aCellCannotClaimAnAddressItsWriterDoesNotHold() throws Exception {
        try (RcPair p = pairOn("127.0.0.45", "127.0.0.46", "auto", "auto")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            exchange(p);
            MemoryRegion a = p.a.mrAll(8192), b = p.b.mrAll(8192);
            fill(a.segment(), 64, 9);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(5)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(a, 0, 64)
                    .remote(b.address() + 6000, b.rkey()));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(b.segment(), 6000, 64, 9);
            ShmRingFile ring = ShmRingFile.openPeer(tb.local, tb.port);
            assertNotNull(ring);
            try (java.net.DatagramSocket forger =
                    new java.net.DatagramSocket(new InetSocketAddress(ip("127.0.0.47"), 0))) {
                // A's WRITE, as A put it in B's ring (the last cell of A's slot): the forger's template
                String rings = tb.shmLink().describeRings();
                int slotA = Integer.parseInt(rings.substring(rings.indexOf("slot ") + 5, rings.indexOf(':')));
                long tailA =
                        (long) ShmRingFile.LONG.getVolatile(ring.segment, ShmRingFile.slot(slotA) + ShmRingFile.S_TAIL);
                long last = ShmRingFile.cell(slotA, tailA - 1);
                int len = ring.segment.get(ValueLayout.JAVA_INT, last + ShmRingFile.C_LENGTH);
                ByteBuffer packet = ByteBuffer.allocate(len);
                MemorySegment.copy(
                        ring.segment, last + ShmRingFile.CELL_HEADER, MemorySegment.ofBuffer(packet), 0, len);
                assertEquals(b.rkey(), packet.getInt(dev.jrdma.soft.wire.Bth.BYTES + 8), "the template is A's WRITE");
                int expected;
                synchronized (p.b.qp) {
                    expected = ((SoftQp) p.b.qp).responder.expectedPsn;
                }
                dev.jrdma.soft.wire.Bth.setPsn(packet, 0, expected);
                for (int i = 0; i < 64; i++) packet.put(len - dev.jrdma.soft.wire.Icrc.BYTES - 64 + i, (byte) 0x5A);
                new dev.jrdma.soft.wire.Icrc()
                        .generate(packet, 0, len, ta.local.ipv4(), tb.local.ipv4(), ta.port, tb.port);
                // the forger claims a slot in A's name and puts the forgery in
                ShmSender claim = ShmSender.claim(ring, ta.local, ta.port);
                assertNotNull(claim);
                long cell = ShmRingFile.cell(claim.slot(), claim.start);
                ring.segment.set(ValueLayout.JAVA_INT, cell + ShmRingFile.C_LENGTH, len);
                MemorySegment.copy(
                        MemorySegment.ofBuffer(packet), 0, ring.segment, cell + ShmRingFile.CELL_HEADER, len);
                ShmRingFile.LONG.setVolatile(
                        ring.segment,
                        cell + ShmRingFile.C_STATE,
                        claim.start - (claim.start & (ShmRingFile.CELLS - 1)) + 1);
                long unproven0 = tb.counters.get(Counter.RX_SHM_UNPROVEN);
                // its HELLO can only come from its own address: B refuses it (and the empty datagram wakes B meanwhile)
                ByteBuffer hello = ShmProof.encode(ShmProof.HELLO, claim.slot(), claim.nonce, claim.start);
                byte[] bytes = new byte[ShmProof.BYTES];
                hello.get(bytes);
                forger.send(new java.net.DatagramPacket(
                        bytes, bytes.length, new InetSocketAddress(tb.local.inet, tb.port)));
                forger.send(new java.net.DatagramPacket(new byte[0], 0, new InetSocketAddress(tb.local.inet, tb.port)));
                long end = System.nanoTime() + 10_000_000_000L;
                while (tb.counters.get(Counter.RX_SHM_UNPROVEN) == unproven0 && System.nanoTime() < end)
                    Thread.sleep(5);
                assertEquals(
                        unproven0 + 1,
                        tb.counters.get(Counter.RX_SHM_UNPROVEN),
                        "B refused the HELLO: " + tb.counters.snapshot());
                Thread.sleep(200);
                exchange(p); // B's threads have run through its rings meanwhile
                assertFilled(b.segment(), 6000, 64, 9);
                assertEquals(
                        ShmRingFile.CELLS
                                + claim.start
                                - (claim.start & (ShmRingFile.CELLS - 1))
                                + 1
                                - ShmRingFile.CELLS,
                        (long) ShmRingFile.LONG.getVolatile(ring.segment, cell + ShmRingFile.C_STATE),
                        "the forged cell was never taken");
            } finally {
                ring.close();
            }
        }
    }

    /**
     * A process makes the ring file of an address it does not hold (B's, whose device has no rings): A, which finds the
     * file, sends its HELLO to B's port, hears nothing back, and keeps sending over UDP: nothing of its traffic goes
     * through the impostor's file, which the impostor could read.
     */
    @Test
    void aRingMadeByAnotherProcessThanThePeersGetsNothing() throws Exception {
        try (RcPair p = pairOn("127.0.0.48", "127.0.0.49", "auto", "off")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            ShmRingFile impostor = ShmRingFile.create(tb.local, tb.port);
            try {
                Thread.sleep(ShmLink.RECHECK_NANOS / 1_000_000
                        + 100); // A, on UDP to B, looks for B's ring again: the impostor's
                for (int i = 0; i < 3; i++) exchange(p);
                assertEquals(
                        0,
                        ta.counters.get(Counter.TX_SHM_PACKETS),
                        "nothing went into the impostor's ring: " + ta.counters.snapshot());
                assertFalse(ta.linkName().contains(" over shm"), ta.linkName());
                int claimed = (int) ShmRingFile.INT.getVolatile(impostor.segment, ShmRingFile.H_CLAIMED);
                assertEquals(1, Integer.bitCount(claimed), "A claimed a slot and waits for the proof");
                int slot = Integer.numberOfTrailingZeros(claimed);
                long start = impostor.segment.get(ValueLayout.JAVA_LONG, ShmRingFile.slot(slot) + ShmRingFile.S_START);
                assertEquals(
                        start,
                        (long) ShmRingFile.LONG.getVolatile(
                                impostor.segment, ShmRingFile.slot(slot) + ShmRingFile.S_TAIL),
                        "no cell written");
                long dropped = tb.counters.get(Counter.RX_MALFORMED) + tb.counters.get(Counter.RX_BAD_ICRC);
                assertTrue(
                        dropped >= 1, "B, without rings, counted the HELLO as a bad packet: " + tb.counters.snapshot());
                Thread.sleep(ShmLink.PROOF_TIMEOUT_NANOS / 1_000_000 + 100);
                exchange(p); // A gives the claim up: no answer came from B's port
                assertTrue(ta.counters.get(Counter.RX_SHM_UNPROVEN) >= 1, ta.counters.snapshot()::toString);
                assertEquals(0, ta.counters.get(Counter.TX_SHM_PACKETS));
            } finally {
                impostor.close();
            }
        }
    }

    /**
     * Someone truncates a device's ring file under both mappings: the sender faults and goes over UDP, the receiver
     * faults, makes a new file under the same name (counted, told once) and the pair talks on; a second later the
     * sender finds the new ring and uses it.
     */
    @Test
    void aTruncatedRingIsMadeAgainAndTheTrafficGoesOn() throws Exception {
        try (RcPair p = pairOn("127.0.0.33", "127.0.0.34", "auto", "auto")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            exchange(p);
            Path file = tb.shmLink().ring().path;
            Object inode = Files.readAttributes(file, "unix:ino").get("ino");
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.truncate(0);
            }
            for (int i = 0; i < 3; i++) exchange(p); // through the fault, the rebuild and UDP
            assertEquals(1, tb.counters.get(Counter.RX_SHM_RING_REBUILDS), tb.counters.snapshot()::toString);
            assertEquals(ShmRingFile.FILE_BYTES, Files.size(file), "a whole new file under the same name");
            assertNotEquals(inode, Files.readAttributes(file, "unix:ino").get("ino"));
            Thread.sleep(ShmLink.RECHECK_NANOS / 1_000_000 + 100); // A looks for B's ring again after a while on UDP
            exchange(p); // finds the new file, claims a slot, says HELLO
            awaitRing(ta, new InetSocketAddress(tb.local.inet, tb.port));
            long shm = ta.counters.get(Counter.TX_SHM_PACKETS);
            long sent = exchange(p);
            assertEquals(
                    sent,
                    ta.counters.get(Counter.TX_SHM_PACKETS) - shm,
                    "A sends through B's new ring: " + ta.linkName());
            assertEquals(1, tb.counters.get(Counter.RX_SHM_RING_REBUILDS));
        }
    }

    /** A device's file replaced by another under its name: the receive thread notices before it sleeps and makes its own again. */
    @Test
    void aReplacedRingFileIsMadeAgain() throws Exception {
        try (RcPair p = pairOn("127.0.0.35", "127.0.0.36", "auto", "auto")) {
            Transport tb = transport(p.b.ctx);
            exchange(p);
            Path file = tb.shmLink().ring().path;
            Path other = file.resolveSibling(file.getFileName() + ".other");
            Files.write(other, new byte[4096]);
            Files.move(
                    other,
                    file,
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            long deadline = System.nanoTime() + 15_000_000_000L;
            while (tb.counters.get(Counter.RX_SHM_RING_REBUILDS) == 0 && System.nanoTime() < deadline) {
                exchange(p); // wakes B's receive thread, which checks its file before it sleeps again (at most once a
                // second)
                Thread.sleep(100);
            }
            assertEquals(
                    1, tb.counters.get(Counter.RX_SHM_RING_REBUILDS), "B's receive thread found its file replaced");
            assertEquals(ShmRingFile.FILE_BYTES, Files.size(file));
            exchange(p);
        }
    }

    /**
     * A receiver that stops taking (its process killed outright: the file stays, open, and fills): a sender with a full
     * ring checks the peer, finds its process gone and sends over UDP instead of waiting for room forever.
     */
    @Test
    void aFullRingOfADeadReceiverIsLeftForUdp() throws Exception {
        long deadPid = deadPid();
        try (RcPair p = pairOn("127.0.0.37", "127.0.0.38", "auto", "auto")) {
            Transport ta = transport(p.a.ctx), tb = transport(p.b.ctx);
            exchange(p);
            ShmRingFile ring = tb.shmLink().ring();
            // B "dies" as a killed process does: its file stays, open, with its pid, and nothing takes from A's slot
            ring.segment.set(ValueLayout.JAVA_LONG, ShmRingFile.H_PID, deadPid);
            String rings = tb.shmLink().describeRings();
            int slot = Integer.parseInt(rings.substring(rings.indexOf("slot ") + 5, rings.indexOf(':')));
            long tail = (long) ShmRingFile.LONG.getVolatile(ring.segment, ShmRingFile.slot(slot) + ShmRingFile.S_TAIL);
            for (long pos = tail; pos < tail + ShmRingFile.CELLS; pos++) {
                long lap = pos - (pos & (ShmRingFile.CELLS - 1));
                // full with a packet of the lap before, which the receiver would take first: the sender waits for room
                ShmRingFile.LONG.setVolatile(
                        ring.segment, ShmRingFile.cell(slot, pos) + ShmRingFile.C_STATE, lap - ShmRingFile.CELLS + 1);
            }
            long udpBefore = ta.counters.get(Counter.TX_PACKETS) - ta.counters.get(Counter.TX_SHM_PACKETS);
            exchange(p); // B is alive really, and takes UDP
            long udpAfter = ta.counters.get(Counter.TX_PACKETS) - ta.counters.get(Counter.TX_SHM_PACKETS);
            assertTrue(
                    udpAfter - udpBefore >= 4,
                    "A went over UDP to the dead receiver's address: " + ta.counters.snapshot());
            assertFalse(ta.linkName().contains(" over shm"), ta.linkName());
        }
    }

    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        assertEquals(0, p.waitFor());
        long pid = p.pid();
        assertFalse(ShmRingFile.alive(pid));
        return pid;
    }
}
