package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * Test rig on a real device: picks the device (system property {@code jrdma.native.device}; when it is set the
 * device must exist, otherwise tests skip where the native provider lists nothing) and connects two RC QPs of
 * one context to each other (loopback through the device).
 */
final class Rig implements AutoCloseable {
    static final int PORT = 1;

    static Device device() {
        VerbsProvider p = Verbs.provider("native").orElseThrow();
        String named = System.getProperty("jrdma.native.device");
        if (named != null && !named.isBlank()) {
            return p.lookup(named)
                    .orElseThrow(() -> new AssertionError("jrdma.native.device=" + named
                            + " but the native provider lists " + p.devices()
                            + (p.unavailableReason().map(r -> " (" + r + ")").orElse(""))));
        }
        List<Device> d = p.devices();
        Assumptions.assumeFalse(
                d.isEmpty(),
                () -> "no native RDMA device here: " + p.unavailableReason().orElse("?"));
        return d.getFirst();
    }

    /** The GID index to route with: a RoCE v2 IPv4-mapped GID if there is one, else the first; -1 on InfiniBand. */
    static int gidIndex(Context ctx) {
        if (ctx.queryPort(PORT).linkLayer() == LinkLayer.INFINIBAND) return -1;
        List<GidEntry> t = ctx.gidTable(PORT);
        for (GidEntry e : t) if (e.isRoceV2() && e.gid().isIpv4Mapped()) return e.index();
        for (GidEntry e : t) if (e.isRoceV2()) return e.index();
        if (t.isEmpty()) fail("port " + PORT + " has no GID");
        return t.getFirst().index();
    }

    final Context ctx;
    final ProtectionDomain pd;
    final CompletionChannel channel;
    final CompletionQueue cqA, cqB;
    final QueuePair a, b;
    final Arena arena = Arena.ofShared();
    final MemorySegment bufA, bufB;
    final MemoryRegion mrA, mrB;
    final WorkCompletion[] wcs = WorkCompletion.array(16);

    Rig(int bufSize, int depth, int maxSge, int maxInline) {
        ctx = device().open();
        try {
            pd = ctx.allocPd();
            channel = ctx.createCompletionChannel();
            cqA = ctx.createCq(depth * 2 + 2, channel);
            cqB = ctx.createCq(depth * 2 + 2, channel);
            a = pd.createQueuePair(QpInitAttr.builder(cqA)
                    .maxSendWr(depth)
                    .maxRecvWr(depth)
                    .maxSendSge(maxSge)
                    .maxRecvSge(maxSge)
                    .maxInlineData(maxInline)
                    .build());
            b = pd.createQueuePair(QpInitAttr.builder(cqB)
                    .maxSendWr(depth)
                    .maxRecvWr(depth)
                    .maxSendSge(maxSge)
                    .maxRecvSge(maxSge)
                    .maxInlineData(maxInline)
                    .build());
            bufA = arena.allocate(bufSize, 4096);
            bufB = arena.allocate(bufSize, 4096);
            var all = new Access[] {Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC};
            mrA = pd.registerMemory(bufA, all);
            mrB = pd.registerMemory(bufB, all);
            connect(ctx, a, b, 0x1000, 0x2000);
        } catch (RuntimeException | Error e) {
            ctx.close();
            arena.close();
            throw e;
        }
    }

    /** Walks both QPs RESET -> INIT -> RTR -> RTS, each aimed at the other. */
    static void connect(Context ctx, QueuePair a, QueuePair b, int psnA, int psnB) {
        PortAttr port = ctx.queryPort(PORT);
        int gidx = gidIndex(ctx);
        Mtu mtu = port.activeMtu();
        for (QueuePair q : List.of(a, b)) {
            q.modify(new QpAttr()
                    .state(QpState.INIT)
                    .pkeyIndex(0)
                    .port(PORT)
                    .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC));
        }
        rtr(ctx, a, b.qpNum(), psnB, gidx, mtu, port);
        rtr(ctx, b, a.qpNum(), psnA, gidx, mtu, port);
        a.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(psnA)
                .maxRdAtomic(1));
        b.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(psnB)
                .maxRdAtomic(1));
    }

    private static void rtr(Context ctx, QueuePair q, int destQpn, int rqPsn, int gidx, Mtu mtu, PortAttr port) {
        AhAttr ah = new AhAttr().portNum(PORT).dlid(port.lid());
        if (gidx >= 0) ah.global(ctx.queryGid(PORT, gidx), gidx);
        q.modify(new QpAttr()
                .state(QpState.RTR)
                .ah(ah)
                .pathMtu(mtu)
                .destQpNum(destQpn)
                .rqPsn(rqPsn)
                .maxDestRdAtomic(1)
                .minRnrTimer(12));
    }

    /** Polls until {@code n} completions arrived on {@code cq} (10 s at most); returns them in wcs[0..n). */
    WorkCompletion[] await(CompletionQueue cq, int n) {
        WorkCompletion[] out = WorkCompletion.array(n);
        int got = 0;
        long deadline = System.nanoTime() + 10_000_000_000L;
        WorkCompletion[] one = WorkCompletion.array(1);
        while (got < n) {
            if (cq.poll(one) == 1) out[got++].copyFrom(one[0]);
            else if (System.nanoTime() > deadline) fail("only " + got + " of " + n + " completions within 10 s");
            else Thread.onSpinWait();
        }
        return out;
    }

    WorkCompletion awaitOk(CompletionQueue cq) {
        WorkCompletion wc = await(cq, 1)[0];
        assertTrue(wc.isSuccess(), () -> wc + ": " + wc.explain());
        return wc;
    }

    static void assertState(QueuePair q, QpState s) {
        assertEquals(s, q.state());
    }

    @Override
    public void close() {
        try {
            ctx.close();
        } finally {
            arena.close();
        }
    }
}
