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
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * What one run of an RDMA test holds, as perftest's {@code perftest_resources.c}: the device, the buffer and its
 * memory region, the CQs, the QPs and their addresses (ours and the peer's), and the QP state changes.
 *
 * <p>Buffer layout as perftest's: per QP a local area at {@code i*B} (what we send / where reads and atomics land)
 * and the area the peer targets at {@code (numQp+i)*B}, {@code B = max(size, page size)}; the second area's address
 * is what the key message advertises.
 */
final class BenchResources implements AutoCloseable {
    static final int CYCLE_BUFFER = 4096, CACHE_LINE = 64, RX_DEPTH = 512, CQ_MOD = 100;
    /** perftest's Q_Key of UD QPs (DEF_QKEY) and the GRH room a UD receive needs in front of the data (UD_ADDITION). */
    static final int UD_QKEY = 0x11111111, UD_GRH = 40;
    /** perftest's receive depth of a UD bandwidth server: the iterations, at most UC_MAX_RX (UD drops what finds no receive). */
    private static final int UD_MAX_RX = 16000;

    final PerfOptions options;
    final PerfTest test;
    final boolean ud;
    /** -I as the run uses it (0 for reads and atomics). */
    final int inline;
    /** The longest a wait on the peer may go without progress, in nanoseconds (--timeout). */
    final long stallNs;
    /** True while the warm-up runs the loop on QPs connected to themselves. */
    boolean warmingUp;

    Context ctx;
    ProtectionDomain pd;
    private Arena arena;
    MemorySegment buf;
    /** The buffer's memory region; with --mr_per_qp one per QP (each QP's requests and key use its own). */
    MemoryRegion mr;

    private MemoryRegion[] mrPerQp;
    CompletionQueue sendCq, recvCq;
    QueuePair[] qps;
    private long areaSize;
    int gidIndex = -1;
    Gid gid;
    PortAttr port;
    int outReads = 1;
    Dest[] my, rem;
    Mtu mtu;
    String deviceName;
    /** Receives a send test keeps posted per QP. */
    private int rxDepth = RX_DEPTH;
    /**
     * Messages this side's bandwidth loops completed over the device's life (warm-up and every run, -D's margins
     * included): what the device's packet counters, which count from its start, are to be divided by. A -D run reports
     * only the messages inside its window (a half of a -D 8 run with the default margin -f 2).
     */
    long messagesCompleted;
    /** The length of the last -D latency run, in nanoseconds. */
    long lastDurationNs;
    /** The post times of the last latency run (-H, -U print them), or null. */
    long[] lastPostTimes;
    /** --use-srq: the send tests' shared receive queue, or null. */
    SharedReceiveQueue srq;
    /** The receives each QP has posted for the current size. */
    int postedRecvs;
    /** -e: the completion channel both CQs report to; null when the loops spin. */
    CompletionChannel channel;
    /** The loops' blocking waits on {@link #channel} ({@link Stall}), printed with --poll-budget. */
    long channelWaits;
    /** How compare's send_bw warm-in of the last point went ({@link Bandwidth#sendWarmIn}), or null. */
    Bandwidth.WarmInOutcome warmIn;
    /** -R: the QPs' rdma_cm connections. */
    CmQps cm;
    /** UD: the address handle, QPN and Q_Key each QP sends to (set when the QPs connect). */
    private AddressHandle[] ahs;

    private int[] remQpn, remQkey;
    /** Completions of the set-up. */
    final WorkCompletion[] wcs = WorkCompletion.array(64);
    /** The timed loops' completions, read in place (the fast path; wcs serves the set-up). */
    final Completions done = new Completions(64);

    BenchResources(PerfOptions options) {
        this.options = options;
        this.test = options.test;
        this.ud = options.connection == PerfOptions.Connection.UD;
        this.inline = options.effectiveInline();
        this.stallNs = options.timeoutSec * 1_000_000_000L;
    }

    /** Opens {@code device} (null: the first one) and makes the buffer, the CQs and the QPs, in INIT. */
    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by close()
    void open(String device) {
        PerfOptions o = options;
        Device dev = device == null ? Verbs.defaultDevice() : Verbs.device(device);
        deviceName = dev.name();
        ctx = dev.open();
        DeviceAttr da = ctx.queryDevice();
        if (o.ibPort < 1 || o.ibPort > da.physPortCnt())
            throw new BenchException("device " + deviceName + " has " + da.physPortCnt() + " port(s); -i " + o.ibPort
                    + " does not exist");
        port = ctx.queryPort(o.ibPort);
        if (o.forceLink != null && !o.forceLink.equals(port.linkLayer().ibvName()))
            throw new BenchException("--force-link " + o.forceLink + ", but port " + o.ibPort + " of " + deviceName
                    + " is " + port.linkLayer().ibvName() + " (jrdma cannot change a port's link layer)");
        boolean needGid = o.gidIndex >= 0 || port.linkLayer() == LinkLayer.ETHERNET;
        if (needGid) {
            gidIndex = o.gidIndex >= 0 ? o.gidIndex : bestGidIndex();
            gid = ctx.queryGid(o.ibPort, gidIndex);
            if (gid.isZero())
                throw new BenchException("GID index " + gidIndex + " of " + deviceName + " port " + o.ibPort
                        + " is empty: pick one that 'jrdma devinfo -v -d " + deviceName + "' lists (-x N)");
        }
        if (test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC)
            outReads = Math.max(1, Math.min(o.outReads > 0 ? o.outReads : 16, da.maxQpRdAtom()));
        mtu = port.activeMtu();
        // -m, at most the port's active MTU (perftest's set_mtu: a larger one becomes the active one)
        if (o.mtu > 0 && o.mtu < mtu.bytes) mtu = Mtu.of(Integer.numberOfTrailingZeros(o.mtu) - 7);
        int maxSize = 0;
        for (int s : o.runSizes()) maxSize = Math.max(maxSize, s);
        // a UD message is at most the MTU (4096 at most), and its receive starts 40 bytes early for the GRH
        areaSize = ud
                ? Math.max(Math.min(maxSize, mtu.bytes) + CACHE_LINE, CYCLE_BUFFER)
                : Math.max(maxSize, CYCLE_BUFFER);
        arena = Arena.ofShared();
        buf = o.mmapFile != null
                ? mapFile(2L * o.numQp * areaSize)
                : arena.allocate(2L * o.numQp * areaSize, CYCLE_BUFFER);
        pd = ctx.allocPd();
        EnumSet<Access> access =
                EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        mr = pd.registerMemory(buf, access);
        if (o.mrPerQp) {
            // --mr_per_qp: a region (and key) of its own for each QP; QP i's two areas are not adjacent (i*B and
            // (numQp+i)*B), so each region covers the whole buffer and QP i uses only its own
            mrPerQp = new MemoryRegion[o.numQp];
            for (int i = 0; i < o.numQp; i++) mrPerQp[i] = pd.registerMemory(buf, access);
        }
        int tx = Math.min(o.effectiveTxDepth(), Math.max(1, da.maxQpWr()));
        int sendWr = test.verb == PerfTest.Verb.SEND && test.latency ? Math.min(CQ_MOD, Math.max(1, da.maxQpWr())) : tx;
        rxDepth = o.rxDepth > 0
                ? o.rxDepth
                : ud && !test.latency ? (int) Math.min(o.effectiveIters(), UD_MAX_RX) : RX_DEPTH;
        int recvWr = test.verb == PerfTest.Verb.SEND ? Math.min(rxDepth, Math.max(1, da.maxQpWr())) : 1;
        // --poll-budget waits on the channel once its spin is over
        if (o.events || o.pollBudgetMicros > 0) channel = ctx.createCompletionChannel();
        // -X: the completion vector the CQs signal their events on (perftest's eq_num)
        if (o.compVector >= Math.max(1, ctx.numCompVectors()))
            throw new BenchException("-X " + o.compVector + ": " + deviceName + " has " + ctx.numCompVectors()
                    + " completion vector(s), 0.." + (ctx.numCompVectors() - 1));
        sendCq = ctx.createCq(Math.max(16, sendWr * o.numQp + 16), channel, o.compVector);
        recvCq = ctx.createCq(Math.max(16, recvWr * o.numQp + 16), channel, o.compVector);
        qps = new QueuePair[o.numQp];
        my = new Dest[o.numQp];
        ahs = new AddressHandle[o.numQp];
        remQpn = new int[o.numQp];
        remQkey = new int[o.numQp];
        SecureRandom rnd = new SecureRandom();
        QpInitAttr.Builder qpAttr = QpInitAttr.builder(sendCq)
                .type(ud ? QpType.UD : QpType.RC)
                .recvCq(recvCq)
                .maxSendWr(sendWr)
                .maxRecvWr(recvWr)
                .maxInlineData(inline);
        if (o.useSrq && test.verb == PerfTest.Verb.SEND) {
            // --use-srq: the QPs receive from one shared queue of -r receives (perftest: rx-depth is the SRQ's max_wr)
            // (the soft device makes SRQs but reports max_srq 0, so the attributes only bound the depth when they give
            // one)
            try {
                srq = pd.createSrq(new SrqAttr(da.maxSrqWr() > 0 ? Math.min(rxDepth, da.maxSrqWr()) : rxDepth, 1, 0));
            } catch (VerbsException e) {
                throw new BenchException(
                        "--use-srq: " + deviceName + " cannot make a shared receive queue: " + e.getMessage(), e);
            }
            qpAttr.srq(srq);
        }
        QpInitAttr attr = qpAttr.build();
        for (int i = 0; i < o.numQp; i++) {
            qps[i] = createQp(attr);
            initQp(qps[i]);
            my[i] = new Dest(
                    port.lid(),
                    outReads,
                    qps[i].qpNum(),
                    rnd.nextInt() & 0xffffff,
                    mr(i).rkey(),
                    mr(i).address() + (o.numQp + i) * areaSize,
                    gid,
                    0);
        }
    }

    /** --mmap FILE (--mmap-offset N): the buffer is that file's bytes from N on, mapped shared, as perftest's. */
    private MemorySegment mapFile(long bytes) {
        java.nio.file.Path file = java.nio.file.Path.of(options.mmapFile);
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(
                file, java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            if (ch.size() < options.mmapOffset + bytes)
                throw new BenchException("--mmap " + file + ": " + ch.size() + " bytes, the run needs " + bytes
                        + " from offset " + options.mmapOffset);
            return ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, options.mmapOffset, bytes, arena);
        } catch (java.io.IOException e) {
            throw new BenchException("--mmap " + file + ": " + e.getMessage(), e);
        }
    }

    private QueuePair createQp(QpInitAttr attr) {
        try {
            return pd.createQueuePair(attr);
        } catch (VerbsException e) {
            if (inline == 0) throw e;
            throw new BenchException(
                    "device " + deviceName + " cannot make a QP with " + inline + " bytes of inline data (-I "
                            + options.inlineSize + "): " + e.getMessage() + "; try a smaller -I",
                    e);
        }
    }

    /**
     * The message sizes of the run: -s/-a, and on UD at most the MTU (perftest: -a stops at the MTU, a larger -s
     * or the 65536 default becomes the MTU).
     */
    List<Integer> sizes() {
        List<Integer> all = options.runSizes();
        if (!ud) return all;
        List<Integer> fit = new ArrayList<>();
        for (int s : all) if (s <= mtu.bytes) fit.add(s);
        if (fit.isEmpty() || !options.all) return List.of(Math.min(all.getFirst(), mtu.bytes));
        return fit;
    }

    /** RESET to INIT: an RC QP gets every access right the tests need, a UD QP perftest's Q_Key. */
    private void initQp(QueuePair q) {
        QpAttr a = new QpAttr().state(QpState.INIT).pkeyIndex(options.pkeyIndex).port(options.ibPort);
        if (ud) a.qkey(UD_QKEY);
        else a.access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        q.modify(a);
    }

    /** perftest's choice without -x on RoCE: a RoCE v2 GID (IPv4-mapped first), else index 0; the soft device's own GID. */
    private int bestGidIndex() {
        if (options.ipv6) {
            // --ipv6: the first RoCE v2 GID that is an IPv6 address (not an IPv4-mapped one)
            for (GidEntry g : ctx.gidTable(options.ibPort))
                if (!g.gid().isZero() && !g.gid().isIpv4Mapped() && (g.type() == null || g.isRoceV2()))
                    return g.index();
            throw new BenchException("--ipv6: port " + options.ibPort + " of " + deviceName
                    + " has no IPv6 GID ('jrdma devinfo -v -d " + deviceName + "' lists its GIDs)");
        }
        try {
            return ctx.defaultGidIndex(options.ibPort);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** INIT to RTR to RTS towards the peer's QP {@code rem[i]} (UD: state changes and an address handle). */
    void connectQp(int i) {
        Dest r = rem[i];
        // perftest's address vector: --dlid over the peer's LID, -S; with a GID, hop limit 255 and --tclass (-L is
        // for raw Ethernet QPs only); --flow_label in the GRH too
        AhAttr ah = new AhAttr().dlid(options.dlid > 0 ? options.dlid : r.lid()).portNum(options.ibPort);
        ah.sl = options.sl;
        if (gid != null) {
            if (r.gid() == null || r.gid().isZero())
                throw new BenchException("the peer sent no GID; use -x on both sides");
            ah.global(r.gid(), gidIndex).hopLimit(0xFF);
            ah.trafficClass = options.trafficClass;
            ah.flowLabel = options.flowLabel;
        }
        if (ud) {
            // a UD QP has no peer: RTR and RTS are state changes; the sends name the peer through an address handle
            // (perftest makes one on both sides of a latency test and on the client of a bandwidth test)
            qps[i].modify(new QpAttr().state(QpState.RTR));
            qps[i].modify(new QpAttr().state(QpState.RTS).sqPsn(my[i].psn()));
            if (test.latency || options.bandwidthSender() || warmingUp)
                useAddressHandle(i, pd.createAddressHandle(ah), r.qpn(), UD_QKEY);
            return;
        }
        RcWalk walk = new RcWalk()
                .ah(ah)
                .pathMtu(mtu)
                .to(r.qpn(), r.psn())
                .maxDestRdAtomic(outReads)
                .minRnrTimer(12)
                .timeout(options.qpTimeout)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(my[i].psn())
                .maxRdAtomic(Math.max(1, Math.min(outReads, Math.max(1, r.outReads()))));
        walk.toRtr(qps[i]); // INIT was set up when the QP was made (with perftest's pkey index and rights)
        walk.toRts(qps[i]);
    }

    /** UD: QP {@code i} sends to {@code qpn}/{@code qkey} through {@code ah} (the one it had before is destroyed). */
    void useAddressHandle(int i, AddressHandle ah, int qpn, int qkey) {
        if (ahs[i] != null) ahs[i].close();
        ahs[i] = ah;
        remQpn[i] = qpn;
        remQkey[i] = qkey;
    }

    /**
     * After the warm-up: the QPs back to RESET and INIT without their address handles, the CQs drained and the
     * buffer cleared, so the measured run starts as a fresh one.
     */
    void resetAfterWarmUp() {
        rem = null;
        postedRecvs = 0;
        for (int i = 0; i < options.numQp; i++) {
            qps[i].modify(new QpAttr().state(QpState.RESET));
            initQp(qps[i]);
            if (ahs[i] != null) ahs[i].close();
            ahs[i] = null;
        }
        while (sendCq.poll(wcs, wcs.length) > 0) {} // a QP reset leaves its completions in the CQ
        while (recvCq.poll(wcs, wcs.length) > 0) {}
        buf.fill((byte) 0);
    }

    /** Send and write requests: on UD addressed to the peer QP, and posted inline up to -I bytes. */
    SendWorkRequest dataRequest(SendWorkRequest w, int q, int size) {
        if (ud) w.ud(ahs[q], remQpn[q], remQkey[q]);
        if (size <= inline) w.flag(SendFlag.INLINE, true);
        return w;
    }

    /** {@return the memory region QP {@code q} uses: its own with --mr_per_qp, else the one of the buffer} */
    MemoryRegion mr(int q) {
        return mrPerQp != null ? mrPerQp[q] : mr;
    }

    /** QP {@code q}'s atomic (-A: fetch-and-add of 1, or compare-and-swap of 0 with 1, as perftest) into its local area. */
    SendWorkRequest atomicRequest(SendWorkRequest w, int q) {
        boolean swap = options.atomicType == PerfOptions.AtomicType.CMP_AND_SWAP;
        return w.opcode(swap ? WrOpcode.ATOMIC_CMP_AND_SWP : WrOpcode.ATOMIC_FETCH_AND_ADD)
                .buffer(mr(q), localOffset(q), 8)
                .atomic(rem[q].vaddr(), rem[q].rkey(), swap ? 0 : 1, swap ? 1 : 0);
    }

    /** A receive of QP {@code q}: in the area the peer targets; on UD 40 bytes earlier and longer, for the GRH. */
    RecvWorkRequest recvRequest(int q, int size) {
        return new RecvWorkRequest()
                .wrId(q)
                .buffer(mr(q), remoteAreaOffset(q) + (ud ? CACHE_LINE - UD_GRH : 0), size + (ud ? UD_GRH : 0));
    }

    /** Posts the receives a send test starts with: {@code need} (the iterations), at most the receive queue's depth. */
    void postInitialRecvs(int size, long need) {
        int per = (int) Math.min(
                srq == null && qps[0].cap().maxRecvWr() > 0 ? qps[0].cap().maxRecvWr() : rxDepth, need);
        // with an SRQ the QPs share its -r receives; each QP's group of receives (its wr_id) gets an equal part
        per = Math.min(per, srq != null ? Math.max(1, rxDepth / options.numQp) : rxDepth);
        for (int q = 0; q < options.numQp; q++) {
            RecvWorkRequest rwr = recvRequest(q, size);
            for (int k = 0; k < per; k++) postRecv(q, rwr);
        }
        postedRecvs = per;
    }

    /** Posts a receive of QP {@code q}'s group: to the QP, or with --use-srq to the shared queue. */
    void postRecv(int q, RecvWorkRequest rwr) {
        if (srq != null) srq.postRecv(rwr);
        else qps[q].postRecv(rwr);
    }

    /** Completion {@code k} of the last poll into {@link #done}: success, or the run stops with its status. */
    void check(int k) {
        if (!done.isSuccess(k)) throw new BenchException(test.id() + ": " + done.explain(k));
    }

    /** {@return the offset of QP {@code qp}'s local area: what it sends, where its reads and atomics land} */
    long localOffset(int qp) {
        return qp * areaSize;
    }

    /** {@return the offset of the area the peer's QP {@code qp} targets (and our receives fill)} */
    long remoteAreaOffset(int qp) {
        return (options.numQp + qp) * areaSize;
    }

    @Override
    public void close() {
        if (options.waitDestroySec > 0 && ctx != null) {
            try { // --wait_destroy: as perftest, the resources stay a while (e.g. for counters to be read)
                Thread.sleep(options.waitDestroySec * 1000L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (ctx != null && Boolean.getBoolean("jrdma.perf.counters")) printCounters();
        if (cm != null) cm.close();
        if (ctx != null) ctx.close(); // closes PD, MR, QPs and CQs first
        if (arena != null) arena.close();
    }

    /** -Djrdma.perf.counters=true: the device's non-zero counters at the end (interop checks read drops and ICRC errors). */
    private void printCounters() {
        try {
            StringBuilder sb = new StringBuilder("counters of " + deviceName + ":");
            // the denominator for packets per message: every message the counters saw, not -D's window alone
            if (messagesCompleted > 0) sb.append(" messages_completed=").append(messagesCompleted);
            ctx.counters().forEach((k, v) -> {
                if (v != 0) sb.append(' ').append(k).append('=').append(v);
            });
            System.err.println(sb);
        } catch (RuntimeException e) {
            System.err.println("counters of " + deviceName + ": unavailable (" + e.getMessage() + ")");
        }
    }
}
