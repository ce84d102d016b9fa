package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Issue 8 §6: a packet fuzzer against a live software device. A legitimate connection exchanges every opcode both
 * ways (the packets are captured as templates); then mutations of them (wrong PSN, QPN, rkey, address, length,
 * opcode, flags, P_Key, AETH; truncated, extended, bit-flipped; random bytes), most with a valid ICRC, are thrown at
 * device B from the legitimate peer's own socket (and some from a stranger's). The memory of both sides is one
 * segment each with unregistered guard zones around the registered regions, plus a canary region with every right
 * whose rkey never goes on the wire, all filled with a pattern.
 *
 * <p>Phase 1 (the connected QP, every PSN but the one it expects): no byte of either side changes, no completion
 * appears, no packet's handling throws (rx_dropped stays 0), and every packet B receives lands in exactly one drop
 * counter. Phase 2 (a sacrificial QP on B's PD, at exactly the PSN it expects: forged requests that a real peer could
 * send): nothing outside the region the templates' rkeys grant changes, the read-only region too, nothing throws, no
 * completion appears; the QP is reset whenever a forgery moved it to ERR. After both, the legitimate connection still
 * moves and verifies data both ways.
 *
 * <p>Size: {@code -Djrdma.fuzz.packets=N} (phase 1; phase 2 gets a quarter), {@code -Djrdma.fuzz.seed=S}; the CI
 * default is small. The long run: {@code mvn -pl jrdma-soft test -Dtest=PacketFuzzTest -Djrdma.fuzz.packets=1000000}.
 */
class PacketFuzzTest {
    static final int PACKETS = Integer.getInteger("jrdma.fuzz.packets", 20_000);
    static final long SEED = Long.getLong("jrdma.fuzz.seed", 1);
    /** Packets sent between two looks at B's counters (paced so the kernel's socket buffer never overflows). */
    static final int BATCH = 64;

    /** Every counter that is a packet's fate at B while only the fuzzer sends to it (each packet: exactly one). */
    static final Counter[] FATES = {
        Counter.RX_BAD_ICRC,
        Counter.RX_MALFORMED,
        Counter.RX_UNKNOWN_QP,
        Counter.RX_QP_NOT_READY,
        Counter.RX_WRONG_SOURCE,
        Counter.RX_BAD_PKEY,
        Counter.RX_OUT_OF_SEQUENCE,
        Counter.RX_DUPLICATE_REQUEST,
        Counter.RX_RESPONSE_OUT_OF_WINDOW,
        Counter.RX_RESPONSE_IGNORED,
        Counter.RX_DROPPED,
        Counter.RX_CNPS // a CNP from the peer's address is taken (it can only slow the QP down)
    };

    static final long GUARD = 4096, REGION = 8192;
    /** Offsets in a side's segment: guard, target (every right), guard, read-only (REMOTE_READ), guard. */
    static final long TARGET = GUARD, READ_ONLY = TARGET + REGION + GUARD, SIZE = READ_ONLY + REGION + GUARD;

    /** One side's memory: one segment, two registered slices of it with guards between, and a canary region. */
    static final class Memory {
        final MemorySegment seg;
        final MemoryRegion target, readOnly, canary;

        Memory(Side s) {
            seg = s.arena.allocate(SIZE, 4096);
            for (long i = 0; i < SIZE; i++) seg.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
            target = s.pd.registerMemory(
                    seg.asSlice(TARGET, REGION),
                    EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC));
            readOnly = s.pd.registerMemory(
                    seg.asSlice(READ_ONLY, REGION), EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ));
            canary = s.mrAll(REGION);
            for (long i = 0; i < REGION; i++) canary.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 11 + 1));
        }

        byte[] snapshot() {
            byte[] all = new byte[(int) (SIZE + REGION)];
            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, 0, all, 0, (int) SIZE);
            MemorySegment.copy(canary.segment(), ValueLayout.JAVA_BYTE, 0, all, (int) SIZE, (int) REGION);
            return all;
        }

        /** Fails at the first byte that differs from {@code before}, outside {@code [skipFrom, skipTo)} of the segment. */
        void assertUnchanged(byte[] before, long skipFrom, long skipTo, String what) {
            byte[] now = snapshot();
            for (int i = 0; i < now.length; i++) {
                if (i >= skipFrom && i < skipTo) continue;
                if (now[i] != before[i]) {
                    String where = i >= SIZE
                            ? "the canary region (every right, rkey never sent)"
                            : i < TARGET
                                    ? "the guard before the target"
                                    : i < TARGET + REGION
                                            ? "the target region"
                                            : i < READ_ONLY
                                                    ? "the guard between the regions"
                                                    : i < READ_ONLY + REGION
                                                            ? "the read-only region"
                                                            : "the guard after the read-only region";
                    fail(what + ": byte " + i + " changed, in " + where);
                }
            }
        }
    }

    /** A captured packet: the bytes A's device sent to B. */
    record Template(byte[] bytes) {}

    @Test
    void forgedAndMutatedPacketsChangeNoMemoryCompleteNothingAndAreCounted() throws Exception {
        Context[] devices = openFaulty(
                new Faults(SEED, 0, 0, 0, 0, 0, Faults.DEFAULT_REORDER_NANOS), 2); // undamaged links with a tap
        List<Template> templates = new ArrayList<>();
        RcPair pr = null;
        CompletionQueue victimCqA = null, victimCqB = null;
        QueuePair victimA = null, victimB = null;
        try (DatagramChannel stranger = DatagramChannel.open()) {
            pr = pair(devices[0].device(), devices[1].device(), o -> {});
            Transport ta = ((SoftContext) devices[0]).transport, tb = ((SoftContext) devices[1]).transport;
            FaultyLink linkA = ta.faultyLink();
            Memory ma = new Memory(pr.a), mb = new Memory(pr.b);
            linkA.tap((b, to) -> {
                byte[] bytes = new byte[b.remaining()];
                b.get(b.position(), bytes);
                synchronized (templates) {
                    templates.add(new Template(bytes));
                }
            });
            exchangeEveryOpcode(pr.a, ma, pr.b, mb, 1);
            exchangeEveryOpcode(pr.b, mb, pr.a, ma, 2);
            linkA.tap(null);
            long opcodes = templates.stream()
                    .mapToInt(t -> t.bytes()[0] & 0xFF)
                    .distinct()
                    .count();
            assertTrue(
                    opcodes >= 12,
                    "A sent " + opcodes + " opcodes in " + templates.size()
                            + " packets"); // requests and responses of every kind

            // the sacrificial QP pair of phase 2: on the same PDs as the connection, so the templates' rkeys are valid
            // there
            victimCqA = pr.a.ctx.createCq(16, null);
            victimCqB = pr.b.ctx.createCq(16, null);
            victimA = pr.a.pd.createQueuePair(
                    QpInitAttr.builder(victimCqA).maxSendWr(4).maxRecvWr(4).build());
            victimB = pr.b.pd.createQueuePair(
                    QpInitAttr.builder(victimCqB).maxSendWr(4).maxRecvWr(4).build());
            connectQp(victimA, pr.b.ctx, victimB, 300, 7000);
            connectQp(victimB, pr.a.ctx, victimA, 7000, 300);

            byte[] beforeA = ma.snapshot(), beforeB = mb.snapshot();
            stranger.bind(new InetSocketAddress(ip("127.0.0.3"), 0));
            int strangerIp = ip("127.0.0.3").hashCode(),
                    strangerPort = ((InetSocketAddress) stranger.getLocalAddress()).getPort();
            InetSocketAddress toB = new InetSocketAddress(tb.local.inet, tb.port);
            CompletionQueue[] cqs = {pr.a.cq, pr.b.cq, victimCqA, victimCqB};
            SoftQp mainB = (SoftQp) pr.b.qp, vB = (SoftQp) victimB;
            Random rnd = new Random(SEED);
            ByteBuffer out = ByteBuffer.allocate(2048);
            Icrc icrc = new Icrc();
            RocePacket parsed = new RocePacket();
            long droppedBefore = tb.counters.get(Counter.RX_DROPPED);

            // ---- phase 1: the connected QP, any PSN but the expected one; exact accounting ----
            long rx0 = tb.counters.get(Counter.RX_PACKETS), fates0 = fates(tb), kernelLost = 0;
            long repeats0 = tb.counters.get(Counter.RX_TAKEOVER_REPEATS);
            long t0 = System.nanoTime(),
                    deadline = t0 + TimeUnit.SECONDS.toNanos(60) + PACKETS * 2_000_000L / 4; // 0.5 ms a packet at worst
            int sent = 0;
            long expectRx = rx0;
            while (sent < PACKETS) {
                for (int k = 0; k < BATCH && sent < PACKETS; k++, sent++) {
                    boolean fromStranger = rnd.nextInt(20) == 0;
                    int len = forge(rnd, templates, out, parsed, mainB, vB, -1);
                    if (len >= 0) {
                        sealIcrc(
                                rnd,
                                icrc,
                                out,
                                len,
                                fromStranger ? strangerIp : ta.local.ipv4(),
                                tb.local.ipv4(),
                                fromStranger ? strangerPort : ta.port,
                                tb.port);
                    } else {
                        len = -len - 1; // random bytes: no ICRC on purpose
                    }
                    out.limit(len).position(0);
                    if (fromStranger) stranger.send(out, toB);
                    else send(linkA, out, toB);
                    expectRx++;
                }
                kernelLost += awaitReceived(tb, expectRx);
                if (System.nanoTime() > deadline) fail("phase 1 too slow: " + sent + " packets sent");
                expectRx = tb.counters.get(Counter.RX_PACKETS);
                assertNoCompletions(cqs);
            }
            // a takeover hands the packet a stalled receive thread holds to its QP a second time (ProgressEngine):
            // that second handling is a fate of its own (the QP counts it as it counts any duplicate)
            long repeats = tb.counters.get(Counter.RX_TAKEOVER_REPEATS) - repeats0;
            long rx = awaitFatesCounted(tb, rx0, fates0 - repeats), counted = fates(tb) - fates0 - repeats;
            double seconds1 = (System.nanoTime() - t0) / 1e9;
            assertEquals(
                    rx,
                    counted,
                    () -> "every packet B received lands in exactly one drop counter (" + repeats
                            + " handled twice at a takeover): " + devices[1].counters());
            assertEquals(droppedBefore, tb.counters.get(Counter.RX_DROPPED), "no packet's handling threw");
            ma.assertUnchanged(beforeA, -1, -1, "phase 1, side A");
            mb.assertUnchanged(beforeB, -1, -1, "phase 1, side B");
            assertTrue(ta.rxThreadAlive() && tb.rxThreadAlive(), "the receive threads are alive");

            // ---- phase 2: the sacrificial QP at exactly its expected PSN ----
            int forged2 = Math.max(1, PACKETS / 4), resets = 0;
            long t1 = System.nanoTime();
            long expect2 = tb.counters.get(Counter.RX_PACKETS);
            for (int i = 0; i < forged2; ) {
                for (int k = 0; k < BATCH && i < forged2; k++, i++) {
                    int len = forge(rnd, templates, out, parsed, mainB, vB, vB.qpNum());
                    if (len < 0) len = -len - 1;
                    else if (len >= Bth.BYTES + Icrc.BYTES)
                        icrc.generate(out, 0, len, ta.local.ipv4(), tb.local.ipv4(), ta.port, tb.port);
                    out.limit(len).position(0);
                    send(linkA, out, toB);
                    expect2++;
                }
                awaitReceived(tb, expect2);
                if (System.nanoTime() > deadline) fail("phase 2 too slow: " + i + " packets sent");
                expect2 = tb.counters.get(Counter.RX_PACKETS);
                assertNoCompletions(cqs);
                if (victimB.state()
                        == QpState.ERR) { // a forgery it had to refuse (bad rkey, length, opcode): fresh start
                    victimB.modify(new QpAttr().state(QpState.RESET));
                    connectQp(victimB, pr.a.ctx, victimA, 7000, rnd.nextInt(1 << 24));
                    resets++;
                }
            }
            double seconds2 = (System.nanoTime() - t1) / 1e9;
            assertEquals(droppedBefore, tb.counters.get(Counter.RX_DROPPED), "no packet's handling threw");
            ma.assertUnchanged(beforeA, -1, -1, "phase 2, side A");
            mb.assertUnchanged(
                    beforeB,
                    TARGET,
                    TARGET + REGION,
                    "phase 2, side B (all but the target region the templates' rkey grants)");
            assertTrue(ta.rxThreadAlive() && tb.rxThreadAlive(), "the receive threads are alive");
            assertEquals(QpState.RTS, pr.a.qp.state());
            assertEquals(QpState.RTS, pr.b.qp.state());

            // ---- the legitimate connection works on ----
            exchangeEveryOpcode(pr.a, ma, pr.b, mb, 3);
            exchangeEveryOpcode(pr.b, mb, pr.a, ma, 4);
            System.out.printf(
                    "packet fuzz seed %d: phase 1 %d packets in %.2f s (%.0f packets/s; %d lost in the kernel), B counted %s;"
                            + " phase 2 %d forgeries at the expected PSN in %.2f s, %d resets of the sacrificial QP%n",
                    SEED,
                    sent,
                    seconds1,
                    sent / seconds1,
                    kernelLost,
                    devices[1].counters(),
                    forged2,
                    seconds2,
                    resets);
        } finally {
            if (pr != null) pr.close(); // closing the contexts closes the sacrificial QPs and CQs too
            for (Context c : devices) c.close();
        }
    }

    /** Sends through the peer's own link, waiting (at most 5 s) while its socket's send buffer is full. */
    private static void send(Link link, ByteBuffer b, InetSocketAddress to) throws java.io.IOException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!link.send(b, to)) {
            if (System.nanoTime() > end) fail("the link took no packet for 5 s");
            LockSupport.parkNanos(10_000);
        }
    }

    private static long fates(Transport t) {
        long n = 0;
        for (Counter c : FATES) n += t.counters.get(c);
        return n;
    }

    /**
     * Waits (at most 2 s) until every packet B has counted as received has also been given its fate, and returns how many
     * it received since {@code rx0}: the receive thread counts a batch's packets before it handles them, so a read right
     * after the last one arrived can see it received and not yet dropped.
     */
    private static long awaitFatesCounted(Transport t, long rx0, long fates0) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        long rx = t.counters.get(Counter.RX_PACKETS) - rx0;
        while (fates(t) - fates0 < rx && System.nanoTime() < end) {
            LockSupport.parkNanos(20_000);
            rx = t.counters.get(Counter.RX_PACKETS) - rx0;
        }
        return rx;
    }

    /** Waits (at most 2 s) until B has received {@code expect} packets in all; returns how many never came (kernel drops). */
    private static long awaitReceived(Transport t, long expect) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (t.counters.get(Counter.RX_PACKETS) < expect && System.nanoTime() < end) LockSupport.parkNanos(20_000);
        return Math.max(0, expect - t.counters.get(Counter.RX_PACKETS));
    }

    private static void assertNoCompletions(CompletionQueue[] cqs) {
        WorkCompletion[] wc = WorkCompletion.array(1);
        for (CompletionQueue cq : cqs)
            assertEquals(0, cq.poll(wc), () -> "a forged packet completed something: " + wc[0]);
    }

    /** A valid ICRC (a forgery that knows the addresses) most of the time, the template's stale one otherwise. */
    private static void sealIcrc(
            Random rnd, Icrc icrc, ByteBuffer b, int len, int srcIp, int dstIp, int srcPort, int dstPort) {
        if (len >= Bth.BYTES + Icrc.BYTES && rnd.nextInt(5) != 0)
            icrc.generate(b, 0, len, srcIp, dstIp, srcPort, dstPort);
    }

    /**
     * Writes one forged packet into {@code out} (from offset 0) and returns its length, or {@code -(length + 1)} for
     * random bytes that get no ICRC. {@code victimQpn < 0}: phase 1, any PSN but the one the addressed QP expects;
     * otherwise the packet goes to {@code victimQpn} at exactly its expected PSN.
     */
    private static int forge(
            Random rnd,
            List<Template> templates,
            ByteBuffer out,
            RocePacket p,
            SoftQp mainB,
            SoftQp victim,
            int victimQpn) {
        out.clear();
        if (rnd.nextInt(25) == 0) { // random bytes
            int len =
                    1 + rnd.nextInt(1200); // at least a byte: an empty datagram cannot be told from a full send buffer
            for (int i = 0; i < len; i++) out.put(i, (byte) rnd.nextInt());
            return -(len + 1);
        }
        byte[] t = templates.get(rnd.nextInt(templates.size())).bytes();
        out.put(0, t);
        int len = t.length;
        if (victimQpn >= 0) {
            Bth.setDestQp(out, 0, victimQpn);
            Bth.setPsn(out, 0, expectedPsn(victim));
        }
        int mutations = 1 + rnd.nextInt(2);
        for (int m = 0; m < mutations; m++) len = mutate(rnd, out, len, p, victimQpn >= 0);
        if (victimQpn < 0 && len >= Bth.BYTES && p.wrap(out, 0, len) == RocePacket.OK && p.has(Opcode.REQ)) {
            int qpn = p.destQp();
            SoftQp q = qpn == mainB.qpNum() ? mainB : qpn == victim.qpNum() ? victim : null;
            if (q != null && p.psn() == expectedPsn(q))
                Bth.setPsn(out, 0, (p.psn() + 1 + rnd.nextInt(1000)) & 0xFFFFFF); // never what a peer would send next
        }
        return len;
    }

    private static int expectedPsn(SoftQp q) {
        synchronized (q) {
            return q.responder.expectedPsn;
        }
    }

    /** One mutation of the packet of {@code len} bytes in {@code b}; returns the new length. */
    private static int mutate(Random rnd, ByteBuffer b, int len, RocePacket p, boolean keepPsn) {
        boolean framed = p.wrap(b, 0, len) == RocePacket.OK;
        int ext = framed && (p.has(Opcode.RETH) || p.has(Opcode.ATMETH) || p.has(Opcode.AETH)) ? Bth.BYTES : -1;
        switch (rnd.nextInt(14)) {
            case 0 -> {
                if (!keepPsn) Bth.setPsn(b, 0, rnd.nextInt(1 << 24));
                else Bth.setPsn(b, 0, (Bth.psn(b, 0) + rnd.nextInt(5) - 2) & 0xFFFFFF);
            }
            case 1 -> Bth.setDestQp(b, 0, rnd.nextBoolean() ? rnd.nextInt(1 << 24) : rnd.nextInt(64));
            case 2 -> {
                if (ext >= 0)
                    b.putInt(ext + 8, rnd.nextBoolean() ? rnd.nextInt() : b.getInt(ext + 8) ^ (1 << rnd.nextInt(32)));
            } // rkey (RETH/AtomicETH), or AETH/MSN bits
            case 3 -> {
                if (ext >= 0)
                    b.putLong(
                            ext,
                            b.getLong(ext)
                                    + switch (rnd.nextInt(4)) { // address: just outside, far away, wrapping
                                        case 0 -> -8 - rnd.nextInt(64);
                                        case 1 -> REGION - rnd.nextInt(16);
                                        case 2 -> rnd.nextLong();
                                        default -> Long.MAX_VALUE;
                                    });
            }
            case 4 -> {
                if (ext >= 0 && len >= ext + 16)
                    b.putInt(
                            ext + 12,
                            switch (rnd.nextInt(4)) { // DMA length
                                case 0 -> rnd.nextInt();
                                case 1 -> (int) REGION + 1 + rnd.nextInt(64);
                                case 2 -> 0;
                                default -> -1;
                            });
            }
            case 5 ->
                Bth.setOpcode(
                        b,
                        0,
                        rnd.nextBoolean()
                                ? rnd.nextInt(256)
                                : Opcode.values()[rnd.nextInt(Opcode.values().length)].code());
            case 6 -> b.put(1, (byte) rnd.nextInt()); // SE, MigReq, pad count, transport version
            case 7 -> b.putShort(2, (short) rnd.nextInt()); // P_Key
            case 8 -> {
                return len <= 1 ? len : 1 + rnd.nextInt(len - 1);
            } // truncated (to a byte at least, as above)
            case 9 -> { // extended by up to a few hundred bytes (still within one datagram)
                int more = Math.min(1 + rnd.nextInt(400), b.capacity() - len);
                for (int i = 0; i < more; i++) b.put(len + i, (byte) rnd.nextInt());
                return len + more;
            }
            case 10 -> {
                for (int i = 1 + rnd.nextInt(8); i > 0 && len > 0; i--) {
                    int bit = rnd.nextInt(len * 8);
                    b.put(bit >>> 3, (byte) (b.get(bit >>> 3) ^ (1 << (bit & 7))));
                }
            }
            case 11 -> {
                if (len > Bth.BYTES) b.put(Bth.BYTES + rnd.nextInt(len - Bth.BYTES), (byte) rnd.nextInt());
            } // a header or payload byte
            case 12 -> {
                if (ext >= 0 && len >= ext + 28) {
                    b.putLong(ext + 12, rnd.nextLong());
                    b.putLong(ext + 20, rnd.nextLong());
                }
            } // atomic operands
            default -> b.put(8, (byte) (b.get(8) ^ 0x80)); // AckReq
        }
        return len;
    }

    /** Connects {@code me} to {@code peer} (on {@code peerCtx}) through RTS. */
    private static void connectQp(QueuePair me, Context peerCtx, QueuePair peer, int myPsn, int peerPsn) {
        new RcWalk()
                .pkeyIndex(0)
                .port(1)
                .access(Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)
                .ah(new AhAttr().global(peerCtx.queryGid(1, 0), 0))
                .pathMtu(Mtu.MTU_1024)
                .to(peer.qpNum(), peerPsn)
                .maxDestRdAtomic(4)
                .minRnrTimer(1)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(myPsn)
                .maxRdAtomic(4)
                .walk(me);
    }

    /**
     * {@code me} sends {@code peer} a SEND and a WRITE with immediate (both consume a receive), a three-packet WRITE,
     * a three-packet READ of the read-only region, a compare-and-swap and a fetch-and-add; every byte is checked.
     */
    static void exchangeEveryOpcode(Side me, Memory mine, Side peer, Memory theirs, int round) {
        int n = 3000;
        MemorySegment src = mine.target.segment();
        for (int i = 0; i < n; i++) src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 5 + round));
        for (int i = 0; i < n; i++) theirs.readOnly.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3 + round));
        RecvWorkRequest rr = new RecvWorkRequest();
        peer.qp.postRecv(rr.wrId(100).buffer(theirs.target, 4096, 3072));
        peer.qp.postRecv(rr.wrId(101).buffer(theirs.target, 7168, 1024));
        long remote = theirs.target.address();
        theirs.target.segment().set(ValueLayout.JAVA_LONG, 8184, round);
        SendWorkRequest wr = new SendWorkRequest();
        me.qp.postSend(
                wr.wrId(1).opcode(WrOpcode.SEND).signaled(true).immData(0).buffer(mine.target, 0, n));
        me.qp.postSend(wr.wrId(2)
                .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                .immData(round)
                .buffer(mine.target, 0, 100)
                .remote(remote + 2048, theirs.target.rkey()));
        me.qp.postSend(wr.wrId(3)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(mine.target, 0, n)
                .remote(remote + 1024 - n % 1024, theirs.target.rkey()));
        me.qp.postSend(wr.wrId(4)
                .opcode(WrOpcode.RDMA_READ)
                .buffer(mine.target, 4096, n)
                .remote(theirs.readOnly.address(), theirs.readOnly.rkey()));
        me.qp.postSend(wr.wrId(5)
                .opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .buffer(mine.target, 8176, 8)
                .atomic(remote + 8184, theirs.target.rkey(), round, round + 10));
        me.qp.postSend(wr.wrId(6)
                .opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .buffer(mine.target, 8168, 8)
                .atomic(remote + 8184, theirs.target.rkey(), 5, 0));
        for (int i = 1; i <= 6; i++) {
            WorkCompletion wc = poll(me.cq, 10_000);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            assertEquals(i, wc.wrId);
        }
        for (int i = 0; i < 2; i++) {
            WorkCompletion wc = poll(peer.cq, 10_000);
            assertEquals(WcStatus.SUCCESS, wc.status, wc::toString);
            assertEquals(100 + i, wc.wrId);
        }
        MemorySegment got = theirs.target.segment(), read = mine.target.segment();
        for (int i = 0; i < n; i++) {
            assertEquals((byte) (i * 5 + round), got.get(ValueLayout.JAVA_BYTE, 72 + i), "WRITE byte " + i);
            assertEquals((byte) (i * 5 + round), got.get(ValueLayout.JAVA_BYTE, 4096 + i), "SEND byte " + i);
            assertEquals((byte) (i * 3 + round), read.get(ValueLayout.JAVA_BYTE, 4096 + i), "READ byte " + i);
        }
        assertEquals(round, read.get(ValueLayout.JAVA_LONG, 8176), "compare-and-swap's original value");
        assertEquals(round + 10, read.get(ValueLayout.JAVA_LONG, 8168), "fetch-and-add's original value");
        assertEquals(round + 15, got.get(ValueLayout.JAVA_LONG, 8184), "both atomics executed once");
    }
}
