package dev.jrdma.soft;

/**
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) for one QP, both roles:
 *
 * <ul>
 *   <li>notification point: a packet that arrives CE-marked asks for a CNP to its sender, at most one per
 *       {@link Params#cnpIntervalNanos} per QP, once the marked packets make a full packet ({@link #shouldSendCnp});
 *   <li>reaction point: a CNP cuts the rate at which the requester sends, {@code Rt = Rc; Rc = Rc (1 - alpha/2);
 *       alpha = (1 - g) alpha + g}; alpha decays by {@code (1 - g)} every {@link Params#alphaPeriodNanos} without a
 *       CNP; the rate comes back in rate-increase events, one per {@link Params#increasePeriodNanos} (timer) and one
 *       per {@link Params#increaseBytes} sent (byte counter): while both counters are below {@link Params#fastRecovery}
 *       fast recovery ({@code Rc = (Rt + Rc)/2}), once one of them is there additive increase ({@code Rt += R_AI}
 *       first), once both are hyper increase ({@code Rt += i R_HAI}). CNPs that come within {@link
 *       Params#rateReduceMonitorNanos} of the cut before it cut nothing more (a NIC's {@code rate_reduce_monitor_period}).
 * </ul>
 *
 * <p>Time comes in as arguments (the device's {@link Clock}), so a test draws the curve with a manual clock; the
 * timers run lazily: every call first catches up with the periods that passed. Until the first CNP the QP is not
 * limited and {@link #limited} is false: the requester's fast path only reads that field. Used under the QP's monitor.
 */
final class Dcqcn {
    /**
     * The settings, from system properties {@code jrdma.soft.dcqcn.*} (shown by {@code jrdma devinfo -v}); a rate or
     * byte count of 0 (and a line rate of 0: measured) is "from the line rate", filled in by {@link #at}.
     *
     * <p>DCQCN's published constants (55 us periods, 50 us between CNPs, 40 Mb/s additive steps, a 10 MB byte counter)
     * are made for a NIC on a 40-100 Gb/s line with round trips of microseconds. A software device sends at what its
     * host gives it (44 Mb/s alone under QEMU's TCG, a few Gb/s over a veth), with round trips of a hundred
     * microseconds to milliseconds. With the NIC's constants at such a line alpha decays between two marked packets and
     * one 40 Mb/s step undoes a cut: measured in the QEMU guest, a 20 Mb/s bottleneck and the 100 Gb/s constants left
     * the soft flow 84% of the link and Jain 0.69 against TCP. So the defaults here, chosen with {@code
     * SharedBottleneckModel} (DcqcnTest) against a TCP flow behind 20 Mb/s to 1 Gb/s bottlenecks with 0.1-5 ms round
     * trips: the paper's periods times 30 (1.65 ms alpha and rate-increase periods, 1.5 ms between CNPs: a software
     * device's round trip and timer are tens of times a NIC's), and rates as shares of the line: R_AI = line/300, R_HAI
     * = line/30, the least rate line/1000, the byte counter 15 rate-increase periods at the line (the paper's 10 MB is
     * 15 of its periods at 100 Gb/s). The line is the rate the QP sent at (bytes on the wire) since its rate was last
     * unlimited, measured when a CNP begins a limit ({@link #onCnp}) over at least {@link #MIN_LINE_SAMPLE_NANOS} of
     * unlimited time once a limit measured one, unless {@code lineRateMbps} is set; in the model a line misjudged by 2x
     * either way still shares the link fairly.
     *
     * <p>{@code rateReduceMonitorNanos} (0.75 ms, half the CNP interval): the notification point sends at most one CNP
     * per {@code cnpIntervalNanos}, so CNPs closer together than half of that were held back on the way (a receive
     * thread off the CPU, as under QEMU's TCG, where they came in bursts with tens of ms between) and carry one piece
     * of news: they cut the rate once. Cut once each, a burst took the rate to its least and the next gap let it come
     * back to the line (the model, the sender's threads off the CPU for 40 of every 50 or 80 of every 100 ms, the line
     * held: TCP up to 4/5 of the link, Jain 0.74-0.78; with the monitor too: Jain >= 0.94 and >= 0.88). NICs do the same:
     * NVIDIA's DCQCN reaction point has {@code rate_reduce_monitor_period}, the least time between two rate reductions
     * of a flow.
     */
    record Params(
            boolean enabled,
            long lineRateBps,
            long minRateBps,
            double g,
            long alphaPeriodNanos,
            long increasePeriodNanos,
            long increaseBytes,
            int fastRecovery,
            long additiveBps,
            long hyperBps,
            long cnpIntervalNanos,
            long rateReduceMonitorNanos) {
        /** The defaults: the line measured, every rate and the byte counter from it, the times as above. */
        static Params defaults(boolean enabled) {
            return new Params(enabled, 0, 0, 1.0 / 256, 1_650_000, 1_650_000, 0, 5, 0, 0, 1_500_000, 750_000);
        }

        /**
         * These settings at line rate {@code lineBps}: the line when not set, and each rate or byte count not set
         * from it ({@link #ADDITIVE_SHARE}, {@link #HYPER_SHARE}, {@link #MIN_SHARE}, {@link #COUNTER_PERIODS}).
         *
         * @param lineBps the line rate to use unless one is set, in bits per second
         * @return the settings with every value filled in
         */
        Params at(long lineBps) {
            long line = lineRateBps > 0 ? lineRateBps : lineBps;
            if (line <= 0) throw new IllegalArgumentException("DCQCN line rate must be positive: " + line);
            return new Params(
                    enabled,
                    line,
                    minRateBps > 0 ? minRateBps : Math.max(1, Math.round(line * MIN_SHARE)),
                    g,
                    alphaPeriodNanos,
                    increasePeriodNanos,
                    increaseBytes > 0
                            ? increaseBytes
                            : Math.max(1, Math.round(line / 8.0 * COUNTER_PERIODS * increasePeriodNanos / 1e9)),
                    fastRecovery,
                    additiveBps > 0 ? additiveBps : Math.max(1, Math.round(line * ADDITIVE_SHARE)),
                    hyperBps > 0 ? hyperBps : Math.max(1, Math.round(line * HYPER_SHARE)),
                    cnpIntervalNanos,
                    rateReduceMonitorNanos);
        }

        /** The settings from system properties: {@link #defaults}, each one overridden when set. */
        static Params fromSystemProperties() {
            Params d = defaults(!"off".equals(System.getProperty("jrdma.soft.dcqcn", "on")));
            return new Params(
                    d.enabled,
                    Math.round(number("lineRateMbps", 0) * 1e6),
                    Math.round(number("minRateMbps", 0) * 1e6),
                    number("g", d.g),
                    Math.max(1, Math.round(number("alphaPeriodUs", d.alphaPeriodNanos / 1e3) * 1e3)),
                    Math.max(1, Math.round(number("increasePeriodUs", d.increasePeriodNanos / 1e3) * 1e3)),
                    Math.round(number("increaseBytes", 0)),
                    Integer.getInteger("jrdma.soft.dcqcn.fastRecovery", d.fastRecovery),
                    Math.round(number("additiveMbps", 0) * 1e6),
                    Math.round(number("hyperMbps", 0) * 1e6),
                    Math.round(number("cnpIntervalUs", d.cnpIntervalNanos / 1e3) * 1e3),
                    Math.round(number("rateReduceMonitorUs", d.rateReduceMonitorNanos / 1e3) * 1e3));
        }

        /** Property {@code jrdma.soft.dcqcn.NAME} as a number (fractions allowed: 0.04 Mb/s), else {@code def}. */
        private static double number(String name, double def) {
            String v = System.getProperty("jrdma.soft.dcqcn." + name);
            if (v == null) return def;
            try {
                double d = Double.parseDouble(v.trim());
                if (d < 0 || Double.isNaN(d)) throw new NumberFormatException("negative");
                return d;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("-Djrdma.soft.dcqcn." + name + "=" + v + ": not a number >= 0", e);
            }
        }

        private static String decimal(double v) { // 55 rather than 55.0, 0.04 rather than 0.04000000000000001
            java.math.BigDecimal b = java.math.BigDecimal.valueOf(v).round(new java.math.MathContext(6));
            return b.stripTrailingZeros().toPlainString();
        }

        /** A rate in Mb/s, or how it follows the line when not set. */
        private static String mbps(long bps, String unset) {
            return bps > 0 ? decimal(bps / 1e6) : unset;
        }

        /** For people ({@code jrdma devinfo -v}): every setting with its property's name. */
        java.util.Map<String, String> describe() {
            java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
            m.put("dcqcn", enabled ? "on" : "off");
            m.put("dcqcn.lineRateMbps", mbps(lineRateBps, "measured (the QP's rate before a cut)"));
            m.put("dcqcn.minRateMbps", mbps(minRateBps, "line/" + Math.round(1 / MIN_SHARE)));
            m.put("dcqcn.g", String.valueOf(g));
            m.put("dcqcn.alphaPeriodUs", decimal(alphaPeriodNanos / 1e3));
            m.put("dcqcn.increasePeriodUs", decimal(increasePeriodNanos / 1e3));
            m.put(
                    "dcqcn.increaseBytes",
                    increaseBytes > 0
                            ? String.valueOf(increaseBytes)
                            : COUNTER_PERIODS + " increase periods at the line");
            m.put("dcqcn.fastRecovery", String.valueOf(fastRecovery));
            m.put("dcqcn.additiveMbps", mbps(additiveBps, "line/" + Math.round(1 / ADDITIVE_SHARE)));
            m.put("dcqcn.hyperMbps", mbps(hyperBps, "line/" + Math.round(1 / HYPER_SHARE)));
            m.put("dcqcn.cnpIntervalUs", decimal(cnpIntervalNanos / 1e3));
            m.put("dcqcn.rateReduceMonitorUs", decimal(rateReduceMonitorNanos / 1e3));
            return m;
        }
    }

    /** R_AI, R_HAI and the least rate as shares of the line rate, when not set ({@link Params#at}). */
    static final double ADDITIVE_SHARE = 1.0 / 300, HYPER_SHARE = 1.0 / 30, MIN_SHARE = 1.0 / 1000;
    /** The byte counter, when not set: what the line sends in this many rate-increase periods. */
    static final int COUNTER_PERIODS = 15;
    /** The measured line rate's bounds: a QP that sent nothing measurable takes the most (a cut then bites late). */
    static final long MIN_LINE_BPS = 10_000_000L, MAX_LINE_BPS = 100_000_000_000L;
    /**
     * The least unlimited time a line is measured over once a limit measured one ({@link #lineOf}): under QEMU's TCG
     * the CNPs of a congested QP arrive in bursts tens of ms apart, so a limit could end and the next begin within a
     * burst; measured over the microseconds between, the line was the window's burst into the socket (the guest:
     * lines up to 124 Mb/s for a device that sends 44 alone, a new limit every 0.27 s; the model, the sender's threads
     * off the CPU for 5 of every 10 ms: 100 Gb/s, the soft flow 94% of the link) and the QP kept the link. Shorter
     * unlimited times add up until they make this.
     */
    static final long MIN_LINE_SAMPLE_NANOS = 50_000_000L;

    static final Params DEFAULTS = Params.fromSystemProperties();

    /** The settings as given (rates from the line when 0) and as they apply to the current limit. */
    private final Params settings;

    private Params p;
    /** The current rate Rc and the target rate Rt, in bits per second. */
    private double rate, target;

    private double alpha = 1;
    /** Rate-increase events of the timer and of the byte counter since the last cut. */
    private int timerEvents, byteEvents;

    private long bytesSinceEvent;
    private long lastAlphaTick, lastIncreaseTick;
    private boolean cnpSinceAlphaTick, cnpReceived;
    /** The rate is below line rate: the requester paces its packets ({@link #nextSendAt}). */
    boolean limited;
    /**
     * The pacer (while {@link #limited}): the last packet it let go left at {@code lastSendAt} with {@code lastBytes};
     * the next may go once those bytes took their time at the current rate ({@link #nextSendAt}), so a rate that comes
     * back shortens the wait of a packet already waiting (cut to a few kb/s, one 4 KiB packet's gap at the cut rate
     * would be seconds).
     */
    private long lastSendAt;

    private int lastBytes;
    /** The last CNP this QP sent as notification point (valid once {@link #cnpSent}). */
    private long lastCnpAt;

    private boolean cnpSent;
    /** When the last CNP cut the rate ({@link Params#rateReduceMonitorNanos}). */
    private long lastCutAt;
    /** A limit measured its line ({@link #lineOf}): the next one keeps it unless measured over long enough. */
    private boolean lineMeasured;
    /** The marked bytes that arrived since the last CNP went ({@link #shouldSendCnp}). */
    private long markedBytes;

    Dcqcn(Params settings) {
        this.settings = settings;
        this.p = settings.at(MAX_LINE_BPS);
        rate = target = p.lineRateBps;
    }

    /**
     * The line rate a limit starts from: {@code bytes} sent over {@code nanos} (since the QP's rate was last
     * unlimited), within {@link #MIN_LINE_BPS} and {@link #MAX_LINE_BPS}; nothing measurable (no time passed) is
     * the most.
     */
    static long measuredLine(long bytes, long nanos) {
        if (nanos <= 0) return MAX_LINE_BPS;
        return (long) Math.max(MIN_LINE_BPS, Math.min(MAX_LINE_BPS, bytes * 8e9 / nanos));
    }

    /**
     * The line rate a limit beginning now starts from: {@code bytes} sent over {@code nanos} while the QP's rate was
     * unlimited since the last limit that measured its line (since RTS for the first; {@link #measuredLine}), unless
     * {@code nanos} is less than {@link #MIN_LINE_SAMPLE_NANOS} and an earlier limit measured a line: then that line is
     * held ({@link #lineHeld}) and the caller adds the next unlimited time to these.
     */
    long lineOf(long bytes, long nanos) {
        return lineHeld(nanos) ? p.lineRateBps : measuredLine(bytes, nanos);
    }

    /** Whether a limit beginning after {@code nanos} unlimited keeps the last limit's line ({@link #lineOf}). */
    boolean lineHeld(long nanos) {
        return lineMeasured && nanos < MIN_LINE_SAMPLE_NANOS;
    }

    /**
     * Notification point: a CE-marked packet of {@code bytes} arrived at {@code now}; true when a CNP is to go: none
     * went in the last interval, and the packets marked since the last one add up to {@code fullBytes} (what a full
     * packet of the QP is at least on the wire: its MTU). A switch marks packets, not bytes: a QP of small messages has many more of its bytes' worth marked than
     * one of full packets, and with a CNP for every marked packet it was cut far more often than its share (the model:
     * 256 B WRITEs left TCP 73% of the guest's bottleneck). Full packets: a CNP for each marked one, as the paper's.
     */
    boolean shouldSendCnp(long now, int bytes, int fullBytes) {
        if (!p.enabled) return false;
        markedBytes += bytes;
        if (cnpSent && now - lastCnpAt < p.cnpIntervalNanos) return false;
        if (markedBytes < fullBytes) return false;
        markedBytes = 0;
        cnpSent = true;
        lastCnpAt = now;
        return true;
    }

    /**
     * Reaction point: a CNP arrived at {@code now}: the rate cut, unless the last cut was less than {@link
     * Params#rateReduceMonitorNanos} ago. When it begins a limit, the line rate is {@code lineBps} (the rate the QP sent
     * at lately, {@link #lineOf}) unless one is set, and the rates follow it.
     */
    void onCnp(long now, long lineBps) {
        if (!p.enabled) return;
        if (!limited && settings.lineRateBps == 0) {
            p = settings.at(lineBps);
            rate = target = p.lineRateBps;
            lineMeasured = true;
        }
        catchUp(now);
        if (limited && now - lastCutAt < p.rateReduceMonitorNanos) { // the same news again: no second cut
            cnpSinceAlphaTick = true;
            return;
        }
        lastCutAt = now;
        target = rate;
        rate = Math.max(p.minRateBps, rate * (1 - alpha / 2));
        alpha = (1 - p.g) * alpha + p.g;
        cnpSinceAlphaTick = true;
        timerEvents = byteEvents = 0;
        bytesSinceEvent = 0;
        lastIncreaseTick = now;
        if (!cnpReceived) {
            cnpReceived = true;
            lastAlphaTick = now;
        }
        if (!limited) {
            limited = true;
            lastSendAt = now;
            lastBytes = 0;
        }
    }

    /**
     * While {@link #limited}: whether a packet may go at {@code now}; when it may, it is counted as sent
     * ({@code bytes} on the wire) and the pacer moves on by its time at the current rate.
     */
    boolean trySend(long now, int bytes) {
        catchUp(now);
        if (!limited) return true;
        long due = nextSendAt();
        if (now - due < 0) return false;
        // a pacer that fell behind (an idle QP, a late timer) does not save up a burst: it starts from now
        lastSendAt = now - due > p.increasePeriodNanos ? now : due;
        lastBytes = bytes;
        bytesSinceEvent += bytes;
        while (bytesSinceEvent >= p.increaseBytes && limited) {
            bytesSinceEvent -= p.increaseBytes;
            byteEvents++;
            increase();
        }
        return true;
    }

    /** When the pacer lets the next packet go, at the current rate (a rate-increase event can bring it forward). */
    long nextSendAt() {
        return lastSendAt + (long) (lastBytes * 8 * 1e9 / rate);
    }

    /** The settings of the current limit (the line rate and what follows from it). */
    Params current() {
        return p;
    }

    /** The current rate Rc, in bits per second. */
    long rateBps() {
        return (long) rate;
    }

    double alpha() {
        return alpha;
    }

    /** Runs the alpha and rate-increase timers for the periods that ended before {@code now}. */
    void catchUp(long now) {
        if (!cnpReceived) return;
        long periods = (now - lastAlphaTick) / p.alphaPeriodNanos;
        if (periods > 0) { // a period with a CNP in it does not decay alpha; the ones after it do
            alpha *= Math.pow(1 - p.g, cnpSinceAlphaTick ? periods - 1 : periods);
            lastAlphaTick += periods * p.alphaPeriodNanos;
            cnpSinceAlphaTick = false;
        }
        while (limited && now - lastIncreaseTick >= p.increasePeriodNanos) {
            lastIncreaseTick += p.increasePeriodNanos;
            timerEvents++;
            increase();
        }
    }

    /** One rate-increase event: fast recovery, additive or hyper increase by the two counters; line rate ends the limit. */
    private void increase() {
        int f = p.fastRecovery;
        if (Math.min(timerEvents, byteEvents) >= f)
            target += (Math.min(timerEvents, byteEvents) - f + 1.0) * p.hyperBps;
        else if (Math.max(timerEvents, byteEvents) >= f) target += p.additiveBps;
        target = Math.min(target, p.lineRateBps);
        rate = (target + rate) / 2;
        if (p.lineRateBps - rate < Math.min(1_000_000, p.lineRateBps / 100)) { // at the line: back to unlimited
            rate = target = p.lineRateBps;
            limited = false;
        }
    }
}
