package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Psn;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 23 §5, perftest's {@code send_bw} on the deterministic network (manual clock): a receiver whose poller is off
 * the CPU runs out of receives mid-window (an RNR NAK, as a NIC sends one), and the requester waits the responder's
 * min_rnr_timer and sends again only what the responder did not take.
 */
@Timeout(60)
class RnrRecoveryTest {
    static final int SIZE = 64, MESSAGES = 96, FIRST_RECEIVES = 32;
    /** perftest's min_rnr_timer, code 12: 0.64 ms. */
    static final int RNR_CODE = 12;

    static final long RNR_NANOS = 640_000;

    @Test
    void anRnrNakMidWindowSendsAgainOnlyThePacketItNamed() {
        Result r = run(true, MESSAGES - FIRST_RECEIVES);
        System.out.println("RNR mid-window, selective repeat: " + r);
        // 64 packets went out (the window), 32 more as the first ACKs came in; B took 32 and kept the rest
        assertEquals(MESSAGES + 1, r.sends(), r::toString);
        assertEquals(1, r.rnrNaks(), r::toString);
        assertEquals(1, r.answersAt32(), "the RNR NAK, no sequence NAK for what B kept behind it: " + r);
        assertEquals(RNR_NANOS, r.waitedNanos(), "the wait ends at min_rnr_timer: " + r);
        assertEquals(0, r.probes(), r::toString);
        assertEquals(0, r.timeouts(), r::toString);
    }

    @Test
    void aKeptPacketThatFindsNoReceiveIsRnrNakedAndSentAgainAlone() {
        Result r = run(true, 16); // B's poller reposts 16 receives, later the rest
        System.out.println("two RNR waits, selective repeat: " + r);
        assertEquals(MESSAGES + 2, r.sends(), r::toString);
        assertEquals(2, r.rnrNaks(), r::toString);
        assertEquals(2 * RNR_NANOS, r.waitedNanos(), r::toString);
        assertEquals(0, r.probes() + r.timeouts(), r::toString);
    }

    @Test
    void goBackNSendsTheWindowAgainFromThePacketAnRnrNakNamed() {
        Result r = run(false, MESSAGES - FIRST_RECEIVES);
        System.out.println("RNR mid-window, go-back-N: " + r);
        assertEquals(MESSAGES + 64, r.sends(), "32 to 95 again: " + r);
        assertEquals(1, r.rnrNaks(), r::toString);
        assertEquals(RNR_NANOS, r.waitedNanos(), r::toString);
        assertEquals(0, r.probes() + r.timeouts(), r::toString);
    }

    /**
     * What a run took: A's SEND packets, RNR NAKs, probes, timeouts and selective resends, B's answers naming message
     * 32 (the first RNR NAK's), and the clock time from B's first repost to the end.
     */
    record Result(
            long sends, long rnrNaks, long probes, long timeouts, long selective, long answersAt32, long waitedNanos) {
        @Override
        public String toString() {
            return "SEND packets " + sends + " for " + MESSAGES + ", RNR NAKs " + rnrNaks + ", probes " + probes
                    + ", timeouts " + timeouts + ", selective resends " + selective + ", answers at 32 " + answersAt32
                    + ", waited " + waitedNanos / 1000 + " us";
        }
    }

    /**
     * {@link #MESSAGES} SENDs of 64 bytes from A to B, all posted at once (MTU 4096: a window of 64 packets); B has
     * {@link #FIRST_RECEIVES} receives posted, then (its poller back on the CPU) {@code reposted} more once A waits,
     * and the rest once A has been RNR-NAKed again.
     */
    static Result run(boolean selectiveRepeat, int reposted) {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = RcPair.on(net)
                .qp(q -> q.maxSendWr(256).maxRecvWr(256))
                .cqe(1024)
                .mtu(dev.jrdma.verbs.Mtu.MTU_4096)
                .timeout(14)
                .retryCnt(7)
                .minRnrTimer(RNR_CODE)
                .build()) {
            Transport ta = net.transport(DeterministicNetwork.A);
            SoftQp qa = DeterministicNetwork.soft(pair.a.qp), qb = DeterministicNetwork.soft(pair.b.qp);
            qa.selectiveRepeat = selectiveRepeat;
            qb.selectiveRepeat = selectiveRepeat;
            MemoryRegion src = pair.a.mrAll(SIZE * MESSAGES), dst = pair.b.mrAll(SIZE * MESSAGES);
            if (selectiveRepeat) SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            RcPair.fill(src.segment(), (long) SIZE * MESSAGES, 3);
            for (int i = 0; i < FIRST_RECEIVES; i++) postRecv(pair, dst, i);
            long sendsBefore = sends(net, ta);
            for (int i = 0; i < MESSAGES; i++)
                pair.a.qp.postSend(new SendWorkRequest()
                        .wrId(i)
                        .opcode(WrOpcode.SEND)
                        .buffer(src, (long) SIZE * i, SIZE)
                        .signaled(true));
            net.deliver();
            assertTrue(qa.requester.rnrWait, "B ran out of receives: A waits");
            int posted = FIRST_RECEIVES;
            while (posted < FIRST_RECEIVES + reposted) postRecv(pair, dst, posted++);
            long start = net.nanoTime();
            int done = 0, received = 0;
            WorkCompletion[] wcs = WorkCompletion.array(64);
            while (done < MESSAGES || received < MESSAGES) {
                int n = pair.a.cq.poll(wcs);
                for (int i = 0; i < n; i++) assertEquals(WcStatus.SUCCESS, wcs[i].status);
                done += n;
                int m = pair.b.cq.poll(wcs);
                for (int i = 0; i < m; i++) {
                    assertEquals(WcStatus.SUCCESS, wcs[i].status);
                    assertEquals(received + i, wcs[i].wrId, "in order");
                }
                received += m;
                if (n + m > 0 || net.moveOn()) continue;
                if (ta.counters.get(Counter.RNR_NAKS_RECEIVED) > 1) // A waits again: the rest
                while (posted < MESSAGES) postRecv(pair, dst, posted++);
                assertTrue(net.nanoTime() - start < 1_000_000_000L, "not done");
                net.advance(10_000);
            }
            RcPair.assertFilled(dst.segment(), 0, (long) SIZE * MESSAGES, 3);
            int at32 = Psn.add(qa.requester.nextPsn, 32 - MESSAGES);
            long answersAt32 = net.log.stream()
                    .filter(p -> p.from() != ta && p.psn() == at32)
                    .count();
            return new Result(
                    sends(net, ta) - sendsBefore,
                    ta.counters.get(Counter.RNR_NAKS_RECEIVED),
                    ta.counters.get(Counter.RETRY_PROBES),
                    ta.counters.get(Counter.RETRY_TIMEOUTS),
                    ta.counters.get(Counter.TX_SELECTIVE_RESENDS),
                    answersAt32,
                    net.nanoTime() - start);
        }
    }

    private static void postRecv(RcPair pair, MemoryRegion dst, int i) {
        pair.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(dst, (long) SIZE * i, SIZE));
    }

    private static long sends(DeterministicNetwork net, Transport from) {
        return net.count(from, Opcode.SEND_ONLY.code());
    }
}
