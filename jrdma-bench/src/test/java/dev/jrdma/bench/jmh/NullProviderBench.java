package dev.jrdma.bench.jmh;

import dev.jrdma.nativeverbs.NullProvider;
import dev.jrdma.verbs.Completions;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What jrdma adds per post_send + poll_cq over C, on the null provider (jrdma-native's {@code nullverbs.c}: post
 * returns 0, poll returns one prepared completion, both reached through the context's ops table as a real
 * provider's are). One operation = one signalled 64-byte RDMA WRITE posted + one completion polled.
 * <ul>
 * <li>{@code c}: the C loop (verbs.h's inline ibv_post_send/ibv_poll_cq on a prepared work request), 1000 pairs per call</li>
 * <li>{@code ffm}: the same two verbs as bare critical FFM downcalls from Java, no jrdma code: the FFM floor</li>
 * <li>{@code jrdma}: {@code qp.postSend(wr)} + {@code cq.poll(wcs, 1)}: jrdma's whole path</li>
 * <li>{@code jrdmaPost}, {@code jrdmaPoll}: each half of {@code jrdma} alone</li>
 * <li>{@code fast}: the fast path, {@code prepared.post()} ({@code qp.prepareSend(wr)} once) + {@code cq.poll(completions, 1)}
 * (read in place); {@code fastPost}, {@code fastPoll}: each half alone</li>
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class NullProviderBench {
    static final int BATCH = 1000;
    Arena arena;
    NullProvider np;
    SendWorkRequest write;
    PreparedSend prepared;
    final Completions completions = new Completions(16);
    final WorkCompletion[] wcs = WorkCompletion.array(16);

    @Setup(Level.Trial)
    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by the trial's @TearDown
    public void setup() throws Exception {
        arena = Arena.ofShared();
        np = NullProvider.open(NullProvider.build(Path.of("target", "nullverbs")), arena.allocate(4096, 4096));
        np.set(true, false);
        write = new SendWorkRequest()
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(np.mr, 0, 64)
                .remote(np.mr.address(), np.mr.rkey())
                .signaled(true)
                .wrId(7);
        prepared = np.qp.prepareSend(write);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        np.free();
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long c() {
        return np.cLoop(BATCH);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long ffm() {
        return np.ffmLoop(BATCH);
    }

    @Benchmark
    public int jrdma() {
        np.qp.postSend(write);
        return np.cq.poll(wcs, 1);
    }

    @Benchmark
    public int fast() {
        prepared.post();
        return np.cq.poll(completions, 1);
    }

    @Benchmark
    public void fastPost() {
        prepared.post();
    }

    @Benchmark
    public int fastPoll() {
        return np.cq.poll(completions, 1);
    }

    @Benchmark
    public void jrdmaPost() {
        np.qp.postSend(write);
    }

    @Benchmark
    public int jrdmaPoll() {
        return np.cq.poll(wcs, 1);
    }
}
