package dev.jrdma.soft;

/**
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) for one QP, both roles:
 *
 * <ul>
 *   <li>notification point: a packet that arrives CE-marked asks for a CNP to its sender, at most one per
 *       {@link Params#cnpIntervalNanos} per QP ({@link #shouldSendCnp});
 *   <li>reaction point: a CNP cuts the rate at which the requester sends, {@code Rt = Rc; Rc = Rc (1 - alpha/2);
 *       alpha = (1 - g) alpha + g}; alpha decays by {@code (1 - g)} every {@link Params#alphaPeriodNanos} without a
 *       CNP; the rate comes back in rate-increase events, one per {@link Params#increasePeriodNanos} (timer) and one
 *       per {@link Params#increaseBytes} sent (byte counter): while both counters are below {@link Params#fastRecovery}
 *       fast recovery ({@code Rc = (Rt + Rc)/2}), once one of them is there additive increase ({@code Rt += R_AI}
 *       first), once both are hyper increase ({@code Rt += i R_HAI}).
 * </ul>
 *
 * <p>Time comes in as arguments (the device's {@link Clock}), so a test draws the curve with a manual clock; the
 * timers run lazily: every call first catches up with the periods that passed. Until the first CNP the QP is not
 * limited and {@link #limited} is false: the requester's fast path only reads that field. Used under the QP's monitor.
 */
final class Dcqcn {
    /**
     * The settings, from system properties {@code jrdma.soft.dcqcn.*} (shown by {@code jrdma devinfo -v}).
     *
     * <p>DCQCN's constants are made for one packet time: the paper's 55 us periods, 50 us between CNPs, 40 Mb/s additive
     * steps and 10 MB byte counter fit a line of tens of Gb/s, where a 4 KB packet takes about a microsecond. A device
     * that sends at 100 Mb/s takes a thousand times longer per packet: with the same constants alpha decays between
     * two marked packets, a step of 40 Mb/s is 40% of the line every 55 us, and a bottleneck below the line rate never
     * holds the rate down (measured in the QEMU guest, a 20 Mb/s bottleneck and the default 100 Gb/s line: 2,314 CNPs
     * left the rate at 99.6% of the line). So the line rate scales the other
     * constants: each is the paper's (as this device applies them at its default line rate, {@link
     * #REFERENCE_LINE_BPS}) times (reference / line) for times and (line / reference) for rates (the byte counter, a
     * rate times a time, stays), unless set on its own: the same curve in units of the line's packet time.
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
            long cnpIntervalNanos) {
        /**
         * The paper's settings (g 1/256, 55 us periods, F 5, 10 MB byte counter, R_AI 40 Mb/s, R_HAI 10x, 10 Mb/s least,
         * 50 us between CNPs) at {@link #REFERENCE_LINE_BPS}, scaled to {@code lineRateBps}.
         *
         * @param enabled whether DCQCN acts (CNPs sent and taken)
         * @param lineRateBps the rate the device sends at unlimited, in bits per second
         * @return the settings for that line rate
         */
        static Params scaledTo(boolean enabled, long lineRateBps) {
            if (lineRateBps <= 0)
                throw new IllegalArgumentException("DCQCN line rate must be positive: " + lineRateBps);
            double slower = (double) REFERENCE_LINE_BPS / lineRateBps; // a packet takes this many times longer
            return new Params(
                    enabled,
                    lineRateBps,
                    Math.max(1, Math.round(10e6 / slower)),
                    1.0 / 256,
                    Math.max(1, Math.round(55_000 * slower)),
                    Math.max(1, Math.round(55_000 * slower)),
                    10L << 20, // bytes are a rate times a time: the same at every line rate
                    5,
                    Math.max(1, Math.round(40e6 / slower)),
                    Math.max(1, Math.round(400e6 / slower)),
                    Math.max(1, Math.round(50_000 * slower)));
        }

        /** The settings from system properties: {@link #scaledTo} the line rate, each one overridden when set. */
        static Params fromSystemProperties() {
            double lineMbps = number("lineRateMbps", REFERENCE_LINE_BPS / 1e6);
            Params d =
                    scaledTo(!"off".equals(System.getProperty("jrdma.soft.dcqcn", "on")), Math.round(lineMbps * 1e6));
            return new Params(
                    d.enabled,
                    d.lineRateBps,
                    Math.round(number("minRateMbps", d.minRateBps / 1e6) * 1e6),
                    number("g", d.g),
                    Math.max(1, Math.round(number("alphaPeriodUs", d.alphaPeriodNanos / 1e3) * 1e3)),
                    Math.max(1, Math.round(number("increasePeriodUs", d.increasePeriodNanos / 1e3) * 1e3)),
                    Math.round(number("increaseBytes", d.increaseBytes)),
                    Integer.getInteger("jrdma.soft.dcqcn.fastRecovery", d.fastRecovery),
                    Math.round(number("additiveMbps", d.additiveBps / 1e6) * 1e6),
                    Math.round(number("hyperMbps", d.hyperBps / 1e6) * 1e6),
                    Math.round(number("cnpIntervalUs", d.cnpIntervalNanos / 1e3) * 1e3));
        }

        /** Property {@code jrdma.soft.dcqcn.NAME} as a number (fractions allowed: 0.04 Mb/s), else {@code def}. */
        private static double number(String name, double def) {
            String v = System.getProperty("jrdma.soft.dcqcn." + name);
            if (v == null) return def;
            try {
                return Double.parseDouble(v.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("-Djrdma.soft.dcqcn." + name + "=" + v + ": not a number", e);
            }
        }

        private static String decimal(double v) { // 55 rather than 55.0, 0.04 rather than 0.04000000000000001
            java.math.BigDecimal b = java.math.BigDecimal.valueOf(v).round(new java.math.MathContext(6));
            return b.stripTrailingZeros().toPlainString();
        }

        /** For people ({@code jrdma devinfo -v}): every setting with its property's name. */
        java.util.Map<String, String> describe() {
            java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
            m.put("dcqcn", enabled ? "on" : "off");
            m.put("dcqcn.lineRateMbps", decimal(lineRateBps / 1e6));
            m.put("dcqcn.minRateMbps", decimal(minRateBps / 1e6));
            m.put("dcqcn.g", String.valueOf(g));
            m.put("dcqcn.alphaPeriodUs", decimal(alphaPeriodNanos / 1e3));
            m.put("dcqcn.increasePeriodUs", decimal(increasePeriodNanos / 1e3));
            m.put("dcqcn.increaseBytes", String.valueOf(increaseBytes));
            m.put("dcqcn.fastRecovery", String.valueOf(fastRecovery));
            m.put("dcqcn.additiveMbps", decimal(additiveBps / 1e6));
            m.put("dcqcn.hyperMbps", decimal(hyperBps / 1e6));
            m.put("dcqcn.cnpIntervalUs", decimal(cnpIntervalNanos / 1e3));
            return m;
        }
    }

    /** The line rate at which {@link Params#scaledTo} gives the paper's constants unchanged (the default line rate). */
    static final long REFERENCE_LINE_BPS = 100_000_000_000L;

    static final Params DEFAULTS = Params.fromSystemProperties();

    private final Params p;
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
    /** When the pacer lets the next packet go (while {@link #limited}). */
    private long nextSendAt;
    /** The last CNP this QP sent as notification point (valid once {@link #cnpSent}). */
    private long lastCnpAt;

    private boolean cnpSent;

    Dcqcn(Params p) {
        this.p = p;
        rate = target = p.lineRateBps;
    }

    /** Notification point: a CE-marked packet arrived at {@code now}; true when a CNP is to go (not one in the last interval). */
    boolean shouldSendCnp(long now) {
        if (!p.enabled) return false;
        if (cnpSent && now - lastCnpAt < p.cnpIntervalNanos) return false;
        cnpSent = true;
        lastCnpAt = now;
        return true;
    }

    /** Reaction point: a CNP arrived at {@code now}: the rate cut. */
    void onCnp(long now) {
        if (!p.enabled) return;
        catchUp(now);
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
            nextSendAt = now;
        }
    }

    /**
     * While {@link #limited}: whether a packet may go at {@code now}; when it may, it is counted as sent
     * ({@code bytes} on the wire) and the pacer moves on by its time at the current rate.
     */
    boolean trySend(long now, int bytes) {
        catchUp(now);
        if (!limited) return true;
        if (now - nextSendAt < 0) return false;
        // a pacer that fell behind (an idle QP, a late timer) does not save up a burst: it starts from now
        long from = now - nextSendAt > p.increasePeriodNanos ? now : nextSendAt;
        nextSendAt = from + (long) (bytes * 8 * 1e9 / rate);
        bytesSinceEvent += bytes;
        while (bytesSinceEvent >= p.increaseBytes && limited) {
            bytesSinceEvent -= p.increaseBytes;
            byteEvents++;
            increase();
        }
        return true;
    }

    /** When the pacer lets the next packet go. */
    long nextSendAt() {
        return nextSendAt;
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
        if (p.lineRateBps - rate < 1_000_000) { // within 1 Mb/s of line rate: back to unlimited
            rate = target = p.lineRateBps;
            limited = false;
        }
    }
}
