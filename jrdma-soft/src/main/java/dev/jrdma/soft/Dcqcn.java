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
    /** The settings, from system properties {@code jrdma.soft.dcqcn.*} (shown by {@code jrdma devinfo -v}). */
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
        /** The defaults: the paper's (g 1/256, 55 us periods, F 5, 10 MB byte counter, R_AI 40 Mb/s, R_HAI 10x). */
        static Params fromSystemProperties() {
            return new Params(
                    !"off".equals(System.getProperty("jrdma.soft.dcqcn", "on")),
                    mbps("lineRateMbps", 100_000),
                    mbps("minRateMbps", 10),
                    Double.parseDouble(System.getProperty("jrdma.soft.dcqcn.g", String.valueOf(1.0 / 256))),
                    Long.getLong("jrdma.soft.dcqcn.alphaPeriodUs", 55) * 1000,
                    Long.getLong("jrdma.soft.dcqcn.increasePeriodUs", 55) * 1000,
                    Long.getLong("jrdma.soft.dcqcn.increaseBytes", 10L << 20),
                    Integer.getInteger("jrdma.soft.dcqcn.fastRecovery", 5),
                    mbps("additiveMbps", 40),
                    mbps("hyperMbps", 400),
                    Long.getLong("jrdma.soft.dcqcn.cnpIntervalUs", 50) * 1000);
        }

        private static long mbps(String name, long def) {
            return Long.getLong("jrdma.soft.dcqcn." + name, def) * 1_000_000;
        }

        /** For people ({@code jrdma devinfo -v}): every setting with its property's name. */
        java.util.Map<String, String> describe() {
            java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
            m.put("dcqcn", enabled ? "on" : "off");
            m.put("dcqcn.lineRateMbps", String.valueOf(lineRateBps / 1_000_000));
            m.put("dcqcn.minRateMbps", String.valueOf(minRateBps / 1_000_000));
            m.put("dcqcn.g", String.valueOf(g));
            m.put("dcqcn.alphaPeriodUs", String.valueOf(alphaPeriodNanos / 1000));
            m.put("dcqcn.increasePeriodUs", String.valueOf(increasePeriodNanos / 1000));
            m.put("dcqcn.increaseBytes", String.valueOf(increaseBytes));
            m.put("dcqcn.fastRecovery", String.valueOf(fastRecovery));
            m.put("dcqcn.additiveMbps", String.valueOf(additiveBps / 1_000_000));
            m.put("dcqcn.hyperMbps", String.valueOf(hyperBps / 1_000_000));
            m.put("dcqcn.cnpIntervalUs", String.valueOf(cnpIntervalNanos / 1000));
            return m;
        }
    }

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
