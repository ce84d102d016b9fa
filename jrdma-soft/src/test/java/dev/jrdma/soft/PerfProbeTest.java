package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Rough numbers (run with -Djrdma.perf=true): SEND ping-pong latency and RDMA WRITE bandwidth between two soft devices. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PerfProbeTest {

    @Test
    void latencyAndBandwidth() {
        Assumptions.assumeTrue(Boolean.getBoolean("jrdma.perf"), "set -Djrdma.perf=true to run");
        try (RcPair p = pair(o -> o.mtu(Mtu.MTU_4096))) {
            MemoryRegion a = p.a.mrAll(1 << 20), b = p.b.mrAll(1 << 20);
            WorkCompletion[] wc = WorkCompletion.array(16);
            SendWorkRequest ping = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 64);
            SendWorkRequest pong = new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(b, 0, 64);
            RecvWorkRequest ra = new RecvWorkRequest().wrId(3).buffer(a, 4096, 4096),
                    rb = new RecvWorkRequest().wrId(4).buffer(b, 4096, 4096);
            int iters = 20000;
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
            java.util.Arrays.sort(lat, iters / 4, iters);
            long[] l = java.util.Arrays.copyOfRange(lat, iters / 4, iters);
            java.util.Arrays.sort(l);
            System.out.printf(
                    "SEND 64 B round trip / 2: typical %.1f us, 99%% %.1f us%n",
                    l[l.length / 2] / 2e3, l[(int) (l.length * 0.99)] / 2e3);
            for (int size : new int[] {4096, 65536, 1 << 20}) {
                SendWorkRequest w = new SendWorkRequest()
                        .wrId(5)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(a, 0, size)
                        .remote(b.address(), b.rkey());
                int n = (int) Math.max(50, (256L << 20) / size / 2);
                long t0 = System.nanoTime();
                int posted = 0, done = 0;
                while (done < n) {
                    while (posted < n && posted - done < 32) {
                        p.a.qp.postSend(w);
                        posted++;
                    }
                    int k = p.a.cq.poll(wc);
                    for (int j = 0; j < k; j++) assertEquals(WcStatus.SUCCESS, wc[j].status);
                    done += k;
                }
                double s = (System.nanoTime() - t0) / 1e9;
                System.out.printf(
                        "RDMA WRITE %d B x %d: %.1f MB/s, %.0f msg/s%n", size, n, (double) size * n / s / 1e6, n / s);
            }
            System.out.println(((SoftContext) p.a.ctx).stats());
        }
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
}
