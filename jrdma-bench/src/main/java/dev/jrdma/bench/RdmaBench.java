package dev.jrdma.bench;

import dev.jrdma.bench.PerftestWire.Dest;
import dev.jrdma.verbs.Mtu;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.LongFunction;

/**
 * perftest's RC tests on any jrdma device, speaking perftest's out-of-band protocol, so either end may be perftest.
 * This class is the tests' main sequence (the handshakes of each test family in perftest's order); what a run holds
 * is {@link BenchResources}, the loops are {@link PingPongLatency}, {@link RoundTripLatency} and {@link Bandwidth},
 * the warm-ups {@link WarmUp}, the header {@link RunHeader}, the exchange's messages {@link PerftestWire}.
 *
 * <p>perftest's modes: {@code -c UD} (send tests on UD QPs: Q_Key 0x11111111, an address handle per peer QP, receives
 * 40 bytes longer for the GRH, messages up to the MTU), {@code -e} (completions awaited on a completion channel),
 * {@code -I} (sends and writes up to that size posted inline). None of them changes the out-of-band exchange.
 */
public final class RdmaBench implements AutoCloseable {
    private final PerfOptions o;
    private final PerfTest test;
    private final PrintStream out;
    private final Progress progress;
    private final BenchResources resources;
    /** --cpu_util: the machine's CPU utilization during the last measured loop, in percent. */
    private double cpuUtilPct;
    /** -W: the counters printed after each report line, or null. */
    private PortCounters counters;
    /** Ends a --run_infinitely run. */
    private final StopSignal stop;
    /** -w/-y: why the run failed its limit, or null. */
    private String belowLimit;

    private RdmaBench(PerfOptions o, PrintStream out, StopSignal stop) {
        this.o = o;
        this.stop = stop;
        this.test = o.test;
        this.out = out;
        this.progress = Progress.forTerminal(out, o.quiet);
        this.resources = new BenchResources(o);
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
        return run(o, out, new StopSignal());
    }

    /**
     * {@link #run(PerfOptions, PrintStream)} that {@code stop} can end: how a --run_infinitely run ends.
     *
     * @param o    the options
     * @param out  where the report goes
     * @param stop asked once the run should end
     * @return what was measured
     */
    static RunResult run(PerfOptions o, PrintStream out, StopSignal stop) {
        if (o.test.isTcp()) throw new IllegalArgumentException(o.test.id() + " is a TCP test");
        if (o.durationSec > 0 && (o.test == PerfTest.SEND_LAT || o.test == PerfTest.WRITE_LAT))
            throw new BenchException(
                    "-D is supported by the bandwidth tests, read_lat and atomic_lat; use -n for " + o.test.id());
        try (RdmaBench b = new RdmaBench(o, out, stop)) {
            if (o.rdmaCm || o.rdmaCmExchange) return b.runOverRdmaCm();
            b.resources.open(o.device);
            b.openCounters();
            if (o.isServer()) {
                out.println(
                        "\n************************************\n* Waiting for client to connect... *\n************************************");
                out.flush();
            }
            Socket s = o.isServer()
                    ? PerftestWire.accept(o.tcpPort, o.acceptTimeoutSec)
                    : PerftestWire.connect(o.host, o.tcpPort, o.timeoutSec);
            try (PerftestWire w =
                    o.isServer() ? PerftestWire.server(s, o.timeoutSec) : PerftestWire.client(s, o.timeoutSec)) {
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
        CmLink.checkAvailable(o.device, o.rdmaCm ? (o.tos >= 0 ? "-R -T" : "-R") : "-z");
        CmLink link = o.isServer()
                ? CmLink.accept(o.tcpPort, o.acceptTimeoutSec, () -> {
                    out.println(
                            "\n************************************\n* Waiting for client to connect... *\n************************************");
                    out.println(" (rdma_cm: listening on port " + o.tcpPort + ")");
                    out.flush();
                })
                : CmLink.connect(o.host, o.tcpPort, o.timeoutSec);
        try (PerftestWire w = PerftestWire.over(link, !o.isServer(), o.timeoutSec)) {
            if (o.device != null && !o.device.equals(link.deviceName()))
                throw new BenchException("-d " + o.device + ", but rdma_cm reaches the peer through "
                        + link.deviceName() + " (drop -d, or use that device's address)");
            resources.open(link.deviceName());
            openCounters();
            return run(w);
        }
    }

    /**
     * perftest's create_rdma_cm_connection, after the MTU exchange: a handshake, the rdma_cm connections of the QPs
     * (the server listens before that handshake, so the client never finds the port closed), a handshake.
     */
    private void connectThroughRdmaCm(PerftestWire w) {
        BenchResources r = resources;
        int rr = test.verb == PerfTest.Verb.READ || test.verb == PerfTest.Verb.ATOMIC ? r.outReads : 0;
        boolean server = !w.isClient();
        if (server) r.cm = CmQps.listen(o.tcpPort, r.qps, r.ud, rr, o.timeoutSec, o.retryCount);
        w.handshake(r.my[0]);
        if (server) {
            r.cm.accept(r.deviceName, r.mr, r.localOffset(0), r.ud && test.latency, r.recvCq, r.wcs);
        } else {
            r.cm = CmQps.connect(o.host, o.tcpPort, r.qps, r.ud, rr, o.timeoutSec, r.deviceName, o.retryCount, o.tos);
            if (r.ud && test.latency) r.cm.announceUdQpNumbers(r.mr, r.localOffset(0), r.sendCq, r.wcs);
        }
        if (r.ud) {
            for (int i = 0; i < o.numQp; i++) {
                CmQps.UdPeer p = r.cm.udPeer(i);
                if (p != null) r.useAddressHandle(i, p.ah(), p.qpn(), p.qkey());
            }
        }
        w.handshake(r.my[0]);
    }

    /** -W: the counters, read once now (an unknown name fails before any connection). */
    private void openCounters() {
        if (o.reportCounters != null)
            counters = PortCounters.open(o.reportCounters, resources.ctx, resources.deviceName, o.ibPort);
    }

    @Override
    public void close() {
        progress.clear();
        resources.close();
    }

    // ------------------------------------------------------------------ the exchange and the tests' sequences

    /** The latency loop's iterations: -n, after compare's warm-in ({@link PerfOptions#warmInIters}) when it has one. */
    private long loopIters() {
        return o.effectiveIters() + warmIn();
    }

    private long warmIn() {
        return o.durationSec == 0 ? o.warmInIters : 0;
    }

    /**
     * The result of the timed iterations of a latency loop that ran {@link #loopIters()}: without a warm-in the loop's
     * own; with one, that of the last -n post times (the loop ran them right after the warm-in, with nothing between).
     */
    private LatencyResult timedPart(int size, LatencyResult whole) {
        return timedPart(size, whole, warmIn());
    }

    /** {@link #timedPart(int, LatencyResult)} of a loop whose first {@code w} iterations were not timed. */
    private LatencyResult timedPart(int size, LatencyResult whole, long w) {
        long[] posts = resources.lastPostTimes;
        if (w == 0 || posts == null) return whole;
        int n = (int) o.effectiveIters();
        long[] timed = java.util.Arrays.copyOfRange(posts, (int) w, (int) w + n);
        resources.lastPostTimes = timed;
        return LatencyResult.fromPostTimes(size, timed, n, test.rttFactor());
    }

    /**
     * A ping-pong latency point (write_lat, send_lat; both sides run it) after its warm-in: the warm-in's bulk in a loop
     * of its own ({@link Bandwidth#warmInBeforeJitWait}, as send_bw's), then each side waits for its JIT to finish
     * what the warm-in queued ({@link WarmUp#awaitJitQuiet}) and the two meet on the exchange, then the rest of the
     * warm-in (at most {@link WarmUp#REWARM_ITERATIONS}: it takes the receive threads, asleep after the wait, off the
     * link again) and the -n timed iterations in one loop. In one loop with the timed ones, the compilations the warm-in's first peer packets set off (the device's receive path, ~0.2 s of
     * C2 per process) went on into the timed iterations; on 2 CPUs the two busy pollers then share a CPU with a
     * compiler thread and a round trip takes a scheduler slice, ~1 ms (jrdma-bench/README.md, "lat19"). Without a
     * warm-in: the loop as before.
     *
     * @param loop runs the point's loop for the given iterations on the same QPs (its iterations continue the last
     *     call's: the receives it posts, the bytes it waits for)
     */
    private LatencyResult pingPongPoint(int size, PerftestWire w, LongFunction<LatencyResult> loop) {
        long warm = warmIn();
        if (warm < 2) return timedPart(size, loop.apply(loopIters()));
        long first = Bandwidth.warmInBeforeJitWait(warm), rewarm = warm - first;
        var _ = loop.apply(first); // untimed
        if (test == PerfTest.WRITE_LAT)
            resources.buf.fill((byte) 0); // the next loop waits for 1 again; nothing is in flight (both loops ended)
        WarmUp.awaitJitQuiet(o.timeoutSec);
        w.handshake(resources.my[0]);
        TimedCounters counters = TimedCounters.start(resources.ctx); // the last rewarm iterations and the timed ones
        long start = System.nanoTime(), iters = rewarm + o.effectiveIters();
        LatencyResult all = loop.apply(iters);
        if (counters != null)
            counters.print(test.id() + " " + size + " B", iters, System.nanoTime() - start, start, null);
        return timedPart(size, all, rewarm);
    }

    private RunResult run(PerftestWire w) {
        BenchResources r = resources;
        new WarmUp(r, progress, out).selfConnected();
        if (!o.dontXchgVersions) { // --dont_xchg_versions: each side keeps its own sizes and MTU (perftest's rule)
            w.versions();
            w.sysData(BenchResources.CYCLE_BUFFER, BenchResources.CACHE_LINE);
            r.mtu = Mtu.of(w.mtu(r.mtu.code));
        }
        if (r.ud && !o.all && o.effectiveSize() > r.mtu.bytes)
            out.printf(
                    " UD message size : %d bytes is above the UD MTU, %d-byte messages are sent (as perftest)%n",
                    o.effectiveSize(), r.mtu.bytes);
        r.rem = new Dest[o.numQp];
        boolean server = !w.isClient();
        if (o.rdmaCm) connectThroughRdmaCm(w);
        if (o.output == null) RunHeader.print(out, r);
        if (o.rateLimit > 0 && o.rateLimitType == null && o.output == null)
            // perftest's fallback when the QP does not take the hardware limit (its default type)
            out.println(" The QP failed to accept HW rate limit, providing SW rate limit");
        Dest[] my = r.my;
        List<LatencyResult> lat = new ArrayList<>();
        List<BwResult> bw = new ArrayList<>();
        BwResult remote = null;
        CpuMeter cpu = new CpuMeter();
        switch (test) {
            case WRITE_LAT, READ_LAT, ATOMIC_LAT, WRITE_BW, READ_BW, ATOMIC_BW -> {
                if (test.latency) w.handshake(my[0]);
                for (int i = 0; i < o.numQp; i++) r.rem[i] = w.handshake(my[i]);
                if (!o.rdmaCm) for (int i = 0; i < o.numQp; i++) r.connectQp(i);
                for (int i = 0; i < o.numQp; i++) w.handshake(my[i]);
                if (o.output == null) RunHeader.printAddresses(out, r);
                w.handshake(my[0]);
                if (test.latency) {
                    if (server && test != PerfTest.WRITE_LAT) {
                        // the client reads/atomics our memory; we wait for its close handshake
                        out.println(" (passive side: the client measures " + test.id() + ")");
                        cpu.start();
                        waitForPeer(w, () -> w.closeConnection(my[0]));
                        cpu.stop();
                        return new RunResult(test, r.deviceName, lat, bw, null, cpu.cpuNs(), cpu.wallNs(), null);
                    }
                    // a -D run reports perftest's duration columns: the average and the transactions per second
                    printColumns(
                            o.durationSec > 0 ? Report.RESULT_LINE + "\n" + Report.LAT_DUR_HEADER : Report.latHeader());
                    cpu.start();
                    for (int size : r.sizes()) {
                        SystemCpu before = SystemCpu.sample();
                        LatencyResult result = test == PerfTest.WRITE_LAT
                                ? pingPongPoint(
                                        size, w, n -> new PingPongLatency(r, progress).writeLat(size, server, n))
                                : timedPart(
                                        size, new RoundTripLatency(r, progress).run(size, loopIters(), o.durationSec));
                        cpuUtilPct = SystemCpu.sample().utilSince(before);
                        progress.clear();
                        printLine(result);
                        lat.add(result);
                    }
                    cpu.stop();
                    printColumns(Report.RESULT_LINE);
                    // perftest's ib_write_lat ends without the closing handshake: it just exits
                    if (test == PerfTest.WRITE_LAT) w.close();
                    else w.closeConnection(my[0]);
                } else if (o.bidirectional) {
                    // -b (perftest's duplex): both sides run the loop at once; per size a handshake before it (and
                    // with -a one after it), then the two reports are exchanged and each side prints their sum
                    new WarmUp(r, progress, out).withPeer(r.sizes().getFirst());
                    printColumns(Report.bwHeader(o.reportGbits));
                    cpu.start();
                    Bandwidth loop = new Bandwidth(r, progress);
                    for (int size : r.sizes()) {
                        w.handshake(my[0]);
                        SystemCpu before = SystemCpu.sample();
                        BwResult mine = loop.client(size, o.effectiveIters(), o.durationSec);
                        cpuUtilPct = SystemCpu.sample().utilSince(before);
                        // perftest 4.5 syncs again after the loop only per size of -a (RUN_ALL; atomic_bw never):
                        // after a single size the reports follow at once
                        if (o.all && test.verb != PerfTest.Verb.ATOMIC) w.handshake(my[0]);
                        BwResult peer = w.bwReports(mine);
                        BwResult both = new BwResult(
                                mine.size(),
                                mine.iters(),
                                mine.bwPeakMBs() + peer.bwPeakMBs(),
                                mine.bwAvgMBs() + peer.bwAvgMBs(),
                                mine.msgRateMpps() + peer.msgRateMpps());
                        checkLimits(both);
                        progress.clear();
                        printLine(both);
                        bw.add(mine);
                        remote = peer;
                        if (o.reportBoth && o.output == null) {
                            // perftest's --report-both: the local and the remote report after their sum
                            out.print(Report.RESULT_LINE + "\n\n Local results: \n" + Report.RESULT_LINE + "\n");
                            printColumns((o.reportGbits ? Report.BW_HEADER_G : Report.BW_HEADER));
                            printLine(mine);
                            out.print(Report.RESULT_LINE + "\n\n Remote results: \n" + Report.RESULT_LINE + "\n");
                            printColumns((o.reportGbits ? Report.BW_HEADER_G : Report.BW_HEADER));
                            printLine(peer);
                        }
                    }
                    cpu.stop();
                    printColumns(Report.RESULT_LINE);
                    w.closeConnection(my[0]);
                } else if (!o.bandwidthSender()) {
                    out.println(" (passive side: the " + (o.reversed ? "server" : "client")
                            + " measures; its report follows)");
                    cpu.start();
                    waitForPeer(w, () -> w.handshake(my[0]));
                    cpu.stop();
                    remote = w.bwReports(new BwResult(0, 0, 0, 0, 0));
                    printColumns(Report.bwHeader(o.reportGbits));
                    printLine(remote);
                    printColumns(Report.RESULT_LINE);
                    w.closeConnection(my[0]);
                } else {
                    new WarmUp(r, progress, out).withPeer(r.sizes().getFirst());
                    printColumns(Report.bwHeader(o.reportGbits));
                    cpu.start();
                    Bandwidth loop = new Bandwidth(r, progress);
                    BwResult last = null;
                    for (int size : r.sizes()) {
                        SystemCpu before = SystemCpu.sample();
                        last = o.runInfinitely
                                ? loop.clientUntilStopped(size, o.durationSec, this::printPeriod, stop)
                                : loop.client(size, o.effectiveIters(), o.durationSec);
                        if (o.runInfinitely) out.println("\n User stopped traffic");
                        cpuUtilPct = SystemCpu.sample().utilSince(before);
                        checkLimits(last);
                        progress.clear();
                        printLine(last);
                        bw.add(last);
                    }
                    cpu.stop();
                    printColumns(Report.RESULT_LINE);
                    w.handshake(my[0]);
                    w.bwReports(last);
                    w.closeConnection(my[0]);
                }
            }
            case SEND_LAT, SEND_BW -> {
                for (int i = 0; i < o.numQp; i++) r.rem[i] = w.handshake(my[i]);
                if (!o.rdmaCm) for (int i = 0; i < o.numQp; i++) r.connectQp(i);
                w.handshake(my[0]);
                for (int i = 0; i < o.numQp; i++) w.handshake(my[i]);
                if (o.output == null) RunHeader.printAddresses(out, r);
                printColumns(test.latency ? Report.latHeader() : Report.bwHeader(o.reportGbits));
                long cpuNs = 0, wallNs = 0;
                BwResult remoteOfSend = null;
                for (int size : r.sizes()) {
                    boolean receiver = test.latency || !o.bandwidthSender() || o.bidirectional;
                    if (receiver)
                        r.postInitialRecvs(size, test.latency || o.durationSec == 0 ? loopIters() : Long.MAX_VALUE);
                    w.handshake(my[0]);
                    // compare's send_bw warm-in: the server receives it in its loop, before its clock starts; the
                    // two agree in it on the timed loop's messages
                    long timedIters = o.effectiveIters();
                    if (!test.latency && o.bandwidthSender() && !o.bidirectional && !o.runInfinitely && warmIn() > 0)
                        timedIters = new Bandwidth(r, progress).sendWarmIn(size, warmIn(), warmInMeeting(w));
                    cpu.start();
                    if (test.latency) {
                        long recvs = loopIters();
                        LatencyResult result = pingPongPoint(
                                size, w, n -> new PingPongLatency(r, progress).sendLat(size, server, n, recvs));
                        progress.clear();
                        printLine(result);
                        lat.add(result);
                    } else {
                        Bandwidth loop = new Bandwidth(r, progress);
                        SystemCpu before = SystemCpu.sample();
                        if (o.bidirectional && o.durationSec > 0) {
                            // perftest's send_bw -b -D: each side counts its send completions and its receives
                            // between the margins and prints that; no reports are exchanged
                            BwResult mine = loop.sendBoth(size, 0, o.durationSec);
                            cpuUtilPct = SystemCpu.sample().utilSince(before);
                            checkLimits(mine);
                            progress.clear();
                            printLine(mine);
                            bw.add(mine);
                        } else if (o.bidirectional) {
                            // perftest's send_bw -b: both sides send and receive at once, then exchange their reports
                            // and each prints the sum
                            BwResult mine = loop.sendBoth(size, o.effectiveIters(), 0);
                            cpuUtilPct = SystemCpu.sample().utilSince(before);
                            BwResult peer = w.bwReports(mine);
                            BwResult both = new BwResult(
                                    mine.size(),
                                    mine.iters(),
                                    mine.bwPeakMBs() + peer.bwPeakMBs(),
                                    mine.bwAvgMBs() + peer.bwAvgMBs(),
                                    mine.msgRateMpps() + peer.msgRateMpps());
                            checkLimits(both);
                            progress.clear();
                            printLine(both);
                            bw.add(mine);
                            remoteOfSend = peer;
                        } else {
                            BwResult result = !o.bandwidthSender()
                                    ? loop.sendServer(
                                            size,
                                            warmIn(),
                                            o.runInfinitely ? this::printPeriod : null,
                                            warmInMeeting(w))
                                    : o.runInfinitely
                                            ? loop.clientUntilStopped(size, o.durationSec, this::printPeriod, stop)
                                            : loop.client(size, timedIters, o.durationSec);
                            if (o.runInfinitely)
                                out.println(o.bandwidthSender() ? "\n User stopped traffic" : " Client stopped");
                            cpuUtilPct = SystemCpu.sample().utilSince(before);
                            checkLimits(result);
                            progress.clear();
                            printLine(result);
                            bw.add(result);
                        }
                    }
                    cpu.stop();
                    cpuNs += cpu.cpuNs();
                    wallNs += cpu.wallNs();
                    if (!test.latency && o.all) w.handshake(my[0]);
                }
                printColumns(Report.RESULT_LINE);
                if (o.pollBudgetMicros > 0) out.printf(" Waits on the completion channel: %d%n", r.channelWaits);
                // an endless run's server notices the end only after two silent periods: wait that long for it
                if (o.runInfinitely) waitForPeer(w, () -> w.closeConnection(my[0]));
                else w.closeConnection(my[0]);
                if (belowLimit != null) throw new BenchException(belowLimit);
                return new RunResult(test, r.deviceName, lat, bw, remoteOfSend, cpuNs, wallNs, warmInNote());
            }
            default -> throw new IllegalStateException(test.toString());
        }
        if (belowLimit != null) throw new BenchException(belowLimit);
        return new RunResult(test, r.deviceName, lat, bw, remote, cpu.cpuNs(), cpu.wallNs(), null);
    }

    /**
     * compare's send_bw warm-in meets the peer on the exchange: a handshake once both JITs are quiet, then after each
     * round both sides' words (32 bytes each way: compiled ms, busy and overdue flags, the proposed next round and timed
     * messages; a proposal out of range fails the run).
     */
    private Bandwidth.WarmInMeeting warmInMeeting(PerftestWire w) {
        Dest mine = resources.my[0];
        return new Bandwidth.WarmInMeeting() {
            @Override
            public void jitQuiet() {
                w.handshake(mine);
            }

            @Override
            public Bandwidth.WarmInRound roundEnd(Bandwidth.WarmInRound word) {
                long flags = (word.jit().busy() ? 1 : 0) | (word.overdue() ? 2 : 0);
                ByteBuffer peer = ByteBuffer.wrap(w.exchange(
                        ByteBuffer.allocate(32)
                                .putLong(word.jit().compiledMs())
                                .putLong(flags)
                                .putLong(word.next())
                                .putLong(word.timed())
                                .array(),
                        32,
                        "warm-in round"));
                long compiledMs = peer.getLong(),
                        peerFlags = peer.getLong(),
                        next = peer.getLong(),
                        timed = peer.getLong();
                long most = Math.max(Math.max(word.next(), word.timed()), Bandwidth.MAX_TIMED_MESSAGES);
                if (next < 0 || next > most || timed < 1 || timed > most)
                    throw new BenchException("the peer proposed a warm-in round of " + next + " and " + timed
                            + " timed messages (0 to " + most + " and 1 to " + most + " expected)");
                return new Bandwidth.WarmInRound(
                        new WarmUp.JitWork(compiledMs, (peerFlags & 1) != 0), (peerFlags & 2) != 0, next, timed);
            }

            @Override
            public boolean isClient() {
                return w.isClient();
            }
        };
    }

    /** {@return the line on the last send_bw warm-in for compare's report, or null (see RunResult#warmInNote)} */
    private String warmInNote() {
        Bandwidth.WarmInOutcome w = resources.warmIn;
        boolean atBound = w != null && w.stoppedAtBound() && Bandwidth.WARM_IN_BOUND_NS > 0; // 0: rounds turned off
        return w != null && (atBound || Boolean.getBoolean("jrdma.perf.counters")) ? w.describe() : null;
    }

    /** The report's frame (column headers, dashed lines): none with --output, which prints the figures alone. */
    private void printColumns(String text) {
        if (o.output != null) return;
        // --cpu_util: perftest's header gains a CPU_Util[%] column
        out.println(o.cpuUtil && !text.endsWith(Report.RESULT_LINE) ? text + "    CPU_Util[%]" : text);
    }

    /**
     * A latency line, or with --output latency the average alone (perftest's "%lf"); -U and -H print the samples
     * first, then the column headers again, as perftest.
     */
    private void printLine(LatencyResult r) {
        if ((o.unsorted || o.histogram) && resources.lastPostTimes != null && o.durationSec == 0) {
            LatencySamples.print(
                    out, resources.lastPostTimes, (int) r.iters(), test.rttFactor(), o.unsorted, o.histogram);
            if (o.output == null) out.println(Report.LAT_HEADER);
        }
        if (o.durationSec > 0 && resources.lastDurationNs > 0) {
            // perftest's print_report_lat_duration: the run's time over its iterations, and the iterations per second
            double latency = resources.lastDurationNs / 1000.0 / test.rttFactor() / r.iters();
            double tps = r.iters() / (resources.lastDurationNs / 1e9);
            out.println(
                    o.output == PerfOptions.Output.LATENCY
                            ? String.format(Locale.ROOT, "%f", latency)
                            : String.format(
                                            Locale.ROOT,
                                            " %-7d       %d            %-7.2f        %-7.2f",
                                            r.size(),
                                            r.iters(),
                                            latency,
                                            tps)
                                    + cpuColumn());
            if (counters != null) counters.print(out);
            if (o.outJson) JsonReport.latency(resources, r, latency, tps, cpuUtilPct);
            return;
        }
        out.println(
                o.output == PerfOptions.Output.LATENCY
                        ? String.format(Locale.ROOT, "%f", r.tAvg())
                        : Report.latLine(r) + cpuColumn());
        if (counters != null) counters.print(out);
        if (o.outJson) JsonReport.latency(resources, r, 0, 0, cpuUtilPct);
    }

    /** --run_infinitely: one period's line, as perftest prints it every -D seconds. */
    private void printPeriod(BwResult r) {
        progress.clear();
        printLine(r);
        out.flush();
    }

    /** A bandwidth line, or with --output the average bandwidth or the message rate alone (perftest's "%lf"). */
    private void printLine(BwResult r) {
        if (o.output == PerfOptions.Output.BANDWIDTH)
            out.println(String.format(Locale.ROOT, "%f", r.bwAvg(o.reportGbits)));
        else if (o.output == PerfOptions.Output.MESSAGE_RATE)
            out.println(String.format(Locale.ROOT, "%f", r.msgRateMpps()));
        else out.println(Report.bwLine(r, o.reportGbits) + cpuColumn());
        if (counters != null) counters.print(out);
        if (o.outJson) JsonReport.bandwidth(resources, r, cpuUtilPct);
    }

    /** --cpu_util: the value column perftest appends (REPORT_EXT_CPU_UTIL), or nothing. */
    private String cpuColumn() {
        return o.cpuUtil ? String.format(Locale.ROOT, "\t    %-3.2f", cpuUtilPct) : "";
    }

    /**
     * -w and -y: a result below a limit fails the run (after the peer has been told the run is over), with
     * perftest's messages. (perftest checks -y only when -w is given too; jrdma checks each limit given.)
     */
    private void checkLimits(BwResult r) {
        if (o.limitBw >= 0 && r.bwAvg(o.reportGbits) < o.limitBw)
            belowLimit = "Error: BW result is below bw limit (" + r.bwAvg(o.reportGbits) + " < " + o.limitBw + ")";
        else if (o.limitMsgRate >= 0 && r.msgRateMpps() < o.limitMsgRate)
            belowLimit = "Error: Msg rate  is below msg_rate limit (" + r.msgRateMpps() + " < " + o.limitMsgRate + ")";
    }

    /** A wait on the peer's next message while it runs: as long as the run may take, but not for ever. */
    private void waitForPeer(PerftestWire w, Runnable r) {
        if (o.runInfinitely) {
            w.readTimeout(0); // the client runs until it is stopped: no limit on the wait
            try {
                r.run();
            } finally {
                w.restoreTimeout();
            }
            return;
        }
        long runMs = o.durationSec > 0 ? o.durationSec * 1000L : 0;
        // the peer's run: its duration, or its iterations; allow generously, plus the stall timeout
        w.readTimeout((int) Math.min(Integer.MAX_VALUE, runMs + 600_000L + resources.stallNs / 1_000_000));
        try {
            r.run();
        } finally {
            w.restoreTimeout();
        }
    }
}
