package dev.jrdma.bench;

import dev.jrdma.bench.PerftestWire.Dest;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Completions;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.Socket;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * perftest's RC tests on any jrdma device, speaking perftest's out-of-band protocol, so either end may be perftest.
 *
 * <p>Buffer layout as perftest's: per QP a local area at {@code i*B} (what we send / where reads and atomics land)
 * and the area the peer targets at {@code (numQp+i)*B}, {@code B = max(size, page size)}; the second area's address
 * is what the key message advertises.
 *
 * <p>perftest's modes: {@code -c UD} (send tests on UD QPs: Q_Key 0x11111111, an address handle per peer QP, receives
 * 40 bytes longer for the GRH, messages up to the MTU), {@code -e} (completions awaited on a completion channel),
 * {@code -I} (sends and writes up to that size posted inline). None of them changes the out-of-band exchange.
 */
public final class RdmaBench implements AutoCloseable {
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final int CYCLE_BUFFER = 4096, CACHE_LINE = 64, RX_DEPTH = 512, CQ_MOD = 100;
    /** perftest's Q_Key of UD QPs (DEF_QKEY) and the GRH room a UD receive needs in front of the data (UD_ADDITION). */
    static final int UD_QKEY = 0x11111111, UD_GRH = 40;
    /** perftest's receive depth of a UD bandwidth server: the iterations, at most UC_MAX_RX (UD drops what finds no receive). */
    private static final int UD_MAX_RX = 16000;
    /** Warm-up iterations by default (at most -n): enough for C2 to compile the loop and the verbs it calls. */
    private static final long DEFAULT_WARMUP = 20_000;
    /** The longest a warm-up waits without progress: the peer waits for us meanwhile. */
    private static final long WARMUP_STALL_NS = 2_000_000_000L;

    private final PerfOptions o;
    private final PerfTest test;
    private final PrintStream out;
    private final Progress progress;
    private final long stallNs;
    private boolean warmingUp;

    private Context ctx;
    private ProtectionDomain pd;
    private Arena arena;
    private MemorySegment buf;
    private MemoryRegion mr;
    private CompletionQueue sendCq, recvCq;
    private QueuePair[] qps;
    private long areaSize;
    private int gidIndex = -1;
    private Gid gid;
    private PortAttr port;
    private int outReads = 1;
    private Dest[] my, rem;
    private Mtu mtu;
    private String deviceName;
    private final boolean ud;
    /** Receives a send test keeps posted per QP. */
    private int rxDepth = RX_DEPTH;
    private final int inline;
    private CompletionChannel channel;
    /** -R: the QPs' rdma_cm connections. */
    private CmQps cm;
    /** UD: the address handle, QPN and Q_Key each QP sends to (set when the QPs connect). */
    private AddressHandle[] ahs;
    private int[] remQpn, remQkey;
    private final WorkCompletion[] wcs = WorkCompletion.array(64);
    /** The timed loops' completions, read in place (the fast path; wcs serves the set-up). */
    private final Completions done = new Completions(64);

    private RdmaBench(PerfOptions o, PrintStream out) {
        this.o = o;
        this.test = o.test;
        this.out = out;
        this.progress = Progress.forTerminal(out, o.quiet);
        this.stallNs = o.timeoutSec * 1_000_000_000L;
        this.ud = o.connection == PerfOptions.Connection.UD;
        this.inline = o.effectiveInline();
    }

    /**
     * Runs one test, server or client as the options say; prints perftest's report to {@code out}.
     *
     * @param o   the options (a host: client; none: server), perftest's flags
     * @param out where the report goes
     * @return what was measured
     * @throws IllegalArgumentException when the test is a TCP test
     * @throws BenchException           when the options do not fit the test, or the peer cannot be reached, fails or
     *                                  stalls beyond the timeout
     * @throws dev.jrdma.verbs.VerbsException when the device refuses a resource or a work request
     */
    public static RunResult run(PerfOptions o, PrintStream out) {
        if (o.test.isTcp()) throw new IllegalArgumentException(o.test.id() + " is a TCP test");
        if (o.durationSec > 0 && (o.test == PerfTest.SEND_LAT || o.test == PerfTest.WRITE_LAT))
            throw new BenchException("-D is supported by the bandwidth tests, read_lat and atomic_lat; use -n for " + o.test.id());
        try (RdmaBench b = new RdmaBench(o, out)) {
            if (o.rdmaCm) return b.runOverRdmaCm();
            b.open(o.device);
            if (o.isServer()) {
                out.println("\n************************************\n* Waiting for client to connect... *\n************************************");
                out.flush();
            }
            Socket s = o.isServer() ? PerftestWire.accept(o.tcpPort, o.acceptTimeoutSec) : PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec);
            try (PerftestWire w = o.isServer() ? PerftestWire.server(s, o.timeoutSec) : PerftestWire.client(s, o.timeoutSec)) {
                return b.run(w);
            }
        }
    }

    /**
     * -R: the exchange runs over an rdma_cm connection on -p (which also picks the device: the one rdma_cm reaches
     * the peer through), and the QPs connect through rdma_cm ({@link CmQps}), as perftest's -R. The software device
     * has no rdma_cm: -R on it is refused with a message (its TCP exchange interoperates with perftest).
     */
    private RunResult runOverRdmaCm() {
        CmLink.checkAvailable(o.device);
        CmLink link = o.isServer() ? CmLink.accept(o.tcpPort, o.acceptTimeoutSec, () -> {
            out.println("\n************************************\n* Waiting for client to connect... *\n************************************");
            out.println(" (rdma_cm: listening on port " + o.tcpPort + ")");
            out.flush();
        }) : CmLink.connect(o.host, o.tcpPort, o.timeoutSec);
        try (PerftestWire w = PerftestWire.over(link, !o.isServer(), o.timeoutSec)) {
            if (o.device != null && !o.device.equals(link.deviceName()))
                throw new BenchException("-d " + o.device + ", but rdma_cm reaches the peer through " + link.deviceName() + " (drop -d, or use that device's address)");
            open(link.deviceName());
            return run(w);
        }
    }

    /**
     * perftest's create_rdma_cm_connection, after the MTU exchange: a handshake, the rdma_cm connections of the QPs
     * (the server listens before that handshake, so the client never finds the port closed), a handshake.
     */
    private void connectThroughRdmaCm(PerftestWire w) {
        int rr = test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC ? outReads : 0;
        boolean server = !w.isClient();
        if (server) cm = CmQps.listen(o.tcpPort, qps, ud, rr, o.timeoutSec);
        w.handshake(my[0]);
        if (server) {
            cm.accept(deviceName, mr, localOffset(0), ud && test.latency, recvCq, wcs);
        } else {
            cm = CmQps.connect(o.host, o.tcpPort, qps, ud, rr, o.timeoutSec, deviceName);
            if (ud && test.latency) cm.announceUdQpNumbers(mr, localOffset(0), sendCq, wcs);
        }
        if (ud) {
            for (int i = 0; i < o.numQp; i++) {
                CmQps.UdPeer p = cm.udPeer(i);
                if (p != null) useAddressHandle(i, p.ah(), p.qpn(), p.qkey());
            }
        }
        w.handshake(my[0]);
    }

    // ------------------------------------------------------------------ resources

    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by close()
    private void open(String device) {
        Device dev = device == null ? Verbs.defaultDevice() : Verbs.device(device);
        deviceName = dev.name();
        ctx = dev.open();
        DeviceAttr da = ctx.queryDevice();
        if (o.ibPort < 1 || o.ibPort > da.physPortCnt())
            throw new BenchException("device " + deviceName + " has " + da.physPortCnt() + " port(s); -i " + o.ibPort + " does not exist");
        port = ctx.queryPort(o.ibPort);
        boolean needGid = o.gidIndex >= 0 || port.linkLayer() == LinkLayer.ETHERNET;
        if (needGid) {
            gidIndex = o.gidIndex >= 0 ? o.gidIndex : bestGidIndex();
            gid = ctx.queryGid(o.ibPort, gidIndex);
            if (gid.isZero()) throw new BenchException("GID index " + gidIndex + " of " + deviceName + " port " + o.ibPort
                    + " is empty: pick one that 'jrdma devinfo -v -d " + deviceName + "' lists (-x N)");
        }
        if (test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC)
            outReads = Math.max(1, Math.min(16, da.maxQpRdAtom()));
        mtu = port.activeMtu();
        int maxSize = 0;
        for (int s : o.runSizes()) maxSize = Math.max(maxSize, s);
        // a UD message is at most the MTU (4096 at most), and its receive starts 40 bytes early for the GRH
        areaSize = ud ? Math.max(Math.min(maxSize, mtu.bytes) + CACHE_LINE, CYCLE_BUFFER) : Math.max(maxSize, CYCLE_BUFFER);
        arena = Arena.ofShared();
        buf = arena.allocate(2L * o.numQp * areaSize, CYCLE_BUFFER);
        pd = ctx.allocPd();
        mr = pd.registerMemory(buf, EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC));
        int tx = Math.min(o.effectiveTxDepth(), Math.max(1, da.maxQpWr()));
        int sendWr = test.verb == PerfTest.Verb.SEND && test.latency ? Math.min(CQ_MOD, Math.max(1, da.maxQpWr())) : tx;
        rxDepth = ud && !test.latency ? (int) Math.min(o.effectiveIters(), UD_MAX_RX) : RX_DEPTH;
        int recvWr = test.verb == PerfTest.Verb.SEND ? Math.min(rxDepth, Math.max(1, da.maxQpWr())) : 1;
        if (o.events) channel = ctx.createCompletionChannel();
        sendCq = ctx.createCq(Math.max(16, sendWr * o.numQp + 16), channel);
        recvCq = ctx.createCq(Math.max(16, recvWr * o.numQp + 16), channel);
        qps = new QueuePair[o.numQp];
        my = new Dest[o.numQp];
        ahs = new AddressHandle[o.numQp];
        remQpn = new int[o.numQp];
        remQkey = new int[o.numQp];
        SecureRandom rnd = new SecureRandom();
        QpInitAttr attr = QpInitAttr.builder(sendCq).type(ud ? QpType.UD : QpType.RC).recvCq(recvCq)
                .maxSendWr(sendWr).maxRecvWr(recvWr).maxInlineData(inline).build();
        for (int i = 0; i < o.numQp; i++) {
            qps[i] = createQp(attr);
            initQp(qps[i]);
            my[i] = new Dest(port.lid(), outReads, qps[i].qpNum(), rnd.nextInt() & 0xffffff, mr.rkey(),
                    mr.address() + (o.numQp + i) * areaSize, gid, 0);
        }
    }

    private QueuePair createQp(QpInitAttr attr) {
        try {
            return pd.createQueuePair(attr);
        } catch (VerbsException e) {
            if (inline == 0) throw e;
            throw new BenchException("device " + deviceName + " cannot make a QP with " + inline + " bytes of inline data (-I "
                    + o.inlineSize + "): " + e.getMessage() + "; try a smaller -I", e);
        }
    }

    /** RESET to INIT: an RC QP gets every access right the tests need, a UD QP perftest's Q_Key. */
    /**
     * The message sizes of the run: -s/-a, and on UD at most the MTU (perftest: -a stops at the MTU, a larger -s
     * or the 65536 default becomes the MTU).
     */
    private List<Integer> sizes() {
        List<Integer> all = o.runSizes();
        if (!ud) return all;
        List<Integer> fit = new ArrayList<>();
        for (int s : all) if (s <= mtu.bytes) fit.add(s);
        if (fit.isEmpty() || !o.all) return List.of(Math.min(all.getFirst(), mtu.bytes));
        return fit;
    }

    private void initQp(QueuePair q) {
        QpAttr a = new QpAttr().state(QpState.INIT).pkeyIndex(0).port(o.ibPort);
        if (ud) a.qkey(UD_QKEY);
        else a.access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        q.modify(a);
    }

    /** perftest's choice without -x on RoCE: a RoCE v2 GID (IPv4-mapped first), else index 0; the soft device's own GID. */
    private int bestGidIndex() {
        try {
            return ctx.defaultGidIndex(o.ibPort);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    private void connectQp(int i) {
        Dest r = rem[i];
        AhAttr ah = new AhAttr().dlid(r.lid()).portNum(o.ibPort);
        if (gid != null) {
            if (r.gid() == null || r.gid().isZero()) throw new BenchException("the peer sent no GID; use -x on both sides");
            ah.global(r.gid(), gidIndex).hopLimit(0xFF);
        }
        if (ud) {
            // a UD QP has no peer: RTR and RTS are state changes; the sends name the peer through an address handle
            // (perftest makes one on both sides of a latency test and on the client of a bandwidth test)
            qps[i].modify(new QpAttr().state(QpState.RTR));
            qps[i].modify(new QpAttr().state(QpState.RTS).sqPsn(my[i].psn()));
            if (test.latency || !o.isServer() || warmingUp) useAddressHandle(i, pd.createAddressHandle(ah), r.qpn(), UD_QKEY);
            return;
        }
        qps[i].modify(new QpAttr().state(QpState.RTR).ah(ah).pathMtu(mtu).destQpNum(r.qpn()).rqPsn(r.psn())
                .maxDestRdAtomic(outReads).minRnrTimer(12));
        qps[i].modify(new QpAttr().state(QpState.RTS).timeout(o.qpTimeout).retryCnt(7).rnrRetry(7).sqPsn(my[i].psn())
                .maxRdAtomic(Math.max(1, Math.min(outReads, Math.max(1, r.outReads())))));
    }

    /** UD: QP {@code i} sends to {@code qpn}/{@code qkey} through {@code ah} (the one it had before is destroyed). */
    private void useAddressHandle(int i, AddressHandle ah, int qpn, int qkey) {
        if (ahs[i] != null) ahs[i].close();
        ahs[i] = ah;
        remQpn[i] = qpn;
        remQkey[i] = qkey;
    }

    /**
     * Runs the test's own loop on this side's QPs connected to themselves before the exchange starts, so that the
     * JIT has compiled the loop and the verbs under it before anything is timed (a loop that starts interpreted is
     * many times slower until C2 is done: 3,000 iterations measure the compiler). Then the QPs go back to RESET and
     * INIT, the CQs are drained and the buffer is cleared, so the measured run starts as a fresh one.
     * {@code -Djrdma.perf.warmup=N} sets the iterations (default min(-n, 20000); 0 = none). Passive sides skip it.
     */
    private void warmUp() {
        long n = Long.getLong("jrdma.perf.warmup", Math.min(o.effectiveIters(), DEFAULT_WARMUP));
        boolean server = o.isServer();
        boolean active = switch (test) {
            case WRITE_LAT, SEND_LAT -> true;
            case WRITE_BW, READ_BW, ATOMIC_BW -> false; // their client warms up on the connection (warmUpWithPeer)
            default -> !server; // the read/atomic latency servers and the bandwidth servers do not run the loop
        };
        if (n <= 0 || !active) return;
        int size = sizes().getFirst();
        rem = new Dest[o.numQp];
        warmingUp = true;
        long t0 = System.nanoTime();
        try {
            for (int i = 0; i < o.numQp; i++) {
                rem[i] = my[i];
                connectQp(i);
            }
            switch (test) {
                case WRITE_LAT -> writeLat(size, true, n);
                case SEND_LAT -> {
                    postInitialRecvs(size, n);
                    sendLat(size, false, n);
                }
                case READ_LAT, ATOMIC_LAT -> readAtomicLat(size, n, 0);
                case SEND_BW -> {
                    postInitialRecvs(size, n);
                    bwClient(size, Math.min(n, postedRecvs), 0); // no receiver reposts: at most the receives posted
                }
                default -> bwClient(size, n, 0);
            }
            awaitJitQuiet();
            if (!o.quiet) out.printf(" Warm-up         : %d iterations, %.1f ms%n", n, (System.nanoTime() - t0) / 1e6);
        } catch (RuntimeException e) {
            out.println(" Warm-up         : skipped (" + e.getMessage() + ")");
        } finally {
            warmingUp = false;
            rem = null;
            postedRecvs = 0;
            for (int i = 0; i < o.numQp; i++) {
                qps[i].modify(new QpAttr().state(QpState.RESET));
                initQp(qps[i]);
                if (ahs[i] != null) ahs[i].close();
                ahs[i] = null;
            }
            while (sendCq.poll(wcs, wcs.length) > 0) { } // a QP reset leaves its completions in the CQ
            while (recvCq.poll(wcs, wcs.length) > 0) { }
            buf.fill((byte) 0);
        }
    }

    /**
     * The client of write_bw, read_bw and atomic_bw runs its loop against the server before the timed run, as
     * perftest's {@code --perform_warm_up} does: the server is passive (it only waits for the closing handshake), so
     * the extra requests change nothing there but let the server's JVM compile its receive path too, which the warm-up
     * on QPs connected to themselves could not (the figures: jrdma-bench/README.md, "Warm-ups"). Runs rounds of
     * min(-n, 20000) requests for {@link PerfOptions#BW_WARMUP_NS}, or {@code -Djrdma.perf.warmup=N} requests once
     * (0 = none), then waits for this JVM's JIT to settle, which also leaves the server's compiler a quiet moment to
     * finish.
     */
    private void warmUpWithPeer(int size) {
        Long asked = Long.getLong("jrdma.perf.warmup");
        if (asked != null && asked <= 0) return;
        long round = asked != null ? asked : Math.min(o.effectiveIters(), DEFAULT_WARMUP);
        long t0 = System.nanoTime(), n = 0;
        try { // a failure here is the run's failure: the QPs are the ones the timed run uses
            do {
                bwClient(size, round, 0);
                n += round;
            } while (asked == null && System.nanoTime() - t0 < PerfOptions.BW_WARMUP_NS);
            awaitJitQuiet();
        } finally {
            progress.clear();
        }
        if (!o.quiet) out.printf(" Warm-up         : %d iterations with the peer, %.1f ms%n", n * o.numQp, (System.nanoTime() - t0) / 1e6);
    }

    /**
     * Waits until the JIT has nothing in its queues and nothing in progress (read with the {@code Compiler.queue}
     * diagnostic command), twice 100 ms apart, so that the compilations the warm-up queued finish before the timed loop
     * instead of during it; at most a quarter of --timeout (at least 2 s, at most 30 s): the peer waits meanwhile. Under
     * emulation (the Soft-RoCE guest) a C2 compilation takes seconds, and a timed loop that starts in the interpreter
     * or in C1's code posts through an FFM downcall that is not compiled yet. The total compilation time, which the
     * wait watched before, changes only when a compilation ends: a long one in progress looked quiet. Where the queue
     * cannot be read: until 100 ms pass without a finished compilation.
     */
    private void awaitJitQuiet() {
        long deadline = System.nanoTime() + Math.clamp(o.timeoutSec * 250L, 2_000L, 30_000L) * 1_000_000L;
        var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        long last = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        int quiet = 0;
        while (System.nanoTime() < deadline) {
            String queue = compilerQueue();
            if (queue != null) {
                quiet = queue.contains("::") ? 0 : quiet + 1; // each compile task names its method as Class::method
                if (quiet >= 2) return;
            } else if (last >= 0) {
                long now = jit.getTotalCompilationTime();
                if (now == last && quiet++ > 0) return;
                last = now;
            } else {
                return;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** {@code jcmd PID Compiler.queue} from inside: the compilations in progress and queued, or null where unavailable. */
    private static String compilerQueue() {
        try {
            return (String) java.lang.management.ManagementFactory.getPlatformMBeanServer().invoke(
                    new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerQueue",
                    new Object[] {null}, new String[] {String[].class.getName()});
        } catch (Exception | LinkageError e) {
            return null;
        }
    }

    @Override
    public void close() {
        progress.clear();
        if (ctx != null && Boolean.getBoolean("jrdma.perf.counters")) printCounters();
        if (cm != null) cm.close();
        if (ctx != null) ctx.close();   // closes PD, MR, QPs and CQs first
        if (arena != null) arena.close();
    }

    /** -Djrdma.perf.counters=true: the device's non-zero counters at the end (interop checks read drops and ICRC errors). */
    private void printCounters() {
        try {
            StringBuilder sb = new StringBuilder("counters of " + deviceName + ":");
            ctx.counters().forEach((k, v) -> { if (v != 0) sb.append(' ').append(k).append('=').append(v); });
            System.err.println(sb);
        } catch (RuntimeException e) {
            System.err.println("counters of " + deviceName + ": unavailable (" + e.getMessage() + ")");
        }
    }

    // ------------------------------------------------------------------ the exchange

    private RunResult run(PerftestWire w) {
        warmUp();
        w.versions();
        w.sysData(CYCLE_BUFFER, CACHE_LINE);
        mtu = Mtu.of(w.mtu(mtu.code));
        if (ud && !o.all && o.effectiveSize() > mtu.bytes)
            out.printf(" UD message size : %d bytes is above the UD MTU, %d-byte messages are sent (as perftest)%n", o.effectiveSize(), mtu.bytes);
        rem = new Dest[o.numQp];
        boolean server = !w.isClient();
        if (o.rdmaCm) connectThroughRdmaCm(w);
        printHeader();
        List<LatencyResult> lat = new ArrayList<>();
        List<BwResult> bw = new ArrayList<>();
        BwResult remote = null;
        CpuMeter cpu = new CpuMeter();
        switch (test) {
            case WRITE_LAT, READ_LAT, ATOMIC_LAT, WRITE_BW, READ_BW, ATOMIC_BW -> {
                if (test.latency) w.handshake(my[0]);
                for (int i = 0; i < o.numQp; i++) rem[i] = w.handshake(my[i]);
                if (!o.rdmaCm) for (int i = 0; i < o.numQp; i++) connectQp(i);
                for (int i = 0; i < o.numQp; i++) w.handshake(my[i]);
                printAddresses();
                w.handshake(my[0]);
                if (test.latency) {
                    if (server && test != PerfTest.WRITE_LAT) {
                        // the client reads/atomics our memory; we wait for its close handshake
                        out.println(" (passive side: the client measures " + test.id() + ")");
                        cpu.start();
                        waitForPeer(w, () -> w.closeConnection(my[0]));
                        cpu.stop();
                        return new RunResult(test, deviceName, lat, bw, null, cpu.cpuNs(), cpu.wallNs());
                    }
                    out.println(Report.latHeader());
                    cpu.start();
                    for (int size : sizes()) {
                        LatencyResult r = test == PerfTest.WRITE_LAT ? writeLat(size, server, o.effectiveIters()) : readAtomicLat(size, o.effectiveIters(), o.durationSec);
                        progress.clear();
                        out.println(Report.latLine(r));
                        lat.add(r);
                    }
                    cpu.stop();
                    out.println(Report.RESULT_LINE);
                    // perftest's ib_write_lat ends without the closing handshake: it just exits
                    if (test == PerfTest.WRITE_LAT) w.close(); else w.closeConnection(my[0]);
                } else if (server) {
                    out.println(" (passive side: the client measures; its report follows)");
                    cpu.start();
                    waitForPeer(w, () -> w.handshake(my[0]));
                    cpu.stop();
                    remote = w.bwReports(new BwResult(0, 0, 0, 0, 0));
                    out.println(Report.bwHeader(o.reportGbits));
                    out.println(Report.bwLine(remote, o.reportGbits));
                    out.println(Report.RESULT_LINE);
                    w.closeConnection(my[0]);
                } else {
                    warmUpWithPeer(sizes().getFirst());
                    out.println(Report.bwHeader(o.reportGbits));
                    cpu.start();
                    BwResult last = null;
                    for (int size : sizes()) {
                        last = bwClient(size, o.effectiveIters(), o.durationSec);
                        progress.clear();
                        out.println(Report.bwLine(last, o.reportGbits));
                        bw.add(last);
                    }
                    cpu.stop();
                    out.println(Report.RESULT_LINE);
                    w.handshake(my[0]);
                    w.bwReports(last);
                    w.closeConnection(my[0]);
                }
            }
            case SEND_LAT, SEND_BW -> {
                for (int i = 0; i < o.numQp; i++) rem[i] = w.handshake(my[i]);
                if (!o.rdmaCm) for (int i = 0; i < o.numQp; i++) connectQp(i);
                w.handshake(my[0]);
                for (int i = 0; i < o.numQp; i++) w.handshake(my[i]);
                printAddresses();
                out.println(test.latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
                long cpuNs = 0, wallNs = 0;
                List<Integer> sizes = sizes();
                for (int size : sizes) {
                    boolean receiver = test.latency || server;
                    if (receiver) postInitialRecvs(size, test.latency || o.durationSec == 0 ? o.effectiveIters() : Long.MAX_VALUE);
                    w.handshake(my[0]);
                    cpu.start();
                    if (test.latency) {
                        LatencyResult r = sendLat(size, server, o.effectiveIters());
                        progress.clear();
                        out.println(Report.latLine(r));
                        lat.add(r);
                    } else {
                        BwResult r = server ? sendBwServer(size) : bwClient(size, o.effectiveIters(), o.durationSec);
                        progress.clear();
                        out.println(Report.bwLine(r, o.reportGbits));
                        bw.add(r);
                    }
                    cpu.stop();
                    cpuNs += cpu.cpuNs();
                    wallNs += cpu.wallNs();
                    if (!test.latency && o.all) w.handshake(my[0]);
                }
                out.println(Report.RESULT_LINE);
                w.closeConnection(my[0]);
                return new RunResult(test, deviceName, lat, bw, null, cpuNs, wallNs);
            }
            default -> throw new IllegalStateException(test.toString());
        }
        return new RunResult(test, deviceName, lat, bw, remote, cpu.cpuNs(), cpu.wallNs());
    }

    /** A wait on the peer's next message while it runs: as long as the run may take, but not for ever. */
    private void waitForPeer(PerftestWire w, Runnable r) {
        long runMs = o.durationSec > 0 ? o.durationSec * 1000L : 0;
        // the peer's run: its duration, or its iterations; allow generously, plus the stall timeout
        w.readTimeout((int) Math.min(Integer.MAX_VALUE, runMs + 600_000L + stallNs / 1_000_000));
        try {
            r.run();
        } finally {
            w.restoreTimeout();
        }
    }

    private void printHeader() {
        out.println(Report.RESULT_LINE);
        out.println("                    " + test.title());
        out.printf(" Device         : %s%n", deviceName);
        if (o.events) out.printf(" Test with events. Using %s's completion channel%n", deviceName);
        out.printf(" Number of qps   : %d\t\tTransport type : IB%n", o.numQp);
        out.printf(" Connection type : %s\t\tUsing SRQ      : OFF%n", o.connection);
        out.printf(" TX depth        : %d%n", o.effectiveTxDepth());
        out.printf(" Mtu             : %d[B]%n", mtu.bytes);
        out.printf(" Link type       : %s%n", port.linkLayer().ibvName());
        if (gid != null) out.printf(" GID index       : %d%n", gidIndex);
        if (test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC) out.printf(" Outstand reads  : %d%n", outReads);
        else out.printf(" Max inline data : %d[B]%n", inline);
        out.printf(" rdma_cm QPs\t : %s%n", o.rdmaCm ? "ON" : "OFF");
        out.printf(" Data ex. method : %s%n", o.rdmaCm ? "rdma_cm" : "Ethernet");
        if (o.durationSec > 0) out.printf(" Duration        : %d[s]%n", o.durationSec);
        else out.printf(" Iterations      : %d%n", o.effectiveIters());
        out.println(Report.RESULT_LINE);
    }

    private void printAddresses() {
        for (int i = 0; i < o.numQp; i++) printAddress("local", my[i]);
        for (int i = 0; i < o.numQp; i++) printAddress("remote", rem[i]);
    }

    private void printAddress(String side, Dest d) {
        out.printf(" %s address: LID %#06x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x%n", side, d.lid(), d.qpn(), d.psn(), d.rkey(), d.vaddr());
        if (d.gid() != null) {
            StringBuilder sb = new StringBuilder(" GID: ");
            for (int i = 0; i < 16; i++) sb.append(i > 0 ? ":" : "").append(String.format("%02d", d.gid().get(i) & 0xff));
            out.println(sb);
        }
    }

    // ------------------------------------------------------------------ polling

    private final class Stall {
        private long lastProgress = System.nanoTime();
        private int spins;
        private final String what;
        private final long limitNs = warmingUp ? Math.min(stallNs, WARMUP_STALL_NS) : stallNs;

        Stall(String what) {
            this.what = what;
        }

        void progress() {
            lastProgress = System.nanoTime();
        }

        /**
         * Nothing was in the CQ(s): spin (the default), or with -e wait on the completion channel. The first call
         * arms both CQs and returns, so the caller polls once more before blocking (a completion that came between
         * its poll and the arming raises no event); the next one blocks until an event (acknowledged at once) or the
         * stall limit.
         */
        void idle() {
            if (channel == null) {
                spin();
                return;
            }
            if (!armed) {
                sendCq.requestNotify(false);
                if (recvCq != sendCq) recvCq.requestNotify(false);
                armed = true;
                return;
            }
            long left = limitNs - (System.nanoTime() - lastProgress);
            if (left > 0) {
                CompletionQueue cq = channel.awaitEvent(Duration.ofNanos(left));
                if (cq != null) cq.ackEvents(1);
            }
            armed = false;
            if (System.nanoTime() - lastProgress > limitNs) stalled();
        }

        private boolean armed;

        void spin() {
            // spin as perftest does, on every device: a software device makes progress on the polling thread itself
            Thread.onSpinWait();
            if ((++spins & 0x3ff) == 0) {
                long now = System.nanoTime();
                if (now - lastProgress > limitNs) stalled();
            }
        }

        private void stalled() {
            throw new BenchException("no progress for " + limitNs / 1_000_000_000L + " s while waiting for " + what
                    + ": the peer stopped, or its packets do not arrive (same -x/GID type on both sides? UDP 4791 open?"
                    + (ud ? " UD drops a message that finds no receive posted" : "") + ")");
        }
    }

    /** Completion {@code k} of the last poll into {@link #done}: success, or the run stops with its status. */
    private void check(int k) {
        if (!done.isSuccess(k)) throw new BenchException(test.id() + ": " + done.explain(k));
    }

    private long localOffset(int qp) {
        return qp * areaSize;
    }

    private long remoteAreaOffset(int qp) {
        return (o.numQp + qp) * areaSize;
    }

    // ------------------------------------------------------------------ latency

    private long[] timestamps(long iters) {
        if (iters > 50_000_000L) throw new BenchException("-n " + iters + " is too many iterations to time each one (at most 50000000); use -D");
        return new long[(int) iters];
    }

    /** run_iter_lat_write: ping-pong of RDMA writes; each side spins on the last byte of its area; the server writes first. */
    private LatencyResult writeLat(int size, boolean server, long iters) {
        long[] tposted = timestamps(iters);
        QueuePair qp = qps[0];
        long post = localOffset(0) + size - 1, poll = remoteAreaOffset(0) + size - 1;
        PreparedSend wr = qp.prepareSend(dataRequest(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).buffer(mr, localOffset(0), size)
                .remote(rem[0].vaddr(), rem[0].rkey()).signaled(true).wrId(1), 0, size));
        long scnt = 0, rcnt = 0, ccnt = 0;
        Stall stall = new Stall("the peer's RDMA write (" + test.id() + ", " + size + " bytes)");
        while (scnt < iters || ccnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && server)) {
                rcnt++;
                byte want = (byte) rcnt;
                // poll(wcs, 0) takes no completion: on a software device it handles the packets that arrived (the peer's
                // WRITE) on this thread, as UCX's worker progress; on hardware it is a no-op
                while ((byte) BYTE.getVolatile(buf, poll) != want) {
                    sendCq.poll(wcs, 0);
                    stall.spin();
                }
                stall.progress();
            }
            if (scnt < iters) {
                tposted[(int) scnt] = System.nanoTime();
                BYTE.setVolatile(buf, post, (byte) ++scnt);
                wr.post();
            }
            if (ccnt < iters) {
                int n;
                while ((n = sendCq.poll(done, 1)) == 0) stall.idle();
                check(0);
                ccnt += n;
            }
            if ((scnt & 0x3ff) == 0 && progress.enabled()) progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, scnt, iters));
        }
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }

    /** run_iter_lat: one RDMA read or atomic at a time; each is a full round trip. */
    private LatencyResult readAtomicLat(int size, long iters, int durationSec) {
        SendWorkRequest request = new SendWorkRequest().signaled(true).wrId(1);
        if (test.verb == PerfTest.Verb.READ) request.opcode(WrOpcode.RDMA_READ).buffer(mr, localOffset(0), size).remote(rem[0].vaddr(), rem[0].rkey());
        else request.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).buffer(mr, localOffset(0), 8).atomic(rem[0].vaddr(), rem[0].rkey(), 1, 0);
        PreparedSend wr = qps[0].prepareSend(request);
        Stall stall = new Stall(test.id() + " completion");
        if (durationSec > 0) {
            long end = System.nanoTime() + durationSec * 1_000_000_000L;
            long[] d = new long[1 << 16];
            int n = 0;
            long count = 0;
            long prev = System.nanoTime();
            while (prev < end) {
                wr.post();
                while (sendCq.poll(done, 1) == 0) stall.idle();
                check(0);
                stall.progress();
                long now = System.nanoTime();
                if (n == d.length && d.length < 50_000_000) d = java.util.Arrays.copyOf(d, d.length * 2);
                if (n < d.length) d[n++] = now - prev;
                prev = now;
                count++;
                if ((count & 0x3ff) == 0 && progress.enabled()) progress.update(String.format(" %s %d bytes: %d iterations", test.id(), size, count));
            }
            return LatencyResult.fromDeltas(size, count, d, n, test.rttFactor());
        }
        long[] tposted = timestamps(iters);
        for (long i = 0; i < iters; i++) {
            tposted[(int) i] = System.nanoTime();
            wr.post();
            while (sendCq.poll(done, 1) == 0) stall.idle();
            check(0);
            stall.progress();
            if ((i & 0x3ff) == 0 && progress.enabled()) progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, i, iters));
        }
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }

    private int postedRecvs;

    /** Send and write requests: on UD addressed to the peer QP, and posted inline up to -I bytes. */
    private SendWorkRequest dataRequest(SendWorkRequest w, int q, int size) {
        if (ud) w.ud(ahs[q], remQpn[q], remQkey[q]);
        if (size <= inline) w.flag(SendFlag.INLINE, true);
        return w;
    }

    /** A receive of QP {@code q}: in the area the peer targets; on UD 40 bytes earlier and longer, for the GRH. */
    private RecvWorkRequest recvRequest(int q, int size) {
        return new RecvWorkRequest().wrId(q).buffer(mr, remoteAreaOffset(q) + (ud ? CACHE_LINE - UD_GRH : 0), size + (ud ? UD_GRH : 0));
    }

    /** Posts the receives a send test starts with: {@code need} (the iterations), at most the receive queue's depth. */
    private void postInitialRecvs(int size, long need) {
        int per = (int) Math.min(qps[0].cap().maxRecvWr() > 0 ? qps[0].cap().maxRecvWr() : rxDepth, need);
        per = Math.min(per, rxDepth);
        for (int q = 0; q < o.numQp; q++) {
            RecvWorkRequest rwr = recvRequest(q, size);
            for (int k = 0; k < per; k++) qps[q].postRecv(rwr);
        }
        postedRecvs = per;
    }

    /** run_iter_lat_send: ping-pong of sends; the client sends first. */
    private LatencyResult sendLat(int size, boolean server, long iters) {
        long[] tposted = timestamps(iters);
        QueuePair qp = qps[0];
        PreparedSend wr = qp.prepareSend(dataRequest(new SendWorkRequest().opcode(WrOpcode.SEND).buffer(mr, localOffset(0), size).signaled(true).wrId(1), 0, size));
        RecvWorkRequest rwr = recvRequest(0, size);
        int maxOutstanding = Math.max(1, qp.cap().maxSendWr());
        long scnt = 0, rcnt = 0, ccnt = 0, posted = postedRecvs;
        Stall stall = new Stall("the peer's send (" + test.id() + ", " + size + " bytes)");
        while (scnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && !server)) {
                int n;
                while (true) {
                    n = recvCq.poll(done, 1);
                    if (n > 0) break;
                    // keep the send queue drained while we wait
                    int c = sendCq.poll(done, done.capacity());
                    for (int k = 0; k < c; k++) check(k);
                    ccnt += c;
                    if (c == 0) stall.idle();
                }
                check(0);
                stall.progress();
                rcnt++;
                if (posted < iters) {
                    qp.postRecv(rwr);
                    posted++;
                }
            }
            if (scnt < iters) {
                while (scnt - ccnt >= maxOutstanding) {
                    int c = sendCq.poll(done, done.capacity());
                    for (int k = 0; k < c; k++) check(k);
                    ccnt += c;
                    if (c == 0) stall.idle();
                }
                tposted[(int) scnt] = System.nanoTime();
                scnt++;
                wr.post();
            }
            if ((scnt & 0x3ff) == 0 && progress.enabled()) progress.update(String.format(" %s %d bytes: %d/%d", test.id(), size, scnt, iters));
        }
        Stall drain = new Stall("the last send completions");
        while (ccnt < scnt) {
            int c = sendCq.poll(done, done.capacity());
            for (int k = 0; k < c; k++) check(k);
            ccnt += c;
            if (c == 0) drain.idle(); else drain.progress();
        }
        return LatencyResult.fromPostTimes(size, tposted, (int) iters, test.rttFactor());
    }

    // ------------------------------------------------------------------ bandwidth

    /** run_iter_bw: keep tx-depth operations outstanding per QP; each QP does -n operations (or runs for -D seconds). */
    private BwResult bwClient(int size, long iters, int durationSec) {
        boolean timed = durationSec > 0;
        long itersPerQp = timed ? Long.MAX_VALUE : iters;
        long total = timed ? Long.MAX_VALUE : itersPerQp * o.numQp;
        boolean record = !timed && total <= 10_000_000L;
        long[] tposted = record ? new long[(int) total] : null, tcompleted = record ? new long[(int) total] : null;
        int stampEvery = BwResult.postStep(total); // the post times the peak reads, no more (a clock read can be a system call)
        int tx = qps[0].cap().maxSendWr() > 0 ? Math.min(o.effectiveTxDepth(), qps[0].cap().maxSendWr()) : o.effectiveTxDepth();
        // perftest's CQ moderation: only every cq_mod-th request of a QP (and its last) is signalled, and that
        // completion retires the unsignalled ones before it; with -D every request is signalled (the run stops anywhere)
        int mod = timed ? 1 : Math.max(1, Math.min(CQ_MOD, tx));
        // each request prepared once (checked and written into the provider's format), posted again and again
        PreparedSend[] wr = new PreparedSend[o.numQp], quiet = new PreparedSend[o.numQp];
        for (int q = 0; q < o.numQp; q++) {
            wr[q] = qps[q].prepareSend(bwRequest(q, size).signaled(true));
            quiet[q] = qps[q].prepareSend(bwRequest(q, size).signaled(false));
        }
        int[] outstanding = new int[o.numQp];
        long[] postedPerQp = new long[o.numQp];
        long posted = 0, completed = 0;
        long start = System.nanoTime(), end = timed ? start + durationSec * 1_000_000_000L : Long.MAX_VALUE;
        long lastDone = start;
        boolean stop = false;
        Stall stall = new Stall(test.id() + " completions");
        while (true) {
            if (!stop && timed && System.nanoTime() >= end) stop = true;
            boolean more = false;
            if (!stop) {
                for (int q = 0; q < o.numQp; q++) {
                    while (outstanding[q] < tx && postedPerQp[q] < itersPerQp) {
                        long k = postedPerQp[q] + 1;
                        boolean last = k == itersPerQp;
                        boolean signalled = mod == 1 || k % mod == 0 || last;
                        if (record && posted % stampEvery == 0) tposted[(int) posted] = System.nanoTime();
                        if (signalled) wr[q].post(last ? q | LAST_OF_QP : q); else quiet[q].post();
                        outstanding[q]++;
                        postedPerQp[q]++;
                        posted++;
                    }
                    if (postedPerQp[q] < itersPerQp) more = true;
                }
            }
            if (completed >= posted && (stop || !more)) break;
            int n = sendCq.poll(done, done.capacity());
            if (n == 0) {
                stall.idle();
                continue;
            }
            long now = System.nanoTime();
            for (int k = 0; k < n; k++) {
                check(k);
                int q = (int) (done.wrId(k) & ~LAST_OF_QP);
                int retired = (done.wrId(k) & LAST_OF_QP) != 0 ? outstanding[q] : mod; // this one and the unsignalled before it
                outstanding[q] -= retired;
                for (int r = 0; r < retired; r++) {
                    if (record) tcompleted[(int) completed] = now;
                    completed++;
                }
            }
            lastDone = now;
            stall.progress();
            if ((completed & 0xfff) < n && progress.enabled()) progress.update(String.format(" %s %d bytes: %d%s", test.id(), size, completed, timed ? " ops" : "/" + total));
        }
        long elapsed = lastDone - start;
        double best = record ? BwResult.bestNsPerMsg(tposted, tcompleted, (int) completed, CQ_MOD) : 0;
        return BwResult.of(size, completed, elapsed, best);
    }

    /** wr_id bit of a QP's last request: its completion retires all of the QP's requests still outstanding. */
    private static final long LAST_OF_QP = 1L << 32;

    /** One QP's bandwidth request (signalled or not is the caller's). */
    private SendWorkRequest bwRequest(int q, int size) {
        SendWorkRequest w = new SendWorkRequest().wrId(q);
        return switch (test.verb) {
            case WRITE -> dataRequest(w.opcode(WrOpcode.RDMA_WRITE).buffer(mr, localOffset(q), size).remote(rem[q].vaddr(), rem[q].rkey()), q, size);
            case READ -> w.opcode(WrOpcode.RDMA_READ).buffer(mr, localOffset(q), size).remote(rem[q].vaddr(), rem[q].rkey());
            case ATOMIC -> w.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).buffer(mr, localOffset(q), 8).atomic(rem[q].vaddr(), rem[q].rkey(), 1, 0);
            case SEND -> dataRequest(w.opcode(WrOpcode.SEND).buffer(mr, localOffset(q), size), q, size);
            default -> throw new IllegalStateException();
        };
    }

    /** run_iter_bw_server: receive -n messages per QP (or until the client stops, with -D), reposting receives. */
    private BwResult sendBwServer(int size) {
        boolean timed = o.durationSec > 0;
        long perQp = timed ? Long.MAX_VALUE : o.effectiveIters();
        long total = timed ? Long.MAX_VALUE : perQp * o.numQp;
        long[] postedPerQp = new long[o.numQp];
        java.util.Arrays.fill(postedPerQp, postedRecvs);
        RecvWorkRequest[] rwr = new RecvWorkRequest[o.numQp];
        for (int q = 0; q < o.numQp; q++) rwr[q] = recvRequest(q, size);
        // the clock starts now, right after the handshake that lets the client send: completions that queued up
        // before the first poll must not shrink the measured time
        long received = 0, start = System.nanoTime(), first = 0, lastAt = start;
        Stall stall = new Stall("the client's sends (" + test.id() + ", " + size + " bytes)");
        long quietNs = 500_000_000L;
        while (received < total) {
            int n = recvCq.poll(done, done.capacity());
            if (n == 0) {
                if (timed && received > 0 && System.nanoTime() - first > o.durationSec * 1_000_000_000L
                        && System.nanoTime() - lastAt > quietNs) break;
                stall.idle();
                continue;
            }
            long now = System.nanoTime();
            if (received == 0) first = now;
            for (int k = 0; k < n; k++) {
                check(k);
                int q = (int) done.wrId(k);
                if (postedPerQp[q] < perQp) {
                    qps[q].postRecv(rwr[q]);
                    postedPerQp[q]++;
                }
            }
            received += n;
            lastAt = now;
            stall.progress();
            if ((received & 0xfff) < n && progress.enabled()) progress.update(String.format(" %s %d bytes: received %d", test.id(), size, received));
        }
        return BwResult.of(size, received, lastAt - start, 0);
    }
}
