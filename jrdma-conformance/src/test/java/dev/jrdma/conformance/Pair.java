package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

/**
 * Two RC queue pairs on the device under test, connected to each other: what every conformance test starts from.
 * The device is {@code -Djrdma.test.device=NAME} (rxe0 in the Soft-RoCE guest), else the default device
 * (the software device on a machine without RDMA hardware).
 */
final class Pair implements AutoCloseable {
    static final int PORT = 1;
    final Arena arena = Arena.ofShared();
    final Context ctx;
    final ProtectionDomain pd;
    final CompletionQueue cqA, cqB;
    final QueuePair a, b;
    final int gidIndex;

    static Device device() {
        String name = System.getProperty("jrdma.test.device");
        return name == null || name.isBlank() ? Verbs.defaultDevice() : Verbs.device(name);
    }

    Pair() {
        this(b -> b, 256);
    }

    Pair(java.util.function.UnaryOperator<QpInitAttr.Builder> tune, int cqe) {
        ctx = device().open();
        pd = ctx.allocPd();
        cqA = ctx.createCq(cqe, null);
        cqB = ctx.createCq(cqe, null);
        a = pd.createQueuePair(tune.apply(QpInitAttr.builder(cqA)
                        .maxSendWr(64)
                        .maxRecvWr(64)
                        .maxSendSge(4)
                        .maxRecvSge(4)
                        .maxInlineData(64))
                .build());
        b = pd.createQueuePair(tune.apply(QpInitAttr.builder(cqB)
                        .maxSendWr(64)
                        .maxRecvWr(64)
                        .maxSendSge(4)
                        .maxRecvSge(4)
                        .maxInlineData(64))
                .build());
        gidIndex = gidIndex(ctx);
    }

    /**
     * Linux 6.1's rdma_rxe deviates from the spec in a few error paths; the tests name each deviation where they
     * allow it, and hold every other device (the software device included) to the spec.
     */
    boolean isRxe() {
        return ctx.device().name().startsWith("rxe");
    }

    static int gidIndex(Context ctx) {
        return ctx.defaultGidIndex(PORT);
    }

    Pair connect() {
        return connect(
                7,
                7,
                12,
                Mtu.MTU_1024,
                EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC));
    }

    /** Walks both QPs to RTS, each aimed at the other. */
    Pair connect(int retryCnt, int rnrRetry, int minRnrTimer, Mtu mtu, Set<Access> qpAccess) {
        Mtu pathMtu = mtu.min(ctx.queryPort(PORT).activeMtu());
        for (QueuePair q : new QueuePair[] {a, b}) {
            q.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(PORT).access(qpAccess));
        }
        rtr(a, b, pathMtu, minRnrTimer, 0x100);
        rtr(b, a, pathMtu, minRnrTimer, 0x200);
        rts(a, retryCnt, rnrRetry, 0x200);
        rts(b, retryCnt, rnrRetry, 0x100);
        return this;
    }

    void rtr(QueuePair q, QueuePair peer, Mtu mtu, int minRnrTimer, int rqPsn) {
        AhAttr ah = new AhAttr().dlid(ctx.queryPort(PORT).lid()).portNum(PORT);
        ah.global(ctx.queryGid(PORT, gidIndex), gidIndex);
        q.modify(new QpAttr()
                .state(QpState.RTR)
                .ah(ah)
                .pathMtu(mtu)
                .destQpNum(peer.qpNum())
                .rqPsn(rqPsn)
                .maxDestRdAtomic(4)
                .minRnrTimer(minRnrTimer));
    }

    void rts(QueuePair q, int retryCnt, int rnrRetry, int sqPsn) {
        q.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(12)
                .retryCnt(retryCnt)
                .rnrRetry(rnrRetry)
                .sqPsn(sqPsn)
                .maxRdAtomic(4));
    }

    MemoryRegion mr(long size, Access... access) {
        MemorySegment seg = arena.allocate(size, 64);
        return pd.registerMemory(seg, access);
    }

    MemoryRegion mrAll(long size) {
        return mr(size, Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
    }

    /** Waits (bounded) for exactly one completion on {@code cq}. */
    static WorkCompletion one(CompletionQueue cq) {
        WorkCompletion[] wcs = WorkCompletion.array(1);
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (cq.poll(wcs) == 1) return wcs[0];
            Thread.onSpinWait();
        }
        return fail("no completion within 20 s");
    }

    /** Asserts that no completion arrives on {@code cq} within {@code ms}. */
    static void none(CompletionQueue cq, long ms) {
        WorkCompletion[] wcs = WorkCompletion.array(1);
        long deadline = System.nanoTime() + ms * 1_000_000;
        while (System.nanoTime() < deadline) {
            if (cq.poll(wcs) > 0) fail("unexpected completion " + wcs[0]);
            Thread.onSpinWait();
        }
    }

    static void fill(MemorySegment seg, long offset, long len, int seed) {
        for (long i = 0; i < len; i++)
            seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + i, (byte) (seed + i * 31));
    }

    static void assertFilled(MemorySegment seg, long offset, long len, int seed) {
        for (long i = 0; i < len; i++) {
            byte want = (byte) (seed + (i * 31));
            byte got = seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + i);
            if (got != want) assertEquals(want, got, "byte " + i + " of " + len);
        }
    }

    @Override
    public void close() {
        ctx.close();
        arena.close();
    }
}
