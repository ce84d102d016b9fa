package dev.jrdma.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * Two RC queue pairs connected to each other: what every test of the data path starts from, over any
 * {@link Backend} (the software device's threads, its deterministic network with a clock the test owns, a named or
 * native device). Each {@link Side} has its context, PD, CQ (with a completion channel unless told otherwise) and
 * QP; both QPs are walked RESET to RTS with {@link RcWalk}, the walk main code uses. Waits ({@link #await},
 * {@link #none}, {@link #pass}) go through the backend, so on the deterministic network they move its clock instead of
 * sleeping.
 */
public final class RcPair implements AutoCloseable {
    /** The port every pair uses. */
    public static final int PORT = 1;

    /** Where a pair's contexts come from and how its time passes. */
    public interface Backend extends AutoCloseable {
        /** {@return a name for messages} */
        String name();

        /**
         * Opens the contexts of the two sides.
         *
         * @return two contexts; the same one twice where the backend has one device (its two QPs then talk through it)
         */
        Context[] open();

        /**
         * Moves things on once while a test waits: delivers what is in flight, or lets a little time pass.
         *
         * @param waited how many steps this wait has taken so far (a threaded backend spins first, then naps)
         */
        void step(int waited);

        /** {@return the backend's clock in nanoseconds: the system's, or the deterministic network's} */
        long nanoTime();

        /**
         * Lets {@code nanos} of the backend's time pass (delivering what is sent meanwhile).
         *
         * @param nanos how long
         */
        default void pass(long nanos) {
            long end = nanoTime() + nanos;
            for (int i = 0; nanoTime() < end; i++) step(i);
        }

        @Override
        default void close() {}
    }

    /**
     * A backend of one or two contexts on devices that run by themselves (their own threads, the kernel, a NIC).
     *
     * @param name the backend's name in messages
     * @param contexts opens the two sides' contexts (the same one twice for one device)
     * @return the backend
     */
    public static Backend threaded(String name, java.util.function.Supplier<Context[]> contexts) {
        return new Backend() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public Context[] open() {
                return contexts.get();
            }

            @Override
            public void step(int waited) {
                // spin briefly, then nap: a test that spins flat out starves the kernel's loopback delivery on small
                // machines
                if (waited < 200) Thread.onSpinWait();
                else java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }

            @Override
            public long nanoTime() {
                return System.nanoTime();
            }

            @Override
            public void pass(long nanos) {
                java.util.concurrent.locks.LockSupport.parkNanos(nanos);
            }
        };
    }

    /** One side: context, PD, completion channel (or null), CQ, QP, and a shared arena for its buffers. */
    public static final class Side implements AutoCloseable {
        /** The side's context (both sides' may be one). */
        public final Context ctx;
        /** The side's PD (both sides share one when they share a context). */
        public final ProtectionDomain pd;
        /** The CQ's completion channel, or null. */
        public final CompletionChannel ch;
        /** The CQ of both the QP's queues. */
        public final CompletionQueue cq;
        /** The QP. */
        public final QueuePair qp;
        /** Where {@link #mr} allocates; closed with the side. */
        public final Arena arena = Arena.ofShared();

        private final boolean ownsContext;

        private Side(
                Context ctx, ProtectionDomain pd, boolean ownsContext, QpInitAttr.Builder qp, int cqe, boolean ch) {
            this.ctx = ctx;
            this.ownsContext = ownsContext;
            this.pd = pd != null ? pd : ctx.allocPd();
            this.ch = ch ? ctx.createCompletionChannel() : null;
            cq = ctx.createCq(cqe, this.ch);
            this.qp = this.pd.createQueuePair(qp.sendCq(cq).recvCq(cq).build());
        }

        /**
         * A side on {@code ctx} with the kit's QP shape (64 WRs and 4 SGEs each way, 64 bytes inline) tuned by
         * {@code tune}; closing the side closes {@code ctx}.
         *
         * @param ctx the context
         * @param tune changes to the QP's attributes
         * @param cqe the CQ's size
         * @return the side, its QP in RESET
         */
        public static Side open(Context ctx, UnaryOperator<QpInitAttr.Builder> tune, int cqe) {
            return new Side(ctx, null, true, tune.apply(defaultQp()), cqe, true);
        }

        /**
         * Registers {@code size} bytes of the side's arena (8-byte aligned).
         *
         * @param size bytes
         * @param access the rights; none for local read only
         * @return the region
         */
        public MemoryRegion mr(long size, Access... access) {
            MemorySegment seg = arena.allocate(size, 64);
            return pd.registerMemory(
                    seg, access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access));
        }

        /**
         * Registers {@code size} bytes with every right but MW_BIND.
         *
         * @param size bytes
         * @return the region
         */
        public MemoryRegion mrAll(long size) {
            return mr(size, Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        }

        /**
         * Registers {@code size} bytes with every right, MW_BIND included (memory windows may be bound to it).
         *
         * @param size bytes
         * @return the region
         */
        public MemoryRegion mrBindable(long size) {
            return mr(
                    size,
                    Access.LOCAL_WRITE,
                    Access.REMOTE_WRITE,
                    Access.REMOTE_READ,
                    Access.REMOTE_ATOMIC,
                    Access.MW_BIND);
        }

        @Override
        public void close() {
            try {
                if (ownsContext) ctx.close();
            } finally {
                arena.close();
            }
        }
    }

    static QpInitAttr.Builder defaultQp() {
        return QpInitAttr.builder(null)
                .maxSendWr(64)
                .maxRecvWr(64)
                .maxSendSge(4)
                .maxRecvSge(4)
                .maxInlineData(64);
    }

    /** How a pair is made; every setting has the default most tests want. */
    public static final class Builder {
        private final Backend backend;
        private UnaryOperator<QpInitAttr.Builder> qpA = UnaryOperator.identity(), qpB = UnaryOperator.identity();
        private int cqe = 256;
        private boolean channel = true;
        private boolean connect = true;
        private Mtu mtu = Mtu.MTU_1024;
        private int timeout = 14, retryCnt = 7, rnrRetry = 7, minRnrTimer = 1, maxRdAtomic = 4, maxDestRdAtomic = 4;
        private int psnA = 100, psnB = 5000;
        private Set<Access> access = EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        private byte[] authKey;

        private Builder(Backend backend) {
            this.backend = backend;
        }

        /**
         * Changes both QPs' attributes.
         *
         * @param tune applied to the kit's QP shape
         * @return this builder
         */
        public Builder qp(UnaryOperator<QpInitAttr.Builder> tune) {
            qpA = qpB = tune;
            return this;
        }

        /**
         * Changes side A's QP attributes.
         *
         * @param tune applied to the kit's QP shape
         * @return this builder
         */
        public Builder qpA(UnaryOperator<QpInitAttr.Builder> tune) {
            qpA = tune;
            return this;
        }

        /**
         * Changes side B's QP attributes.
         *
         * @param tune applied to the kit's QP shape
         * @return this builder
         */
        public Builder qpB(UnaryOperator<QpInitAttr.Builder> tune) {
            qpB = tune;
            return this;
        }

        /**
         * Sets each CQ's size (256).
         *
         * @param n entries
         * @return this builder
         */
        public Builder cqe(int n) {
            cqe = n;
            return this;
        }

        /**
         * Whether each CQ gets a completion channel (yes).
         *
         * @param on false for none
         * @return this builder
         */
        public Builder channel(boolean on) {
            channel = on;
            return this;
        }

        /**
         * Whether {@link #build} walks both QPs to RTS (yes); otherwise they stay in RESET for {@link RcPair#connect}.
         *
         * @param on false to leave them in RESET
         * @return this builder
         */
        public Builder connect(boolean on) {
            connect = on;
            return this;
        }

        /**
         * Sets the path MTU the pair asks for (1024); the ports' active MTUs cap it.
         *
         * @param m the MTU
         * @return this builder
         */
        public Builder mtu(Mtu m) {
            mtu = m;
            return this;
        }

        /**
         * Sets the local ACK timeout exponent (14).
         *
         * @param t the exponent
         * @return this builder
         */
        public Builder timeout(int t) {
            timeout = t;
            return this;
        }

        /**
         * Sets the retry count (7).
         *
         * @param n 0..7
         * @return this builder
         */
        public Builder retryCnt(int n) {
            retryCnt = n;
            return this;
        }

        /**
         * Sets the RNR retry count (7: without end).
         *
         * @param n 0..7
         * @return this builder
         */
        public Builder rnrRetry(int n) {
            rnrRetry = n;
            return this;
        }

        /**
         * Sets the RNR NAK timer code each responder asks for (1: 0.01 ms).
         *
         * @param code the IBTA's code
         * @return this builder
         */
        public Builder minRnrTimer(int code) {
            minRnrTimer = code;
            return this;
        }

        /**
         * Sets the READ/atomic depth each QP initiates (4).
         *
         * @param n the depth
         * @return this builder
         */
        public Builder maxRdAtomic(int n) {
            maxRdAtomic = n;
            return this;
        }

        /**
         * Sets the READ/atomic depth each responder accepts (4).
         *
         * @param n the depth
         * @return this builder
         */
        public Builder maxDestRdAtomic(int n) {
            maxDestRdAtomic = n;
            return this;
        }

        /**
         * Sets the first PSNs of A's and B's requests (100 and 5000).
         *
         * @param a A's first PSN
         * @param b B's first PSN
         * @return this builder
         */
        public Builder psns(int a, int b) {
            psnA = a;
            psnB = b;
            return this;
        }

        /**
         * Sets the rights each QP gives its peer (remote write, read and atomic).
         *
         * @param rights the rights
         * @return this builder
         */
        public Builder access(Access... rights) {
            access = rights.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(rights[0], rights);
            return this;
        }

        /**
         * Sets the rights each QP gives its peer.
         *
         * @param rights the rights
         * @return this builder
         */
        public Builder access(Set<Access> rights) {
            access = rights.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(rights);
            return this;
        }

        /**
         * Puts both QPs in the software device's authenticated mode with one key (none).
         *
         * @param key16 the key, or null for plain RoCEv2
         * @return this builder
         */
        public Builder authKey(byte[] key16) {
            authKey = key16;
            return this;
        }

        /** {@return the pair: contexts opened, QPs created, and walked to RTS unless {@link #connect(boolean)} said no} */
        public RcPair build() {
            return new RcPair(this);
        }
    }

    /**
     * A builder on {@code backend}.
     *
     * @param backend where the contexts come from
     * @return the builder
     */
    public static Builder on(Backend backend) {
        return new Builder(backend);
    }

    /** Side A and side B. */
    public final Side a, b;
    /** Where the contexts came from; its time is the pair's. */
    public final Backend backend;

    private final Builder settings;

    private RcPair(Builder s) {
        settings = s;
        backend = s.backend;
        Context[] ctx = backend.open();
        boolean one = ctx[0] == ctx[1];
        Side sa = null, sb = null;
        try {
            sa = new Side(ctx[0], null, true, s.qpA.apply(defaultQp()), s.cqe, s.channel);
            sb = new Side(ctx[1], one ? sa.pd : null, !one, s.qpB.apply(defaultQp()), s.cqe, s.channel);
        } catch (RuntimeException | Error e) {
            if (sa != null) sa.close();
            if (sb == null && !one) ctx[1].close();
            if (sa == null) ctx[0].close();
            backend.close();
            throw e;
        }
        a = sa;
        b = sb;
        if (s.connect) connect();
    }

    /** Walks both QPs from RESET to RTS, each aimed at the other, with the builder's settings. */
    public void connect() {
        connect(w -> {});
    }

    /**
     * Walks both QPs from RESET to RTS with the builder's settings, then {@code tune}'s changes to each walk.
     *
     * @param tune changes to both walks
     */
    public void connect(Consumer<RcWalk> tune) {
        RcWalk wa = walk(a, b, settings.psnA, settings.psnB), wb = walk(b, a, settings.psnB, settings.psnA);
        tune.accept(wa);
        tune.accept(wb);
        wa.walk(a.qp);
        wb.walk(b.qp);
    }

    /** A posts a signalled RDMA WRITE of the first {@code len} bytes of {@code src} to the start of {@code dst}. */
    public void postWrite(long wrId, MemoryRegion src, MemoryRegion dst, int len) {
        a.qp.postSend(new SendWorkRequest()
                .wrId(wrId)
                .opcode(WrOpcode.RDMA_WRITE)
                .buffer(src, 0, len)
                .remote(dst.address(), dst.rkey())
                .signaled(true));
    }

    /**
     * The walk of {@code me}'s QP towards {@code peer}'s with the builder's settings.
     *
     * @param me the side walked
     * @param peer the side it talks to
     * @param myPsn {@code me}'s first PSN
     * @param peerPsn {@code peer}'s first PSN
     * @return the walk, not yet taken
     */
    public RcWalk walk(Side me, Side peer, int myPsn, int peerPsn) {
        return walk(me.ctx, peer.ctx, peer.qp, myPsn, peerPsn);
    }

    /**
     * The walk of a QP of {@code me} towards {@code peerQp} of {@code peer} with the builder's settings (for QPs
     * beside the pair's, e.g. on a shared receive queue).
     *
     * @param me the walked QP's context
     * @param peer the peer QP's context (may be {@code me})
     * @param peerQp the QP it talks to
     * @param myPsn the walked QP's first PSN
     * @param peerPsn the peer's first PSN
     * @return the walk, not yet taken
     */
    public RcWalk walk(Context me, Context peer, QueuePair peerQp, int myPsn, int peerPsn) {
        Builder s = settings;
        PortAttr mine = me.queryPort(PORT), theirs = peer.queryPort(PORT);
        return new RcWalk()
                .port(PORT)
                .access(s.access)
                .ah(ahTo(me, peer))
                .pathMtu(s.mtu.min(mine.activeMtu()).min(theirs.activeMtu()))
                .to(peerQp.qpNum(), peerPsn)
                .maxDestRdAtomic(s.maxDestRdAtomic)
                .minRnrTimer(s.minRnrTimer)
                .packetAuthKey(s.authKey)
                .timeout(s.timeout)
                .retryCnt(s.retryCnt)
                .rnrRetry(s.rnrRetry)
                .sqPsn(myPsn)
                .maxRdAtomic(s.maxRdAtomic);
    }

    /**
     * The address vector from {@code me} to {@code peer}: the peer's GID at its default index on RoCE, its LID on
     * InfiniBand.
     *
     * @param me the sending context
     * @param peer the receiving context (may be {@code me})
     * @return the address vector
     */
    public static AhAttr ahTo(Context me, Context peer) {
        PortAttr port = peer.queryPort(PORT);
        AhAttr ah = new AhAttr().portNum(PORT).dlid(port.lid());
        if (port.linkLayer() != LinkLayer.INFINIBAND)
            ah.global(peer.queryGid(PORT, peer.defaultGidIndex(PORT)), me.defaultGidIndex(PORT));
        return ah;
    }

    /** {@return whether both sides share one context (a one-device backend)} */
    public boolean oneContext() {
        return a.ctx == b.ctx;
    }

    /**
     * Linux's rdma_rxe deviates from the spec in a few error paths; tests name each deviation where they allow it and
     * hold every other device (the software device included) to the spec.
     *
     * @return whether side A's device is rxe
     */
    public boolean isRxe() {
        return a.ctx.device().name().startsWith("rxe");
    }

    /**
     * Waits for one completion on {@code cq}, moving the backend on meanwhile; fails after 20 s of its time.
     *
     * @param cq a CQ of this pair
     * @return the completion (a fresh object)
     */
    public WorkCompletion await(CompletionQueue cq) {
        return await(cq, 20_000);
    }

    /**
     * Waits for one completion on {@code cq}, moving the backend on meanwhile.
     *
     * @param cq a CQ of this pair
     * @param ms how long at most, in the backend's time
     * @return the completion (a fresh object)
     */
    public WorkCompletion await(CompletionQueue cq, long ms) {
        WorkCompletion[] wc = WorkCompletion.array(1);
        long end = backend.nanoTime() + ms * 1_000_000;
        for (int i = 0; ; i++) {
            if (cq.poll(wc) == 1) return wc[0];
            if (backend.nanoTime() - end > 0) return fail("no completion within " + ms + " ms on " + backend.name());
            backend.step(i);
        }
    }

    /**
     * Waits for one completion on {@code cq} and asserts it succeeded (the failure names the status and its remedy).
     *
     * @param cq a CQ of this pair
     * @return the completion
     */
    public WorkCompletion awaitOk(CompletionQueue cq) {
        WorkCompletion wc = await(cq);
        assertTrue(wc.isSuccess(), () -> wc + ": " + wc.explain());
        return wc;
    }

    /**
     * Waits for {@code n} completions on {@code cq}.
     *
     * @param cq a CQ of this pair
     * @param n how many
     * @return them, in order
     */
    public List<WorkCompletion> awaitAll(CompletionQueue cq, int n) {
        List<WorkCompletion> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(await(cq));
        return out;
    }

    /**
     * Waits (2 s of the backend's time at most) until {@code qp} is in {@code state}: a QP the device moves on its own,
     * e.g. a responder that goes to ERR after it sent a fatal NAK.
     *
     * @param qp a QP of this pair
     * @param state the state to reach
     */
    public void awaitState(QueuePair qp, QpState state) {
        long end = backend.nanoTime() + 2_000_000_000L;
        for (int i = 0; qp.state() != state && backend.nanoTime() - end < 0; i++) backend.step(i);
        assertEquals(state, qp.state(), () -> "the QP's state after 2 s on " + backend.name());
    }

    /**
     * Asserts that no completion arrives on {@code cq} within {@code ms} of the backend's time.
     *
     * @param cq a CQ of this pair
     * @param ms how long
     */
    public void none(CompletionQueue cq, long ms) {
        WorkCompletion[] wc = WorkCompletion.array(1);
        long end = backend.nanoTime() + ms * 1_000_000;
        for (int i = 0; backend.nanoTime() - end < 0; i++) {
            if (cq.poll(wc) > 0) fail("unexpected completion " + wc[0]);
            backend.step(i);
        }
        assertEquals(0, cq.poll(wc), () -> "unexpected completion " + wc[0]);
    }

    /**
     * Lets {@code ms} of the backend's time pass (on the deterministic network: delivering what is sent meanwhile).
     *
     * @param ms how long
     */
    public void pass(long ms) {
        backend.pass(ms * 1_000_000);
    }

    /**
     * Writes the kit's pattern {@code (seed + i * 31)} into {@code len} bytes at {@code offset}.
     *
     * @param seg the memory
     * @param offset where
     * @param len how many bytes
     * @param seed the pattern's start
     */
    public static void fill(MemorySegment seg, long offset, long len, int seed) {
        for (long i = 0; i < len; i++) seg.set(ValueLayout.JAVA_BYTE, offset + i, (byte) (seed + i * 31));
    }

    /**
     * Writes the kit's pattern {@code (seed + i * 31)} into the first {@code len} bytes.
     *
     * @param seg the memory
     * @param len how many bytes
     * @param seed the pattern's start
     */
    public static void fill(MemorySegment seg, long len, int seed) {
        fill(seg, 0, len, seed);
    }

    /**
     * Asserts the kit's pattern {@code (seed + i * 31)} in {@code len} bytes at {@code offset}.
     *
     * @param seg the memory
     * @param offset where
     * @param len how many bytes
     * @param seed the pattern's start
     */
    public static void assertFilled(MemorySegment seg, long offset, long len, int seed) {
        for (long i = 0; i < len; i++) {
            byte want = (byte) (seed + i * 31);
            byte got = seg.get(ValueLayout.JAVA_BYTE, offset + i);
            if (want != got) fail("byte " + i + " of " + len + ": expected " + want + " got " + got);
        }
    }

    @Override
    public void close() {
        try (backend) {
            try {
                b.close();
            } finally {
                a.close();
            }
        }
    }
}
