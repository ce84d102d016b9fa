package dev.jrdma.bench;

import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WrOpcode;
import java.util.Arrays;

/**
 * The one-sided latency tests, read_lat and atomic_lat (perftest's {@code read_lat.c} and {@code atomic_lat.c}):
 * one RDMA read or atomic at a time, each a full round trip; the server is passive.
 */
final class RoundTripLatency {
    private final BenchResources resources;
    private final Progress progress;

    RoundTripLatency(BenchResources resources, Progress progress) {
        this.resources = resources;
        this.progress = progress;
    }

    /** run_iter_lat: {@code iters} operations, or as many as {@code durationSec} seconds allow (when above 0). */
    LatencyResult run(int size, long iters, int durationSec) {
        BenchResources r = resources;
        PerfTest test = r.test;
        SendWorkRequest request = new SendWorkRequest().signaled(true).wrId(1);
        if (test.verb == PerfTest.Verb.READ)
            request.opcode(WrOpcode.RDMA_READ)
                    .buffer(r.mr(0), r.localOffset(0), size)
                    .remote(r.rem[0].vaddr(), r.rem[0].rkey());
        else r.atomicRequest(request, 0);
        PreparedSend wr = r.qps[0].prepareSend(request);
        Stall stall = new Stall(r, test.id() + " completion");
        if (durationSec > 0) {
            long end = System.nanoTime() + durationSec * 1_000_000_000L;
            long[] d = new long[1 << 16];
            int n = 0;
            long count = 0;
            long prev = System.nanoTime();
            // perftest's margins (-f, default a quarter of -D): only the operations between them count
            long marginNs = r.options.effectiveMargin() * 1_000_000_000L;
            long sampleFrom = prev + marginNs, sampleTo = end - marginNs;
            while (prev < end) {
                PingPongLatency.gap(r.options.latencyGapUs);
                wr.post();
                while (r.sendCq.poll(r.done, 1) == 0) stall.idle();
                r.check(0);
                stall.progress();
                long now = System.nanoTime();
                boolean sample = prev >= sampleFrom && now < sampleTo;
                if (sample && n == d.length && d.length < 50_000_000) d = Arrays.copyOf(d, d.length * 2);
                if (sample && n < d.length) d[n++] = now - prev;
                prev = now;
                if (sample) count++;
                if ((count & 0x3ff) == 0 && progress.enabled())
                    progress.update(String.format(" %s %d bytes: %d iterations", test.id(), size, count));
            }
            r.lastDurationNs = marginNs > 0 ? sampleTo - sampleFrom : prev - (end - durationSec * 1_000_000_000L);
            return LatencyResult.fromDeltas(size, count, d, n, test.rttFactor());
        }
        long[] tposted = PingPongLatency.timestamps(iters);
        for (long i = 0; i < iters; i++) {
            PingPongLatency.gap(r.options.latencyGapUs);
            tposted[(int) i] = System.nanoTime();
            wr.post();
            while (r.sendCq.poll(r.done, 1) == 0) stall.idle();
            r.check(0);
            stall.progress();
            if ((i & 0x3ff) == 0 && progress.enabled())
                progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, i, iters));
        }
        r.lastPostTimes = tposted;
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }
}
