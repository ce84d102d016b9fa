package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The cost of the authenticated mode (issue 21 §7; run with -Djrdma.perf=true): send_lat and write_bw at 64 B and
 * 64 KiB, plain and authenticated, on one pair of soft devices over the same-host rings and over UDP. One run each,
 * after a first one of each that warms up (JIT); the figures are in jrdma-soft/README.md. No speed is asserted: only that every operation succeeded.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class PacketAuthCostProbeTest {

    @Test
    void latencyAndBandwidthWithAndWithoutTheMode() {
        Assumptions.assumeTrue(Boolean.getBoolean("jrdma.perf"), "set -Djrdma.perf=true to run");
        String[][] links = {{"127.0.0.51", "127.0.0.52", "auto"}, {"127.0.0.53", "127.0.0.54", "off"}};
        for (String[] link : links) {
            try (RcPair p = ShmLinkTest.pairOn(link[0], link[1], link[2], link[2])) {
                MemoryRegion a = p.a.mrAll(1 << 20), b = p.b.mrAll(1 << 20);
                double[][] r = new double[2][];
                for (int round = 0;
                        round < 4;
                        round++) { // plain, authenticated, plain, authenticated: the first two warm up (JIT)
                    int mode = round % 2;
                    for (Side s : new Side[] {p.a, p.b}) s.qp.modify(new QpAttr().state(QpState.RESET));
                    p.connect(w -> w.pathMtu(Mtu.MTU_4096)
                            .packetAuthKey(mode == 1 ? AuthenticatedModeTest.KEY.clone() : null));
                    assertEquals(mode == 1, ((SoftQp) p.a.qp).auth != null);
                    r[mode] = new double[] {
                        sendLat(p, a, b, 64, 20000),
                        sendLat(p, a, b, 65536, 2000),
                        writeBw(p, a, b, 64, 200_000),
                        writeBw(p, a, b, 65536, 4000)
                    };
                }
                String name = ((SoftContext) p.a.ctx).transport.linkName();
                System.out.printf(
                        "%s%n  send_lat 64 B: plain %.2f us, authenticated %.2f us (x%.2f)%n  send_lat 64 KiB: plain %.1f us, authenticated %.1f us (x%.2f)%n"
                                + "  write_bw 64 B: plain %.2f Mmsg/s, authenticated %.2f Mmsg/s (x%.2f)%n  write_bw 64 KiB: plain %.0f MB/s, authenticated %.0f MB/s (x%.2f)%n",
                        name,
                        r[0][0],
                        r[1][0],
                        r[1][0] / r[0][0],
                        r[0][1],
                        r[1][1],
                        r[1][1] / r[0][1],
                        r[0][2] / 64,
                        r[1][2] / 64,
                        r[1][2] / r[0][2],
                        r[0][3],
                        r[1][3],
                        r[1][3] / r[0][3]);
            }
        }
    }

    /** The typical (median) half round trip of a SEND ping-pong of {@code size} bytes, in microseconds. */
    private static double sendLat(RcPair p, MemoryRegion a, MemoryRegion b, int size, int iters) {
        WorkCompletion[] wc = WorkCompletion.array(16);
        SendWorkRequest ping = new SendWorkRequest()
                .wrId(1)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(a, 0, size);
        SendWorkRequest pong = new SendWorkRequest()
                .wrId(2)
                .opcode(WrOpcode.SEND)
                .signaled(true)
                .buffer(b, 0, size);
        RecvWorkRequest ra = new RecvWorkRequest().wrId(3).buffer(a, 1 << 19, size),
                rb = new RecvWorkRequest().wrId(4).buffer(b, 1 << 19, size);
        long[] lat = new long[iters];
        for (int i = 0; i < iters; i++) {
            p.a.qp.postRecv(ra);
            p.b.qp.postRecv(rb);
            long t0 = System.nanoTime();
            p.a.qp.postSend(ping);
            waitRecv(p.b.cq, wc);
            p.b.qp.postSend(pong);
            waitRecv(p.a.cq, wc);
            lat[i] = System.nanoTime() - t0;
        }
        drainSends(p);
        long[] warm = java.util.Arrays.copyOfRange(lat, iters / 4, iters); // the first quarter warms up
        java.util.Arrays.sort(warm);
        return warm[warm.length / 2] / 2e3;
    }

    /** RDMA WRITEs of {@code size} bytes, 32 in flight: bytes per second / 1e6 (MB/s). */
    private static double writeBw(RcPair p, MemoryRegion a, MemoryRegion b, int size, int n) {
        WorkCompletion[] wc = WorkCompletion.array(32);
        SendWorkRequest w = new SendWorkRequest()
                .wrId(5)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(a, 0, size)
                .remote(b.address(), b.rkey());
        long t0 = 0;
        int posted = 0, done = 0, warm = n / 5;
        while (done < n + warm) {
            if (done >= warm && t0 == 0) t0 = System.nanoTime();
            while (posted < n + warm && posted - done < 32) {
                p.a.qp.postSend(w);
                posted++;
            }
            int k = p.a.cq.poll(wc);
            for (int j = 0; j < k; j++) assertEquals(WcStatus.SUCCESS, wc[j].status);
            done += k;
        }
        double s = (System.nanoTime() - t0) / 1e9;
        return (double) size * n / s / 1e6;
    }

    private static void waitRecv(dev.jrdma.verbs.CompletionQueue cq, WorkCompletion[] wc) {
        int recv = 0;
        while (recv == 0) {
            int k = cq.poll(wc);
            for (int j = 0; j < k; j++) {
                assertEquals(WcStatus.SUCCESS, wc[j].status);
                if (wc[j].opcode.isReceive()) recv++;
            }
        }
    }

    /** The sends' completions left on the CQs (the loop waits for receives only): 100 ms of polling. */
    private static void drainSends(RcPair p) {
        WorkCompletion[] wc = WorkCompletion.array(64);
        long end = System.nanoTime() + 100_000_000L;
        while (System.nanoTime() < end) {
            p.a.cq.poll(wc);
            p.b.cq.poll(wc);
        }
    }
}
