package dev.jrdma.bench;

import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The ping-pong latency tests, write_lat and send_lat (perftest's {@code write_lat.c} and {@code send_lat.c}): each
 * side answers the peer's message with its own; half of a round trip is the latency.
 */
final class PingPongLatency {
    /** send_lat's spin on its receive CQ looks at its send CQ once in this many empty polls (a power of 2, minus 1). */
    private static final int SEND_CQ_LOOK_MASK = 63;

    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private final BenchResources resources;
    private final Progress progress;

    PingPongLatency(BenchResources resources, Progress progress) {
        this.resources = resources;
        this.progress = progress;
    }

    /** --latency_gap: spins {@code gapUs} microseconds (perftest waits so before each post). */
    static void gap(int gapUs) {
        if (gapUs <= 0) return;
        long until = System.nanoTime() + gapUs * 1000L;
        while (System.nanoTime() < until) Thread.onSpinWait();
    }

    /** A post time per iteration: a latency test times each one. */
    static long[] timestamps(long iters) {
        if (iters > 50_000_000L)
            throw new BenchException(
                    "-n " + iters + " is too many iterations to time each one (at most 50000000); use -D");
        return new long[(int) iters];
    }

    /** run_iter_lat_write: ping-pong of RDMA writes; each side spins on the last byte of its area; the server writes first. */
    LatencyResult writeLat(int size, boolean server, long iters) {
        BenchResources r = resources;
        PerfTest test = r.test;
        long[] tposted = timestamps(iters);
        QueuePair qp = r.qps[0];
        long post = r.localOffset(0) + size - 1, poll = r.remoteAreaOffset(0) + size - 1;
        PreparedSend wr = qp.prepareSend(r.dataRequest(
                new SendWorkRequest()
                        .opcode(WrOpcode.RDMA_WRITE)
                        .buffer(r.mr(0), r.localOffset(0), size)
                        .remote(r.rem[0].vaddr(), r.rem[0].rkey())
                        .signaled(true)
                        .wrId(1),
                0,
                size));
        long scnt = 0, rcnt = 0, ccnt = 0;
        Stall stall = new Stall(r, "the peer's RDMA write (" + test.id() + ", " + size + " bytes)");
        while (scnt < iters || ccnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && server)) {
                rcnt++;
                byte want = (byte) rcnt;
                // poll(wcs, 0) takes no completion: on a software device it handles the packets that arrived (the
                // peer's
                // WRITE) on this thread, as UCX's worker progress; on hardware it is a no-op
                while ((byte) BYTE.getVolatile(r.buf, poll) != want) {
                    r.sendCq.poll(r.wcs, 0);
                    stall.spin();
                }
                stall.progress();
            }
            if (scnt < iters) {
                gap(r.options.latencyGapUs);
                tposted[(int) scnt] = System.nanoTime();
                BYTE.setVolatile(r.buf, post, (byte) ++scnt);
                wr.post();
            }
            if (ccnt < iters) {
                int n;
                while ((n = r.sendCq.poll(r.done, 1)) == 0) stall.idle();
                r.check(0);
                ccnt += n;
            }
            if ((scnt & 0x3ff) == 0 && progress.enabled())
                progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, scnt, iters));
        }
        r.lastPostTimes = tposted;
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }

    /** run_iter_lat_send: ping-pong of sends; the client sends first. */
    LatencyResult sendLat(int size, boolean server, long iters) {
        return sendLat(size, server, iters, iters);
    }

    /**
     * {@link #sendLat(int, boolean, long)} as one of the loops of a run whose loops take {@code recvsWanted} messages
     * in all: receives are reposted until that many were posted (counted in {@link BenchResources#postedRecvs}), so
     * that a warm-in loop leaves the receives the next loop needs.
     */
    LatencyResult sendLat(int size, boolean server, long iters, long recvsWanted) {
        BenchResources r = resources;
        PerfTest test = r.test;
        long[] tposted = timestamps(iters);
        QueuePair qp = r.qps[0];
        PreparedSend wr = qp.prepareSend(r.dataRequest(
                new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .buffer(r.mr(0), r.localOffset(0), size)
                        .signaled(true)
                        .wrId(1),
                0,
                size));
        RecvWorkRequest rwr = r.recvRequest(0, size);
        int maxOutstanding = Math.max(1, qp.cap().maxSendWr());
        long scnt = 0, rcnt = 0, ccnt = 0, posted = r.postedRecvs;
        boolean repost = false;
        Stall stall = new Stall(r, "the peer's send (" + test.id() + ", " + size + " bytes)");
        while (scnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && !server)) {
                int n, waits = 0;
                while (true) {
                    n = r.recvCq.poll(r.done, 1);
                    if (n > 0) break;
                    // spinning, the receive CQ alone, as perftest's loop (on a software device each poll of an empty
                    // CQ drives the device: a second CQ polled per spin doubled the spin's period); the send queue is
                    // drained now and then while we wait, and before each post when it is full (below)
                    int c = 0;
                    if (r.channel != null || (++waits & SEND_CQ_LOOK_MASK) == 0) {
                        c = r.sendCq.poll(r.done, r.done.capacity());
                        for (int k = 0; k < c; k++) r.check(k);
                        ccnt += c;
                    }
                    if (c == 0) stall.idle();
                }
                r.check(0);
                stall.progress();
                rcnt++;
                repost = posted < recvsWanted;
            }
            if (scnt < iters) {
                while (scnt - ccnt >= maxOutstanding) {
                    int c = r.sendCq.poll(r.done, r.done.capacity());
                    for (int k = 0; k < c; k++) r.check(k);
                    ccnt += c;
                    if (c == 0) stall.idle();
                }
                gap(r.options.latencyGapUs);
                tposted[(int) scnt] = System.nanoTime();
                scnt++;
                wr.post();
            }
            if (repost) {
                // after the answer's post, not before it: the peer's next message needs a receive only a round trip
                // from now, and the other -r receives are still posted (perftest reposts first; on hardware a post
                // costs little, here it is the QP's lock and the receive queue on the critical path)
                r.postRecv(0, rwr);
                posted++;
                repost = false;
            }
            if ((scnt & 0x3ff) == 0 && progress.enabled())
                progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, scnt, iters));
        }
        Stall drain = new Stall(r, "the last send completions");
        while (ccnt < scnt) {
            int c = r.sendCq.poll(r.done, r.done.capacity());
            for (int k = 0; k < c; k++) r.check(k);
            ccnt += c;
            if (c == 0) drain.idle();
            else drain.progress();
        }
        r.postedRecvs = (int) posted;
        r.lastPostTimes = tposted;
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }
}
