package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionChannel;
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
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.EnumSet;

/** Test plumbing: two software devices on 127.0.0.1 and 127.0.0.2 (one free UDP port) and connected QP pairs. */
final class Fixture {
    static final Inet4Address A = ip("127.0.0.1"), B = ip("127.0.0.2");
    static final int PORT;
    private static final Context ANCHOR_A, ANCHOR_B;

    static {
        int port = 0;
        Context ca = null, cb = null;
        for (int attempt = 0; attempt < 50 && ca == null; attempt++) {
            int p = 20000 + (int) (Math.random() * 30000);
            try {
                ca = SoftProvider.open(A, p).open();
                cb = SoftProvider.open(B, p).open();
                port = p;
            } catch (VerbsException e) {
                if (ca != null) ca.close();
                ca = null;
            }
        }
        if (ca == null) throw new IllegalStateException("no free UDP port pair on 127.0.0.1/127.0.0.2");
        PORT = port;
        ANCHOR_A = ca; // keep the sockets bound for the whole run
        ANCHOR_B = cb;
    }

    /**
     * Opens {@code n} devices on 127.0.0.1, 127.0.0.2, ... on one free UDP port, whose links damage what they send as
     * {@code faults} say; the caller closes the contexts (the port is released with the last one).
     */
    static Context[] openFaulty(Faults faults, int n) {
        for (int attempt = 0; attempt < 50; attempt++) {
            int p = 20000 + (int) (Math.random() * 30000);
            Context[] cs = new Context[n];
            try {
                for (int i = 0; i < n; i++)
                    cs[i] = SoftDevice.withFaults(ip("127.0.0." + (i + 1)), p, faults)
                            .open();
                return cs;
            } catch (VerbsException e) {
                for (Context c : cs) if (c != null) c.close();
            }
        }
        throw new IllegalStateException("no free UDP port on 127.0.0.1..127.0.0." + n);
    }

    static Inet4Address ip(String s) {
        try {
            return (Inet4Address) InetAddress.getByName(s);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Device devA() {
        return SoftProvider.open(A, PORT);
    }

    static Device devB() {
        return SoftProvider.open(B, PORT);
    }

    /** One side: context, PD, CQ (with channel), QP, and a shared arena for buffers. */
    static final class Side implements AutoCloseable {
        final Context ctx;
        final ProtectionDomain pd;
        final CompletionChannel ch;
        final CompletionQueue cq;
        final QueuePair qp;
        final Arena arena = Arena.ofShared();

        Side(Device dev, QpInitAttr.Builder qpb, int cqe) {
            this(dev.open(), qpb, cqe);
        }

        /** A side on a context of the caller's (e.g. one over a detached transport); closing the side closes it. */
        Side(Context ctx, QpInitAttr.Builder qpb, int cqe) {
            this.ctx = ctx;
            pd = ctx.allocPd();
            ch = ctx.createCompletionChannel();
            cq = ctx.createCq(cqe, ch);
            qp = pd.createQueuePair(
                    qpb == null
                            ? QpInitAttr.builder(cq)
                                    .maxSendWr(64)
                                    .maxRecvWr(64)
                                    .maxSendSge(4)
                                    .maxRecvSge(4)
                                    .maxInlineData(64)
                                    .build()
                            : qpb.sendCq(cq).recvCq(cq).build());
        }

        MemoryRegion mr(long size, Access... access) {
            MemorySegment seg = arena.allocate(size, 8);
            return pd.registerMemory(
                    seg, access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access));
        }

        MemoryRegion mrAll(long size) {
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
            ctx.close();
            arena.close();
        }
    }

    /** Options for connecting a pair. */
    static final class Opts {
        Mtu mtu = Mtu.MTU_1024;
        int timeout = 14, retryCnt = 7, rnrRetry = 7, minRnrTimer = 1, maxRdAtomic = 4, maxDestRdAtomic = 4;
        Access[] access = {Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC};
        QpInitAttr.Builder qpA, qpB;
        int cqe = 256;
        boolean sameDevice;
        /** The devices of the two sides (null: {@link #devA()} and {@link #devB()}). */
        Device devA, devB;
        /** The authenticated mode's key of both QPs ({@code QpAttr.packetAuthKey}), or null for plain RoCEv2. */
        byte[] authKey;
    }

    static final class Pair implements AutoCloseable {
        final Side a, b;

        Pair(Opts o) {
            Device da = o.devA != null ? o.devA : devA(), db = o.devB != null ? o.devB : devB();
            a = new Side(da, o.qpA, o.cqe);
            b = new Side(o.sameDevice ? da : db, o.qpB, o.cqe);
            connect(a, b, o, 100, 5000);
            connect(b, a, o, 5000, 100);
        }

        @Override
        public void close() {
            a.close();
            b.close();
        }
    }

    static Pair pair() {
        return new Pair(new Opts());
    }

    static Pair pair(java.util.function.Consumer<Opts> c) {
        Opts o = new Opts();
        c.accept(o);
        return new Pair(o);
    }

    static void connect(Side me, Side peer, Opts o, int myPsn, int peerPsn) {
        me.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(o.access));
        QpAttr rtr = new QpAttr()
                .state(QpState.RTR)
                .ah(new AhAttr().global(((SoftContext) peer.ctx).device().gid(), me.ctx.defaultGidIndex(1)))
                .pathMtu(o.mtu)
                .destQpNum(peer.qp.qpNum())
                .rqPsn(peerPsn)
                .maxDestRdAtomic(o.maxDestRdAtomic)
                .minRnrTimer(o.minRnrTimer);
        if (o.authKey != null) rtr.packetAuthKey(o.authKey);
        me.qp.modify(rtr);
        me.qp.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(o.timeout)
                .retryCnt(o.retryCnt)
                .rnrRetry(o.rnrRetry)
                .sqPsn(myPsn)
                .maxRdAtomic(o.maxRdAtomic));
    }

    /** Polls one completion or fails after {@code ms}. */
    static WorkCompletion poll(CompletionQueue cq, long ms) {
        WorkCompletion[] wc = WorkCompletion.array(1);
        long end = System.nanoTime() + ms * 1_000_000;
        for (int spins = 0; System.nanoTime() < end; spins++) {
            if (cq.poll(wc) == 1) return wc[0];
            // spin briefly, then nap: a test that spins flat out starves the kernel's loopback delivery on small
            // machines
            if (spins < 200) Thread.onSpinWait();
            else java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
        fail("no completion within " + ms + " ms");
        return null;
    }

    static WorkCompletion poll(CompletionQueue cq) {
        return poll(cq, 5000);
    }

    /** Asserts no completion arrives within {@code ms}. */
    static void assertNoCompletion(CompletionQueue cq, long ms) throws InterruptedException {
        Thread.sleep(ms);
        WorkCompletion[] wc = WorkCompletion.array(1);
        int n = cq.poll(wc);
        assertEquals(0, n, () -> "unexpected completion " + wc[0]);
    }

    static void fill(MemorySegment s, long n, int seed) {
        for (long i = 0; i < n; i++) s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
    }

    static void assertFilled(MemorySegment s, long off, long n, int seed) {
        for (long i = 0; i < n; i++) {
            byte want = (byte) (i * 31 + seed);
            byte got = s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, off + i);
            if (want != got) fail("byte " + i + " of " + n + ": expected " + want + " got " + got);
        }
    }

    private Fixture() {}
}
