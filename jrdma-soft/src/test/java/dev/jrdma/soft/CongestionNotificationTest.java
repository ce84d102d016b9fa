package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 23 §3 end to end: a switch that marks CE ({@link DeterministicNetwork#markCe}, manual clock) makes the receiver send
 * CNPs (one per 50 us however many packets are marked), the sender cut its rate and pace its requests, and every
 * request still completes; and over real loopback sockets the libc link sends ECT(0) and reads the ECN field of what
 * arrives.
 */
@Timeout(60)
class CongestionNotificationTest {
    static final int WRITES = 64, SIZE = 4096;

    @Test
    void ceMarkedRequestsBringOneCnpPerIntervalAndTheSenderPacesAtTheCutRate() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll((long) SIZE * WRITES), dst = pair.b.mrAll((long) SIZE * WRITES);
            RcPair.fill(src.segment(), (long) SIZE * WRITES, 5);
            net.markCe = p -> p.from() == ta && Opcode.isRc(p.opcode()) && p.opcode() != Opcode.CNP.code();
            net.burst = 64;
            pair.a.qp.postSend(writes(src, dst, 0, WRITES / 2));
            net.deliver(); // one round: all the requests are marked, the clock stands still
            assertEquals(WRITES / 2 * SIZE / 1024, tb.counters.get(Counter.RX_ECN_CE), "every packet counted");
            assertEquals(1, tb.counters.get(Counter.TX_CNPS), "one CNP: the clock did not move");
            assertEquals(1, net.count(tb, Opcode.CNP.code()));
            DeterministicNetwork.Packet cnp = net.log.stream()
                    .filter(p -> p.opcode() == Opcode.CNP.code())
                    .findFirst()
                    .orElseThrow();
            ByteBuffer b = ByteBuffer.wrap(cnp.bytes());
            assertEquals(pair.a.qp.qpNum(), Bth.destQp(b, 0), "to the QP whose packets were marked");
            assertEquals(0x40, b.get(4) & 0x40, "BECN set");
            assertEquals(Bth.BYTES + Opcode.CNP_RESERVED_BYTES + 4, cnp.bytes().length, "BTH, 16 reserved bytes, ICRC");
            assertEquals(1, ta.counters.get(Counter.RX_CNPS));
            // the line as measured since RTS: the clock stood still, nothing measurable, so the most
            long line =
                    (Dcqcn.DEFAULTS.lineRateBps() > 0 ? Dcqcn.DEFAULTS.lineRateBps() : Dcqcn.MAX_LINE_BPS) / 1_000_000;
            assertEquals(line / 2, ta.counters.get(Counter.DCQCN_RATE_MBPS), "the first cut halves the rate");
            assertTrue(soft(pair.a.qp).congestion.dcqcn.limited);

            // the second half goes out paced: the requester stops and the timer lets it go on as the clock moves
            int before = net.log.size();
            soft(pair.a.qp).congestion.dcqcn.trySend(net.clock.nanoTime(), 64 << 20); // 64 MB "just sent": a long wait
            pair.a.qp.postSend(writes(src, dst, WRITES / 2, WRITES));
            assertEquals(before, net.log.size(), "nothing leaves before the pacer allows");
            assertEquals(Requester.State.WAIT_RATE, soft(pair.a.qp).requester.stoppedAt);
            assertNotEquals(0, soft(pair.a.qp).congestion.rateDeadline, "the timer will bring the requester back");
            net.markCe = p -> false;
            WorkCompletion[] wcs = WorkCompletion.array(WRITES);
            int[] done = {0};
            net.runUntil(
                    () -> {
                        int n = pair.a.cq.poll(wcs);
                        for (int i = 0; i < n; i++) assertEquals(WcStatus.SUCCESS, wcs[i].status);
                        done[0] += n;
                        return done[0] == 2;
                    },
                    10_000,
                    2_000_000_000L);
            RcPair.assertFilled(dst.segment(), 0, (long) SIZE * WRITES, 5);
            assertEquals(0, ta.counters.get(Counter.RETRANSMITS), "paced, not lost");
        }
    }

    /**
     * A QP of 64 B WRITEs (138 bytes a packet with RETH, ICRC, UDP, IPv4 and Ethernet) every 10 us: the notification
     * point sends a CNP once the marked packets make the MTU (1 KiB: the eighth marked one), and the line that limit
     * starts from is the rate the requester put bytes on the wire at since RTS, 110 Mb/s, not the 872 Mb/s its PSNs
     * make if each counts as a full packet (the measure before: the first cut then left it far above what it sends).
     */
    @Test
    void aQpOfSmallMessagesIsNotifiedPerMtuOfMarkedBytesAndMeasuresItsLineAtTheBytesItSends() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        long rts = net.clock.nanoTime(); // the pair reaches RTS with the clock standing
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A), tb = net.transport(DeterministicNetwork.B);
            MemoryRegion src = pair.a.mrAll(64), dst = pair.b.mrAll(64);
            WorkCompletion[] wcs = WorkCompletion.array(256);
            int n = 200, marked = 8, done = 0;
            for (int i = 0; i < n; i++) {
                if (i == n - marked) // the last eight WRITEs arrive CE-marked: 8 x 138 bytes make the MTU
                net.markCe = p -> p.from() == ta && p.opcode() != Opcode.CNP.code();
                pair.postWrite(i, src, dst, 64);
                net.advance(10_000);
                net.deliver();
                done += pair.a.cq.poll(wcs);
                assertEquals(i == n - 1 ? 1 : 0, tb.counters.get(Counter.TX_CNPS), "after WRITE " + i);
            }
            assertEquals(marked, tb.counters.get(Counter.RX_ECN_CE));
            assertEquals(1, ta.counters.get(Counter.RX_CNPS));
            assertEquals(n, net.count(ta, Opcode.RDMA_WRITE_ONLY.code()), "each WRITE sent once, as posted");
            long wire = net.log.stream()
                    .filter(p -> p.from() == ta && p.opcode() != Opcode.ACKNOWLEDGE.code())
                    .mapToLong(p -> p.bytes().length + 14 + 20 + 8)
                    .sum();
            assertEquals(n * (Bth.BYTES + 16 + 64 + 4 + 42L), wire, "every WRITE once, nothing else from A");
            Dcqcn d = soft(pair.a.qp).congestion.dcqcn;
            long line = d.current().lineRateBps();
            assertEquals(110_400_000L, line, "the bytes on the wire over the time since RTS");
            assertEquals(Dcqcn.measuredLine(wire, net.clock.nanoTime() - rts), line);
            assertEquals(line / 2, d.rateBps(), "the first cut halves the line measured");
            assertEquals(1, ta.counters.get(Counter.DCQCN_LIMITS));
            assertEquals(110, ta.counters.get(Counter.DCQCN_LINE_MBPS), "the limit's line, for people");
            int[] completed = {done};
            net.runUntil(() -> (completed[0] += pair.a.cq.poll(wcs)) == n, 10_000, 1_000_000_000L);
        }
    }

    /**
     * A limit that begins right after the last one ended keeps that limit's line and counts {@code dcqcn_lines_held}:
     * under emulation the CNPs came in bursts, a limit ended and the next began within one, and the line measured
     * over the microseconds between was whatever the requester had just handed the socket.
     */
    @Test
    void aLimitThatBeginsRightAfterTheLastEndedKeepsItsLine() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            MemoryRegion src = pair.a.mrAll(SIZE), dst = pair.b.mrAll(SIZE);
            SoftQp a = soft(pair.a.qp);
            WorkCompletion[] wcs = WorkCompletion.array(16);
            for (int i = 0; i < 10; i++) { // ten 4 KiB WRITEs in 10 ms: the first limit's line
                pair.a.qp.postSend(writes(src, dst, 0, 1));
                net.advance(1_000_000);
                net.deliver();
                pair.a.cq.poll(wcs);
            }
            a.congestion.receiveCnp(a.remoteAddr, a.peerPort);
            long line = a.congestion.dcqcn.current().lineRateBps();
            assertTrue(line > Dcqcn.MIN_LINE_BPS && line < 40_000_000L, "about 34 Mb/s: " + line);
            net.advance(3_000_000_000L); // recovered: the next packet finds the rate back at the line
            pair.a.qp.postSend(writes(src, dst, 0, 1));
            net.deliver();
            assertFalse(a.congestion.dcqcn.limited, "unlimited again");
            a.congestion.receiveCnp(a.remoteAddr, a.peerPort); // at once: nothing measurable since
            assertEquals(2, ta.counters.get(Counter.DCQCN_LIMITS));
            assertEquals(1, ta.counters.get(Counter.DCQCN_LINES_HELD));
            assertEquals(line, a.congestion.dcqcn.current().lineRateBps(), "the last limit's line, held");
            long rate = a.congestion.dcqcn.rateBps();
            assertTrue(rate < line && rate > line / 2, "cut by alpha, decayed over 3 s: " + rate);
            net.runUntil(() -> pair.a.cq.poll(wcs) > 0, 10_000, 1_000_000_000L);
        }
    }

    @Test
    void cnpsFromAStrangerAreDroppedAndCountedAndCutNothing() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            soft(pair.a.qp).congestion.receiveCnp(IpAddress.of(SoftDevices.ip("127.0.0.9")), DeterministicNetwork.PORT);
            assertEquals(0, ta.counters.get(Counter.RX_CNPS));
            assertEquals(1, ta.counters.get(Counter.RX_WRONG_SOURCE));
            assertFalse(soft(pair.a.qp).congestion.dcqcn.limited);
        }
    }

    /** The chain of WRITEs {@code from..to-1} of {@link #SIZE} bytes, the last signalled. */
    private static SendWorkRequest writes(MemoryRegion src, MemoryRegion dst, int from, int to) {
        SendWorkRequest first = null, prev = null;
        for (int i = from; i < to; i++) {
            SendWorkRequest wr = new SendWorkRequest()
                    .wrId(i)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .buffer(src, (long) SIZE * i, SIZE)
                    .remote(dst.address() + (long) SIZE * i, dst.rkey())
                    .signaled(i == to - 1);
            if (prev == null) first = wr;
            else prev.next = wr;
            prev = wr;
        }
        return first;
    }

    @Test
    void theLibcLinkSendsEct0AndReadsTheEcnFieldOfWhatArrives() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(LinuxUdpLink.AVAILABLE, "Linux only");
        try (LinuxUdpLink a = LinuxUdpLinkTest.open("127.0.0.1");
                LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.1");
                DatagramChannel marker = DatagramChannel.open(StandardProtocolFamily.INET)) {
            InetSocketAddress toB = new InetSocketAddress("127.0.0.1", LinuxUdpLinkTest.port(b));
            assertTrue(a.send(ByteBuffer.allocateDirect(64), toB));
            RxBatch batch = new RxBatch();
            assertEquals(1, receiveSome(b, batch));
            assertEquals(Ecn.ECT_0, batch.ecn[0], "ECT(0) as RoCEv2 NICs send");
            // a packet that a congested switch marked: CE in its TOS byte
            marker.setOption(StandardSocketOptions.IP_TOS, Ecn.CE);
            marker.send(ByteBuffer.allocate(64), toB);
            assertEquals(1, receiveSome(b, batch));
            assertEquals(Ecn.CE, batch.ecn[0], "CE seen");
        }
    }

    private static int receiveSome(LinuxUdpLink l, RxBatch batch) throws IOException {
        for (int i = 0; i < 2000; i++) {
            int n = l.receive(batch);
            if (n > 0) return n;
            Thread.onSpinWait();
            if (i > 100) l.await();
        }
        return 0;
    }
}
