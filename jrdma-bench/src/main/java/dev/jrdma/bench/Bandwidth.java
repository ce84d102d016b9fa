package dev.jrdma.bench;

import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WrOpcode;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The bandwidth tests, write_bw, send_bw, read_bw and atomic_bw (perftest's {@code write_bw.c}, {@code send_bw.c},
 * {@code read_bw.c}, {@code atomic_bw.c}): the client keeps -t requests outstanding per QP; a send_bw server
 * counts receives, the others are passive.
 */
final class Bandwidth {
    /** wr_id bit of a QP's last request: its completion retires all of the QP's requests still outstanding. */
    private static final long LAST_OF_QP = 1L << 32;

    private final BenchResources resources;
    private final Progress progress;
    /** The loops are a warm-up's ({@link WarmUp#withPeer}): not timed, so no {@link TimedCounters} line. */
    boolean warmUp;
    /** The loop is one round of {@link #client(int, long, int)}'s: the rounds print one {@link TimedCounters} line. */
    private boolean quietCounters;
    /** The running loop's counters, when it prints them. */
    private TimedCounters timedCounters;
    /** The last loop's time, its first post to its last completion. */
    private long lastElapsedNs;

    Bandwidth(BenchResources resources, Progress progress) {
        this.resources = resources;
        this.progress = progress;
    }

    /**
     * run_iter_bw: keep tx-depth operations outstanding per QP; each QP does -n operations (or runs for -D seconds).
     * With {@link PerfOptions#minTimedNs} (compare's write_bw and read_bw) and -n, rounds of -n operations until that
     * time has passed, reported together: 1000 64-byte writes take 0.3 ms, and a single descheduling of either side
     * (1-5 ms on a loaded machine) moved such a point 10x between runs.
     */
    BwResult client(int size, long iters, int durationSec) {
        long min = resources.options.minTimedNs;
        // send_bw's server counts the messages: its timed loop's length is agreed in the warm-in instead
        if (min <= 0 || durationSec > 0 || warmUp || resources.test.verb == PerfTest.Verb.SEND)
            return client(size, iters, durationSec, null, null);
        TimedCounters counters = TimedCounters.start(resources.ctx);
        quietCounters = true;
        long messages = 0, elapsed = 0;
        double best = 0;
        try {
            do {
                BwResult round = client(size, iters, 0, null, null);
                messages += round.iters();
                elapsed += lastElapsedNs;
                if (round.bwPeakMBs() > best) best = round.bwPeakMBs();
            } while (elapsed < min);
        } finally {
            quietCounters = false;
        }
        if (counters != null)
            counters.print(
                    resources.test.id() + " " + size + " B (rounds of " + iters + ")", messages, elapsed, 0, null);
        BwResult all = BwResult.of(size, messages, elapsed, 0);
        return resources.options.noPeak || best <= 0
                ? all.withoutPeak()
                : new BwResult(
                        all.size(), all.iters(), Math.max(best, all.bwAvgMBs()), all.bwAvgMBs(), all.msgRateMpps());
    }

    /**
     * run_iter_bw_infinitely (--run_infinitely): the loop of {@link #client(int, long, int)} without an end; every
     * {@code periodSec} seconds {@code everyPeriod} gets what that period moved (no peak, as perftest). It stops when
     * {@code stop} is requested, after its requests in flight have completed.
     *
     * @return the whole run's average
     */
    BwResult clientUntilStopped(int size, int periodSec, Consumer<BwResult> everyPeriod, StopSignal stop) {
        return client(size, Long.MAX_VALUE, periodSec, everyPeriod, stop);
    }

    private BwResult client(int size, long iters, int durationSec, Consumer<BwResult> everyPeriod, StopSignal stopper) {
        BenchResources r = resources;
        PerfOptions o = r.options;
        PerfTest test = r.test;
        boolean forever = everyPeriod != null;
        boolean timed = durationSec > 0;
        long itersPerQp = timed ? Long.MAX_VALUE : iters;
        long total = timed ? Long.MAX_VALUE : itersPerQp * o.numQp;
        boolean record = !timed && !o.noPeak && total <= 10_000_000L; // -N: no peak, no time stamps
        long[] tposted = record ? new long[(int) total] : null, tcompleted = record ? new long[(int) total] : null;
        int stampEvery =
                BwResult.postStep(total); // the post times the peak reads, no more (a clock read can be a system call)
        int tx = r.qps[0].cap().maxSendWr() > 0
                ? Math.min(o.effectiveTxDepth(), r.qps[0].cap().maxSendWr())
                : o.effectiveTxDepth();
        // perftest's CQ moderation: only every cq_mod-th request of a QP (and its last) is signalled, and that
        // completion retires the unsignalled ones before it; with -D every request is signalled (the run stops
        // anywhere)
        // -l: requests go in lists of postList, and the moderation defaults to the list's size (perftest's rule)
        int list = o.postList;
        int mod =
                timed ? 1 : Math.max(1, Math.min(o.cqMod > 0 ? o.cqMod : list > 1 ? list : BenchResources.CQ_MOD, tx));
        // each request prepared once (checked and written into the provider's format), posted again and again
        PreparedSend[] wr = new PreparedSend[o.numQp], quiet = new PreparedSend[o.numQp];
        for (int q = 0; q < o.numQp; q++) {
            wr[q] = r.qps[q].prepareSend(request(q, size).signaled(true));
            quiet[q] = r.qps[q].prepareSend(request(q, size).signaled(false));
        }
        int[] outstanding = new int[o.numQp];
        long[] postedPerQp = new long[o.numQp];
        long posted = 0, completed = 0;
        long periodNs = durationSec * 1_000_000_000L;
        long start = System.nanoTime(), end = timed && !forever ? start + periodNs : Long.MAX_VALUE;
        long lastDone = start;
        // -D: perftest counts only between its margins (-f, default a quarter of -D): from start+margin to end-margin
        long marginNs = timed && !forever ? o.effectiveMargin() * 1_000_000_000L : 0;
        long sampleFrom = start + marginNs, sampleTo = end - marginNs, sampled = 0;
        long periodStart = start, periodFrom = 0; // --run_infinitely: where the current period began
        // --rate_limit (perftest's SW limiter): bursts of --burst_size (default: the queue depth) one gap apart; the
        // warm-up is not paced
        SoftwareRateLimiter limiter = o.softwareRateLimit() && !r.warmingUp
                ? new SoftwareRateLimiter(
                        SoftwareRateLimiter.pps(o.rateLimit, o.rateUnits, size),
                        o.burstSize > 0 ? o.burstSize : tx,
                        start)
                : null;
        boolean stop = false;
        Stall stall = new Stall(r, test.id() + " completions");
        // a field, not a local: a local null in the warm-in's calls and set in the timed one failed the type check
        // at the entry into the warm-in's OSR code (a trap, -Djrdma.perf.counters=true only)
        timedCounters = r.warmingUp || warmUp || quietCounters ? null : TimedCounters.start(r.ctx);
        while (true) {
            if (!stop && timed) {
                long now = System.nanoTime();
                if (forever) {
                    if (now - periodStart >= periodNs) {
                        everyPeriod.accept(BwResult.of(size, completed - periodFrom, now - periodStart, 0)
                                .withoutPeak());
                        periodStart = now;
                        periodFrom = completed;
                    }
                    if (stopper.requested()) stop = true;
                } else if (now >= end) stop = true;
            }
            boolean more = false;
            if (!stop) {
                for (int q = 0; q < o.numQp; q++) {
                    // a list is posted whole, when the queue has room for all of it (jrdma posts its requests one
                    // call each: the packets are the same, the doorbells are not)
                    while (outstanding[q] + list <= tx
                            && postedPerQp[q] < itersPerQp
                            && (limiter == null || limiter.mayPost(System.nanoTime()))) {
                        for (int j = 0; j < list && postedPerQp[q] < itersPerQp; j++) {
                            long k = postedPerQp[q] + 1;
                            boolean last = k == itersPerQp;
                            boolean signalled = mod == 1 || k % mod == 0 || last;
                            if (record && posted % stampEvery == 0) tposted[(int) posted] = System.nanoTime();
                            if (signalled) wr[q].post(last ? q | LAST_OF_QP : q);
                            else quiet[q].post();
                            outstanding[q]++;
                            postedPerQp[q]++;
                            posted++;
                        }
                        if (limiter != null) limiter.posted(list);
                    }
                    if (postedPerQp[q] < itersPerQp) more = true;
                }
            }
            if (completed >= posted && (stop || !more)) break;
            int n = r.sendCq.poll(r.done, r.done.capacity());
            if (n == 0) {
                if (limiter != null && completed >= posted) {
                    // nothing in flight: the wait is the limiter's gap, not the peer's stall
                    stall.progress();
                    Thread.onSpinWait();
                } else stall.idle();
                continue;
            }
            long now = System.nanoTime();
            for (int k = 0; k < n; k++) {
                r.check(k);
                int q = (int) (r.done.wrId(k) & ~LAST_OF_QP);
                int retired = (r.done.wrId(k) & LAST_OF_QP) != 0
                        ? outstanding[q]
                        : mod; // this one and the unsignalled before it
                outstanding[q] -= retired;
                for (int j = 0; j < retired; j++) {
                    if (record) tcompleted[(int) completed] = now;
                    completed++;
                }
                if (marginNs > 0 && now >= sampleFrom && now < sampleTo) sampled += retired;
            }
            lastDone = now;
            stall.progress();
            // progress.enabled() first: a branch on the count alone, taken once per 102,400 messages, was never
            // taken in a warm-in of 20,000, and its first taking in a timed loop a trap (deoptimization)
            if (progress.enabled() && (completed & 0xfff) < n)
                progress.update(
                        String.format(" %s %d bytes: %d%s", test.id(), size, completed, timed ? " ops" : "/" + total));
        }
        r.messagesCompleted += completed;
        long elapsed = lastDone - start;
        lastElapsedNs = elapsed;
        TimedCounters counters = timedCounters;
        timedCounters = null;
        if (counters != null) counters.print(test.id() + " " + size + " B", completed, elapsed, start, tcompleted);
        if (marginNs > 0) return BwResult.of(size, sampled, sampleTo - sampleFrom, 0);
        double best = record ? BwResult.bestNsPerMsg(tposted, tcompleted, (int) completed, mod) : 0;
        BwResult result = BwResult.of(size, completed, elapsed, best);
        return o.noPeak ? result.withoutPeak() : result;
    }

    /** One QP's bandwidth request (signalled or not is the caller's). */
    private SendWorkRequest request(int q, int size) {
        BenchResources r = resources;
        SendWorkRequest w = new SendWorkRequest().wrId(q);
        return switch (r.test.verb) {
            case WRITE ->
                r.dataRequest(
                        w.opcode(WrOpcode.RDMA_WRITE)
                                .buffer(r.mr(q), r.localOffset(q), size)
                                .remote(r.rem[q].vaddr(), r.rem[q].rkey()),
                        q,
                        size);
            case READ ->
                w.opcode(WrOpcode.RDMA_READ)
                        .buffer(r.mr(q), r.localOffset(q), size)
                        .remote(r.rem[q].vaddr(), r.rem[q].rkey());
            case ATOMIC -> r.atomicRequest(w, q);
            case SEND -> r.dataRequest(w.opcode(WrOpcode.SEND).buffer(r.mr(q), r.localOffset(q), size), q, size);
            default -> throw new IllegalStateException();
        };
    }

    /**
     * run_iter_bi (send_bw -b): sends -n messages per QP, -t outstanding, every one signalled, while receiving the
     * peer's -n per QP and reposting receives, on one thread; the result is this side's sends. With -D
     * ({@code durationSec} > 0) it sends for that long and the result is, as perftest counts it, this side's send
     * completions and receives between the margins; it then keeps receiving until nothing has happened for half a
     * second, so that the peer's last sends complete too.
     */
    BwResult sendBoth(int size, long iters, int durationSec) {
        BenchResources r = resources;
        PerfOptions o = r.options;
        boolean timed = durationSec > 0;
        if (timed) iters = Long.MAX_VALUE / Math.max(1, o.numQp);
        long total = timed ? Long.MAX_VALUE : iters * o.numQp;
        int tx = r.qps[0].cap().maxSendWr() > 0
                ? Math.min(o.effectiveTxDepth(), r.qps[0].cap().maxSendWr())
                : o.effectiveTxDepth();
        PreparedSend[] wr = new PreparedSend[o.numQp];
        RecvWorkRequest[] rwr = new RecvWorkRequest[o.numQp];
        for (int q = 0; q < o.numQp; q++) {
            wr[q] = r.qps[q].prepareSend(request(q, size).signaled(true));
            rwr[q] = r.recvRequest(q, size);
        }
        int[] outstanding = new int[o.numQp];
        long[] sentPerQp = new long[o.numQp], recvPostedPerQp = new long[o.numQp];
        java.util.Arrays.fill(recvPostedPerQp, r.postedRecvs);
        long completed = 0, received = 0;
        long start = System.nanoTime(), lastDone = start, lastActive = start;
        long end = timed ? start + durationSec * 1_000_000_000L : Long.MAX_VALUE;
        long marginNs = timed ? o.effectiveMargin() * 1_000_000_000L : 0;
        long sampleFrom = start + marginNs, sampleTo = end - marginNs, sampled = 0;
        boolean sending = true;
        Stall stall = new Stall(r, r.test.id() + " -b completions");
        // -D: after the time is up, poll (and repost receives) until nothing has happened for half a second; sends
        // still outstanding then are left, as perftest leaves them (a perftest peer that stopped reposting its
        // receives never completes them)
        while (timed
                ? sending || System.nanoTime() - lastActive < 500_000_000L
                : completed < total || received < total) {
            if (timed && sending && System.nanoTime() >= end) sending = false;
            for (int q = 0; sending && q < o.numQp; q++) {
                while (outstanding[q] < tx && sentPerQp[q] < iters) {
                    wr[q].post(q);
                    outstanding[q]++;
                    sentPerQp[q]++;
                }
            }
            int n = r.sendCq.poll(r.done, r.done.capacity());
            for (int k = 0; k < n; k++) {
                r.check(k);
                outstanding[(int) r.done.wrId(k)]--;
            }
            completed += n;
            long now = n > 0 || timed ? System.nanoTime() : 0;
            if (n > 0) lastDone = now;
            if (timed && now >= sampleFrom && now < sampleTo) sampled += n;
            int m = r.recvCq.poll(r.done, r.done.capacity());
            for (int k = 0; k < m; k++) {
                r.check(k);
                int q = (int) r.done.wrId(k);
                if (recvPostedPerQp[q] < iters) {
                    r.postRecv(q, rwr[q]);
                    recvPostedPerQp[q]++;
                }
            }
            received += m;
            if (timed && m > 0 && now >= sampleFrom && now < sampleTo) sampled += m;
            if (timed && n + m > 0) lastActive = now;
            if (n + m == 0) stall.idle();
            else stall.progress();
        }
        resources.messagesCompleted += completed;
        if (timed) return BwResult.of(size, sampled, sampleTo - sampleFrom, 0);
        return BwResult.of(size, completed, lastDone - start, 0);
    }

    /**
     * run_iter_bw_server: receive -n messages per QP (or until the client stops, with -D), reposting receives; with
     * --run_infinitely (perftest's run_iter_bw_infinitely_server) {@code everyPeriod} gets every -D seconds what that
     * period received (else null). With compare's warm-in ({@code warmIn} per QP, -n only) it first receives the
     * client's {@link #sendWarmIn} messages the same way: after their first part ({@link #warmInBeforeJitWait}) it
     * waits for this JVM's JIT and meets the client ({@link WarmInMeeting#jitQuiet}); then it receives the client's
     * rounds, saying after each whether its JIT compiled in it ({@link WarmInMeeting#roundEnd}), and once both sides
     * end the warm-in it starts its clock for the agreed timed messages.
     */
    BwResult sendServer(int size, long warmIn, Consumer<BwResult> everyPeriod, WarmInMeeting meeting) {
        PerfOptions o = resources.options;
        if (o.durationSec > 0) warmIn = 0;
        ReceiveLoop loop = new ReceiveLoop(size, warmIn, everyPeriod);
        long warmed = 0; // warm-in messages per QP received
        if (warmIn > 0) {
            warmed = warmInBeforeJitWait(warmIn);
            loop.receiveUntil(warmed * o.numQp);
            // the client sends no more until this side's JIT is quiet too: the timed loop must not be where this JVM
            // compiles its receive loop (a cold server's first point ran 10-20x slower)
            WarmUp.awaitJitQuiet(o.timeoutSec);
            meeting.jitQuiet();
            WarmInRounds rounds = new WarmInRounds(meeting);
            long round = warmIn - warmed;
            while (true) {
                WarmUp.JitReading jit = WarmUp.JitReading.now();
                warmed += round;
                loop.receiveUntil(warmed * o.numQp);
                // the server does not size rounds: it proposes no round and -n timed messages
                WarmInRound peer = rounds.end(jit.compiledSince(), 0, o.effectiveIters());
                if (rounds.over) {
                    // after the last warm-in message: the client sends the timed ones
                    loop.timedFrom(warmed + rounds.timed);
                    break;
                }
                round = peer.next();
            }
            resources.warmIn = rounds.outcome();
        }
        TimedCounters counters = TimedCounters.start(resources.ctx);
        loop.receiveUntil(loop.total);
        long received = loop.received - warmed * o.numQp, elapsed = loop.lastAt - loop.start;
        if (counters != null)
            counters.print(resources.test.id() + " " + size + " B (server)", received, elapsed, loop.start, null);
        return BwResult.of(size, received, elapsed, 0);
    }

    /** Messages a send_bw server receives per call of {@link ReceiveLoop#round} (about a warm-in round's). */
    static final int RECEIVE_ROUND = (int) WarmUp.REWARM_ITERATIONS;

    /**
     * The send_bw server's loop, in rounds of {@link #RECEIVE_ROUND} messages, each a call of {@link #round}: a loop
     * whose exit the JIT has seen. As one loop over warm-in and timed messages, C2 compiled it while the warm-in's
     * end (and the loop's) had never been taken, turned those branches into traps, and the last warm-in message
     * deoptimized it: the timed loop ran interpreted and in C1 while both compilers rebuilt it (100-250 ms of C1 and
     * C2 in each JVM inside a 64 B point of 290 ms, after the JIT had been quiet).
     */
    private final class ReceiveLoop {
        private final BenchResources r = resources;
        private final PerfOptions o = r.options;
        private final int size;
        private final Consumer<BwResult> everyPeriod;
        private final boolean timed = o.durationSec > 0;
        private final long periodNs = o.durationSec * 1_000_000_000L;
        /** The client has stopped when nothing came for this long: two silent periods for an endless run. */
        private final long quietNs;

        private final long[] postedPerQp = new long[o.numQp];
        private final int[] consumed = new int[o.numQp];
        private final RecvWorkRequest[] rwr = new RecvWorkRequest[o.numQp];
        private final Stall stall;
        /** With a warm-in the timed messages are agreed after it: until then the receives go back without a limit. */
        private long perQp;

        long total;
        long received, start, lastAt;
        private long first, periodStart, periodFrom;
        private boolean stopped;

        ReceiveLoop(int size, long warmIn, Consumer<BwResult> everyPeriod) {
            this.size = size;
            this.everyPeriod = everyPeriod;
            quietNs = everyPeriod != null ? Math.max(2_000_000_000L, 2 * periodNs) : 500_000_000L;
            perQp = timed || warmIn > 0 ? Long.MAX_VALUE : o.effectiveIters();
            total = perQp == Long.MAX_VALUE ? Long.MAX_VALUE : perQp * o.numQp;
            Arrays.fill(postedPerQp, r.postedRecvs);
            for (int q = 0; q < o.numQp; q++) rwr[q] = r.recvRequest(q, size);
            stall = new Stall(r, "the client's sends (" + r.test.id() + ", " + size + " bytes)");
            // the clock starts now, right after the handshake that lets the client send: completions that queued up
            // before the first poll must not shrink the measured time
            start = lastAt = periodStart = System.nanoTime();
        }

        /** After the warm-in: {@code perQp} messages per QP in all, and the clock starts now. */
        void timedFrom(long perQp) {
            this.perQp = perQp;
            total = perQp * o.numQp;
            lastAt = start = System.nanoTime();
        }

        /** Receives until {@code target} messages in all, or until the client stopped (-D, --run_infinitely). */
        void receiveUntil(long target) {
            while (received < target && !stopped) round(Math.min(target, received + RECEIVE_ROUND));
        }

        private void round(long upTo) {
            while (received < upTo) {
                int n = r.recvCq.poll(r.done, r.done.capacity());
                if (n == 0) {
                    if (timed
                            && received > 0
                            && (everyPeriod != null || System.nanoTime() - first > periodNs)
                            && System.nanoTime() - lastAt > quietNs) {
                        stopped = true;
                        return;
                    }
                    stall.idle();
                    continue;
                }
                long now = System.nanoTime();
                if (received == 0) first = now;
                for (int k = 0; k < n; k++) {
                    r.check(k);
                    int q = (int) r.done.wrId(k);
                    // --recv_post_list: the used receives go back in lists of that many (perftest's recv_post_list)
                    if (++consumed[q] >= o.recvPostList || postedPerQp[q] + consumed[q] >= perQp) {
                        for (int j = 0; j < consumed[q] && postedPerQp[q] < perQp; j++) {
                            r.postRecv(q, rwr[q]);
                            postedPerQp[q]++;
                        }
                        consumed[q] = 0;
                    }
                }
                received += n;
                lastAt = now;
                stall.progress();
                if (everyPeriod != null && now - periodStart >= periodNs) {
                    everyPeriod.accept(BwResult.of(size, received - periodFrom, now - periodStart, 0)
                            .withoutPeak());
                    periodStart = now;
                    periodFrom = received;
                }
                if (progress.enabled() && (received & 0xfff) < n)
                    progress.update(String.format(" %s %d bytes: received %d", r.test.id(), size, received));
            }
        }
    }

    /**
     * compare's warm-in of a send_bw point ({@link PerfOptions#warmInIters}): {@code n} messages per QP to the real
     * server (which receives them in its own loop, {@link #sendServer}, before its clock starts), untimed: most of
     * them ({@link #warmInBeforeJitWait}), then a wait for this JVM's JIT and a meeting with the server, which has
     * waited for its own ({@link WarmInMeeting#jitQuiet}), then rounds ({@link WarmInRounds}): the rest of the
     * {@code n} (a short round that wakes both devices again), then rounds as long as the timed loop, until one in
     * which neither JVM compiled anything, or {@link #WARM_IN_BOUND_NS}. The warm-up on QPs connected to themselves
     * sends at most the receives it posted (a few hundred) and the server has none, so without this both JVMs
     * compiled the send and receive paths during the timed loop (0.1-0.5 s of C2 per process in a point of 0.1-0.3
     * s), while two busy pollers needed the two CPUs; with the first part alone, the device's receive path still
     * reached C2 in the timed loop (sendbw20). The last round's rate sizes the timed loop: enough messages for
     * {@link PerfOptions#minTimedNs} at that rate (as write_bw's rounds), at least -n, at most
     * {@link #MAX_TIMED_MESSAGES}, agreed with the server.
     *
     * @return the timed loop's messages per QP
     */
    long sendWarmIn(int size, long n, WarmInMeeting meeting) {
        PerfOptions o = resources.options;
        long first = warmInBeforeJitWait(n);
        warmUp = true;
        try {
            // in rounds, as write_bw warms up, so that C2 compiles the loop with its exit seen (see WARM_IN_ROUND)
            for (long round : warmInRounds(first)) client(size, round, 0);
            WarmUp.awaitJitQuiet(o.timeoutSec);
            meeting.jitQuiet(); // the server waits for its own JIT before it answers
            WarmInRounds rounds = new WarmInRounds(meeting);
            long round = n - first;
            while (true) {
                WarmUp.JitReading jit = WarmUp.JitReading.now();
                long timed = o.effectiveIters();
                if (round > 0) {
                    client(size, round, 0);
                    timed = timedMessages(round, lastElapsedNs, o.minTimedNs, timed);
                }
                // the next round rehearses the timed loop: as many messages, so the same counters reach the JIT
                WarmInRound peer = rounds.end(jit.compiledSince(), timed, timed);
                if (rounds.over) break;
                round = Math.max(timed, peer.next());
            }
            resources.warmIn = rounds.outcome();
            return rounds.timed;
        } finally {
            warmUp = false;
            progress.clear();
        }
    }

    /**
     * The longest a send_bw warm-in goes on in rounds after its JIT wait (then the timed loop starts regardless):
     * {@code -Djrdma.perf.sendBwWarmInBoundMs=N} on either side, default 3,000; 0 ends the warm-in after its first
     * round, as before sendbw21 (for A/B runs of the same build).
     */
    static final long WARM_IN_BOUND_NS = Long.getLong("jrdma.perf.sendBwWarmInBoundMs", 3000) * 1_000_000L;

    /**
     * One side's word at the end of a send_bw warm-in round ({@link WarmInMeeting#roundEnd}).
     *
     * @param jit     what this side's JIT did during the round
     * @param overdue this side's warm-in has run past {@link #WARM_IN_BOUND_NS}
     * @param next    the next round's messages per QP this side proposes (0: none)
     * @param timed   the timed loop's messages per QP this side proposes
     */
    record WarmInRound(WarmUp.JitWork jit, boolean overdue, long next, long timed) {
        /** {@return whether the warm-in ends after this round and {@code peer}'s: both JITs quiet, or a side overdue} */
        boolean endsWith(WarmInRound peer) {
            return !jit.busy() && !peer.jit.busy() || overdue || peer.overdue;
        }
    }

    /**
     * The rounds of a send_bw warm-in after its JIT wait, as both sides count them: after each, both say what their JIT
     * did and what they propose, and both take the same decision from the two words.
     */
    static final class WarmInRounds {
        private final WarmInMeeting meeting;
        private final long startNs = System.nanoTime();
        private int count;
        private long clientCompiledMs, serverCompiledMs;
        private boolean stillBusy;
        /** The warm-in is over (both quiet, or the bound): {@link #timed} is agreed. */
        boolean over;
        /** The agreed timed messages per QP, once {@link #over}. */
        long timed;

        WarmInRounds(WarmInMeeting meeting) {
            this.meeting = meeting;
        }

        /**
         * Ends a round: tells the peer what this side's JIT did and what it proposes, and takes the peer's word.
         *
         * @return the peer's word
         */
        WarmInRound end(WarmUp.JitWork jit, long next, long proposedTimed) {
            WarmInRound mine =
                    new WarmInRound(jit, System.nanoTime() - startNs > WARM_IN_BOUND_NS, next, proposedTimed);
            WarmInRound peer = meeting.roundEnd(mine);
            count++;
            clientCompiledMs +=
                    meeting.isClient() ? jit.compiledMs() : peer.jit().compiledMs();
            serverCompiledMs += meeting.isClient() ? peer.jit().compiledMs() : jit.compiledMs();
            // not after the first round unless a side is overdue: it is the short re-warm (the last 1,000 messages),
            // and one that compiled nothing says nothing of the timed loop, 25x longer, where counters reach C2's
            // thresholds (sendbw22: 64 B, a quiet first round of 1-2 ms, then 68-248 ms of the client's C2 inside the
            // timed loop, 0.5-1.6 against 3.4 Mpps). So at least one round as long as the timed loop runs first.
            if (mine.endsWith(peer) && (count > 1 || mine.overdue() || peer.overdue())) {
                over = true;
                stillBusy = jit.busy() || peer.jit().busy();
                timed = Math.max(proposedTimed, peer.timed());
            }
            return peer;
        }

        /** {@return how the rounds went, for the point's report} */
        WarmInOutcome outcome() {
            return new WarmInOutcome(
                    count, (System.nanoTime() - startNs) / 1_000_000, stillBusy, clientCompiledMs, serverCompiledMs);
        }
    }

    /**
     * How a send_bw warm-in's rounds went (after its JIT wait).
     *
     * @param rounds           the rounds
     * @param ms               their time
     * @param stoppedAtBound   the JIT still compiled in the last round: the warm-in stopped at its bound
     * @param clientCompiledMs the client JVM's compilation time during the rounds
     * @param serverCompiledMs the server JVM's
     */
    record WarmInOutcome(int rounds, long ms, boolean stoppedAtBound, long clientCompiledMs, long serverCompiledMs) {
        /** {@return one line for the point's report} */
        String describe() {
            return String.format(
                    "warm-in: %d rounds in %d ms after the JIT wait, %s (compiled in them: client %d ms, server %d ms)",
                    rounds,
                    ms,
                    stoppedAtBound
                            ? "stopped at its bound with the JIT still compiling"
                            : "the last one compiled nothing",
                    clientCompiledMs,
                    serverCompiledMs);
        }
    }

    /**
     * Messages per QP of one call of {@link #client} in a send_bw warm-in's first part. One call of 19,000 ended only
     * after C2 had compiled its loop with the exit never taken: the exit was a trap, and the next call began in the
     * interpreter. 5,000 (not 1,000) so that a round stamps only some posts ({@link BwResult#postStep}), as the timed
     * loop does: a branch a round always takes is a trap where the timed loop does not.
     */
    static final long WARM_IN_ROUND = 5000;

    /**
     * The calls of {@link #client} that send a warm-in's first part: {@link #WARM_IN_ROUND} messages per QP each, the
     * last one the rest.
     *
     * @param messages the first part's messages per QP
     * @return each call's messages per QP
     */
    static long[] warmInRounds(long messages) {
        long[] rounds = new long[(int) ((messages + WARM_IN_ROUND - 1) / WARM_IN_ROUND)];
        for (int i = 0; i < rounds.length; i++) rounds[i] = Math.min(WARM_IN_ROUND, messages - i * WARM_IN_ROUND);
        return rounds;
    }

    /** The most messages per QP of a send_bw timed loop sized by {@link #timedMessages}. */
    static final long MAX_TIMED_MESSAGES = 1_000_000;

    /**
     * The messages per QP that last {@code minNs} at the rate of a round of {@code messages} in {@code elapsedNs}: at
     * least {@code atLeast}, at most {@link #MAX_TIMED_MESSAGES} (unless {@code atLeast} is more).
     *
     * @param messages  the round's messages per QP
     * @param elapsedNs the round's time
     * @param minNs     the timed loop's shortest time (0: {@code atLeast})
     * @param atLeast   the fewest messages (-n)
     * @return the timed loop's messages per QP
     */
    static long timedMessages(long messages, long elapsedNs, long minNs, long atLeast) {
        if (minNs <= 0 || messages <= 0) return atLeast;
        double perNs = messages / (double) Math.max(1, elapsedNs);
        long n = (long) Math.min(MAX_TIMED_MESSAGES, Math.ceil(perNs * minNs));
        return Math.max(atLeast, n);
    }

    /**
     * Where compare's send_bw warm-in meets the peer over the out-of-band exchange ({@link #sendWarmIn},
     * {@link #sendServer}); both sides make the same calls in the same order.
     */
    interface WarmInMeeting {
        /** After the warm-in's first part, once this side's JIT is quiet: returns when the peer's is too. */
        void jitQuiet();

        /**
         * After a warm-in round: sends this side's word and returns the peer's.
         *
         * @param mine this side's word
         * @return the peer's
         */
        WarmInRound roundEnd(WarmInRound mine);

        /** {@return whether this side is the client (it sends the messages)} */
        boolean isClient();
    }

    /**
     * The messages per QP of an {@code n}-message send_bw warm-in that come before both sides wait for their JIT; the
     * rest (at most {@link WarmUp#REWARM_ITERATIONS}) wakes both devices again right before the timed loop.
     *
     * @param n the warm-in's messages per QP
     * @return the first part's messages per QP
     */
    static long warmInBeforeJitWait(long n) {
        return n - Math.min(n / 2, WarmUp.REWARM_ITERATIONS);
    }
}
