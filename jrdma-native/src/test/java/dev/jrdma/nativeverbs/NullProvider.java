package dev.jrdma.nativeverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpCap;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The null provider ({@code nullverbs.c}, compiled with gcc at test time): a context, PD, CQ, RC QP and MR of the
 * native provider's own classes built around the library's {@code struct ibv_context}/{@code ibv_pd}/... whose
 * ops table points to verbs that do nothing (post) or return one prepared completion (poll). jrdma's post and
 * poll run their whole Java path and call through the ops table as with a real device; {@link #cLoop} is the same
 * verbs called by C, {@link #ffmLoop} by bare FFM downcalls. Needs gcc and libibverbs-dev (for verbs.h) and
 * libibverbs.so.1 (the provider's exported verbs are bound when it loads; the null objects never call them).
 *
 * <p>The objects are never closed: their destroy verbs would go to libibverbs with structs it did not make.
 * {@link #free} releases the library's memory once they are no longer used.
 */
@SuppressWarnings("restricted")
public final class NullProvider {
    public final Context context;
    public final ProtectionDomain pd;
    public final CompletionQueue cq;
    public final QueuePair qp;
    public final MemoryRegion mr;
    private final MemorySegment dev;
    private final MethodHandle set, posts, recvs, polls, seenSend, seenRecv, cLoop, close;
    private final MemorySegment cWr, ffmWc, ffmBad;

    /** What the library saw in the last work request posted (with {@code record} on). */
    public record Seen(
            long wrId,
            int opcode,
            int numSge,
            int sendFlags,
            int chain,
            long addr,
            long remoteAddr,
            int length,
            int lkey,
            int rkey,
            int immData) {}

    /** The last compiled library, one per JVM. */
    private static Path built;

    /**
     * Compiles {@code nullverbs.c} into {@code dir} (once per JVM) and returns the library. Fails with what to install
     * when gcc or verbs.h is missing.
     */
    public static synchronized Path build(Path dir) throws IOException, InterruptedException {
        if (built != null) return built;
        Path prebuilt = dir.resolve("libnullverbs.so");
        if (!onPath("gcc") && Files.exists(prebuilt))
            return built = prebuilt; // the Soft-RoCE guest has no gcc: the host built it
        if (!Files.exists(Path.of("/usr/include/infiniband/verbs.h")))
            throw new IllegalStateException(
                    "/usr/include/infiniband/verbs.h not found: install libibverbs-dev (the null provider is built against it)");
        Files.createDirectories(dir);
        Path src = dir.resolve("nullverbs.c"), lib = dir.resolve("libnullverbs.so");
        try (InputStream in = NullProvider.class.getResourceAsStream("nullverbs.c")) {
            if (in == null) throw new IllegalStateException("nullverbs.c is not on the class path");
            Files.write(src, in.readAllBytes());
        }
        Process p = new ProcessBuilder(List.of(
                        "gcc", "-O2", "-std=gnu11", "-shared", "-fPIC", "-Wall", "-o", lib.toString(), src.toString()))
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0)
            throw new IllegalStateException(
                    "gcc failed to build the null provider (install gcc libibverbs-dev):\n" + out);
        return built = lib;
    }

    /**
     * False when the tests that compile C are to be skipped ({@code -Djrdma.skipLayoutTest}, as in the guest, which has
     * no gcc) and no library was built into {@code dir} before.
     */
    public static boolean available(Path dir) {
        return System.getProperty("jrdma.skipLayoutTest") == null
                || built != null
                || Files.exists(dir.resolve("libnullverbs.so"));
    }

    private static boolean onPath(String exe) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":"))
            if (Files.isExecutable(Path.of(d, exe))) return true;
        return false;
    }

    /** A null device whose MR covers {@code memory} (a native segment that must outlive it). */
    public static NullProvider open(Path lib, MemorySegment memory) {
        return new NullProvider(SymbolLookup.libraryLookup(lib, Arena.global()), memory);
    }

    private NullProvider(SymbolLookup l, MemorySegment memory) {
        Linker k = Linker.nativeLinker();
        FunctionDescriptor ptrOfDev = FunctionDescriptor.of(ADDRESS, ADDRESS),
                longOfDev = FunctionDescriptor.of(JAVA_LONG, ADDRESS);
        try {
            dev = (MemorySegment) k.downcallHandle(
                            l.find("null_open").orElseThrow(), FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG))
                    .invokeExact(memory.address(), memory.byteSize());
            if (dev.equals(MemorySegment.NULL)) throw new OutOfMemoryError("null_open");
            MemorySegment ctxPtr =
                    (MemorySegment) k.downcallHandle(l.find("null_context").orElseThrow(), ptrOfDev)
                            .invokeExact(dev);
            MemorySegment pdPtr = (MemorySegment)
                    k.downcallHandle(l.find("null_pd").orElseThrow(), ptrOfDev).invokeExact(dev);
            MemorySegment cqPtr = (MemorySegment)
                    k.downcallHandle(l.find("null_cq").orElseThrow(), ptrOfDev).invokeExact(dev);
            MemorySegment qpPtr = (MemorySegment)
                    k.downcallHandle(l.find("null_qp").orElseThrow(), ptrOfDev).invokeExact(dev);
            MemorySegment mrPtr = (MemorySegment)
                    k.downcallHandle(l.find("null_mr").orElseThrow(), ptrOfDev).invokeExact(dev);
            cWr = ((MemorySegment) k.downcallHandle(l.find("null_c_wr").orElseThrow(), ptrOfDev)
                            .invokeExact(dev))
                    .reinterpret(Layouts.SEND_WR.byteSize());
            set = k.downcallHandle(
                    l.find("null_set").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT));
            posts = k.downcallHandle(l.find("null_posts").orElseThrow(), longOfDev);
            recvs = k.downcallHandle(l.find("null_recvs").orElseThrow(), longOfDev);
            polls = k.downcallHandle(l.find("null_polls").orElseThrow(), longOfDev);
            seenSend = k.downcallHandle(l.find("null_seen_send").orElseThrow(), ptrOfDev);
            seenRecv = k.downcallHandle(l.find("null_seen_recv").orElseThrow(), ptrOfDev);
            cLoop = k.downcallHandle(
                    l.find("null_c_loop").orElseThrow(), FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
            close = k.downcallHandle(l.find("null_close").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));

            NativeContext c =
                    new NativeContext(new NativeDevice("null0"), ctxPtr.reinterpret(Layouts.CONTEXT.byteSize()));
            NativePd p = new NativePd(c, pdPtr.reinterpret(Layouts.PD.byteSize()));
            NativeCq q = new NativeCq(c, null, cqPtr.reinterpret(Layouts.CQ.byteSize()));
            NativeMr m = new NativeMr(
                    p,
                    memory,
                    mrPtr.reinterpret(Layouts.MR.byteSize()),
                    EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ));
            p.addMr(m);
            context = c;
            pd = p;
            cq = q;
            mr = m;
            qp = new NativeQp(
                    p, qpPtr.reinterpret(Layouts.QP.byteSize()), QpType.RC, q, q, new QpCap(64, 64, 2, 2, 64));
            Arena a = Arena.global();
            ffmWc = a.allocate(Layouts.WC);
            ffmBad = a.allocate(ADDRESS);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** cqReady: poll returns the prepared completion (else the CQ is empty); record: remember the last requests. */
    public void set(boolean cqReady, boolean record) {
        try {
            set.invokeExact(dev, cqReady ? 1 : 0, record ? 1 : 0);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    public long posts() {
        return count(posts);
    }

    public long recvs() {
        return count(recvs);
    }

    public long polls() {
        return count(polls);
    }

    private long count(MethodHandle h) {
        try {
            return (long) h.invokeExact(dev);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    public Seen lastSend() {
        return seen(seenSend);
    }

    public Seen lastRecv() {
        return seen(seenRecv);
    }

    private Seen seen(MethodHandle h) {
        MemorySegment s;
        try {
            s = ((MemorySegment) h.invokeExact(dev)).reinterpret(64);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        // struct null_seen: u64 wr_id; int opcode, num_sge, send_flags, chain; u64 addr, remote_addr; u32 length, lkey,
        // rkey, imm
        return new Seen(
                s.get(JAVA_LONG, 0),
                s.get(JAVA_INT, 8),
                s.get(JAVA_INT, 12),
                s.get(JAVA_INT, 16),
                s.get(JAVA_INT, 20),
                s.get(JAVA_LONG, 24),
                s.get(JAVA_LONG, 32),
                s.get(JAVA_INT, 40),
                s.get(JAVA_INT, 44),
                s.get(JAVA_INT, 48),
                s.get(JAVA_INT, 52));
    }

    /** C: n × (ibv_post_send of a prepared RDMA WRITE + ibv_poll_cq of one), in one downcall; the completions polled. */
    public long cLoop(long n) {
        try {
            return (long) cLoop.invokeExact(dev, n);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    /**
     * The FFM floor: n × (post_send of the C program's prepared work request + poll_cq of one) as bare critical
     * downcalls through the ops table, with no jrdma code in between; the completions polled.
     */
    public long ffmLoop(long n) {
        NativeQp q = (NativeQp) qp;
        NativeCq c = (NativeCq) cq;
        MemorySegment send = context().opsPostSend, poll = context().opsPollCq;
        long got = 0;
        try {
            for (long i = 0; i < n; i++) {
                int rc = (int) Ibv.Fn.OPS_POST_SEND.invokeExact(send, q.qp.address(), cWr.address(), ffmBad.address());
                if (rc != 0) return -1;
                got += (int) Ibv.Fn.OPS_POLL_CQ.invokeExact(poll, c.cq.address(), 1, ffmWc.address());
            }
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        return got;
    }

    private NativeContext context() {
        return (NativeContext) context;
    }

    /** Frees the library's structs; the Java objects must not be used afterwards. */
    public void free() {
        try {
            close.invokeExact(dev);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }
}
