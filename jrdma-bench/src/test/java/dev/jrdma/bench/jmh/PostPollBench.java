package dev.jrdma.bench.jmh;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * post + poll on the software device, in one JVM: an 8-byte signalled RDMA WRITE posted and polled to completion
 * (the whole round trip through the soft transport), and a poll of an empty CQ (the hot path's fixed cost).
 * Devices: soft@127.0.0.51 and soft@127.0.0.52 on the UDP port in jrdma.soft.port.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PostPollBench {
    Context a, b;
    Arena arena;
    CompletionQueue cqA, cqB;
    QueuePair qa, qb;
    MemoryRegion mra, mrb;
    SendWorkRequest write;
    final WorkCompletion[] wcs = WorkCompletion.array(16);

    @Setup(Level.Trial)
    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by the trial's @TearDown
    public void setup() {
        a = Verbs.device("soft@127.0.0.51").open();
        b = Verbs.device("soft@127.0.0.52").open();
        arena = Arena.ofShared();
        MemorySegment sa = arena.allocate(4096, 4096), sb = arena.allocate(4096, 4096);
        ProtectionDomain pa = a.allocPd(), pb = b.allocPd();
        mra = pa.registerMemory(sa, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        mrb = pb.registerMemory(sb, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        cqA = a.createCq(64, null);
        cqB = b.createCq(64, null);
        qa = pa.createQueuePair(
                QpInitAttr.builder(cqA).maxSendWr(16).maxRecvWr(16).build());
        qb = pb.createQueuePair(
                QpInitAttr.builder(cqB).maxSendWr(16).maxRecvWr(16).build());
        connect(qa, qb, b);
        connect(qb, qa, a);
        write = new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(mra, 0, 8)
                .remote(mrb.address(), mrb.rkey())
                .signaled(true);
    }

    static void connect(QueuePair q, QueuePair peer, Context peerCtx) {
        new RcWalk()
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE)
                .ah(new AhAttr().portNum(1).global(peerCtx.queryGid(1, 0), 0).hopLimit(64))
                .to(peer.qpNum(), 0)
                .maxDestRdAtomic(1)
                .maxRdAtomic(1)
                .walk(q);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        a.close();
        b.close();
        arena.close();
    }

    /** One 8-byte RDMA WRITE, posted and polled until its completion. */
    @Benchmark
    public int writePostPoll() {
        qa.postSend(write);
        int n, spins = 0;
        // as jrdma perf does: spin, and give the soft transport's threads the core now and then (2-core machines)
        while ((n = cqA.poll(wcs, 1)) == 0)
            if ((++spins & 63) == 0) Thread.yield();
            else Thread.onSpinWait();
        if (!wcs[0].isSuccess()) throw new IllegalStateException(wcs[0].explain());
        return n;
    }

    /** A poll of an empty completion queue. */
    @Benchmark
    public int pollEmpty() {
        return cqB.poll(wcs, 16);
    }
}
