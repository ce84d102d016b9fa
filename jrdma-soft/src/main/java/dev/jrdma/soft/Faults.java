package dev.jrdma.soft;

import java.util.Locale;

/**
 * What a {@link FaultyLink} does to the packets a software device sends: each packet is dropped, held back (so later
 * ones overtake it), duplicated or corrupted (one bit flipped, so the receiver's ICRC check fails) with the given
 * probabilities, and every packet may be delayed. Decisions are drawn from {@code seed} and the packet's own bytes,
 * so the same seed damages the same packets the same way whatever the threads' interleaving.
 *
 * <p>Tests pass one to {@link SoftDevice#withFaults}; for manual runs the system property {@code jrdma.soft.faults}
 * applies one to every soft device the JVM opens, e.g. {@code -Djrdma.soft.faults=seed=7,drop=0.01,reorder=0.01,duplicate=0.01,corrupt=0.001,delay=200us}
 * or the short form {@code -Djrdma.soft.faults=loss=0.1} (see {@link #loss}).
 *
 * @param seed          the seed of every decision
 * @param drop          probability that a packet is not sent at all
 * @param reorder       probability that a packet is held back for up to {@code reorderNanos} (later packets overtake it)
 * @param duplicate     probability that a packet is sent twice (the copy a little later)
 * @param corrupt       probability that one bit of a packet is flipped (the receiver counts it in {@code rx_bad_icrc})
 * @param delayNanos    a delay added to every packet (0: none)
 * @param reorderNanos  the longest a held-back packet waits
 */
record Faults(
        long seed, double drop, double reorder, double duplicate, double corrupt, long delayNanos, long reorderNanos) {
    /** The system property that applies faults to every soft device of the JVM (manual runs). */
    static final String PROPERTY = "jrdma.soft.faults";

    static final long DEFAULT_REORDER_NANOS = 1_000_000;

    Faults {
        check("drop", drop);
        check("reorder", reorder);
        check("duplicate", duplicate);
        check("corrupt", corrupt);
        if (delayNanos < 0 || reorderNanos < 0) throw new IllegalArgumentException("delays must not be negative");
    }

    private static void check(String name, double p) {
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException(name + "=" + p + " is not a probability (0..1)");
    }

    /** {@code p} of loss, of reordering and of duplication, and a tenth of that of corruption. */
    static Faults loss(double p, long seed) {
        return new Faults(seed, p, p, p, p / 10, 0, DEFAULT_REORDER_NANOS);
    }

    /** Whether this damages anything at all. */
    boolean any() {
        return drop > 0 || reorder > 0 || duplicate > 0 || corrupt > 0 || delayNanos > 0;
    }

    /** The faults of {@link #PROPERTY}, or null when it is unset. */
    static Faults fromSystemProperty() {
        String s = System.getProperty(PROPERTY);
        return s == null || s.isBlank() ? null : parse(s);
    }

    /**
     * Parses {@code key=value} pairs separated by commas: {@code seed}, {@code drop}, {@code reorder},
     * {@code duplicate}, {@code corrupt} (probabilities), {@code delay}, {@code reorder-delay} (a number with
     * {@code ns}, {@code us} or {@code ms}), and {@code loss} (sets drop, reorder, duplicate and corrupt as {@link #loss} does).
     */
    static Faults parse(String spec) {
        long seed = 1, delay = 0, reorderDelay = DEFAULT_REORDER_NANOS;
        double drop = 0, reorder = 0, duplicate = 0, corrupt = 0;
        for (String part : spec.split(",")) {
            if (part.isBlank()) continue;
            int eq = part.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException(PROPERTY + ": '" + part + "' is not key=value");
            String key = part.substring(0, eq).trim().toLowerCase(Locale.ROOT),
                    value = part.substring(eq + 1).trim();
            try {
                switch (key) {
                    case "seed" -> seed = Long.parseLong(value);
                    case "drop" -> drop = Double.parseDouble(value);
                    case "reorder" -> reorder = Double.parseDouble(value);
                    case "duplicate" -> duplicate = Double.parseDouble(value);
                    case "corrupt" -> corrupt = Double.parseDouble(value);
                    case "delay" -> delay = nanos(value);
                    case "reorder-delay" -> reorderDelay = nanos(value);
                    case "loss" -> {
                        double p = Double.parseDouble(value);
                        drop = reorder = duplicate = p;
                        corrupt = p / 10;
                    }
                    default ->
                        throw new IllegalArgumentException(PROPERTY + ": unknown key '" + key
                                + "' (seed, drop, reorder, duplicate, corrupt, delay, reorder-delay, loss)");
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(PROPERTY + ": '" + part + "': " + value + " is not a number", e);
            }
        }
        return new Faults(seed, drop, reorder, duplicate, corrupt, delay, reorderDelay);
    }

    private static long nanos(String v) {
        String s = v.toLowerCase(Locale.ROOT);
        if (s.endsWith("ns"))
            return Long.parseLong(s.substring(0, s.length() - 2).trim());
        if (s.endsWith("us"))
            return Long.parseLong(s.substring(0, s.length() - 2).trim()) * 1_000;
        if (s.endsWith("ms"))
            return Long.parseLong(s.substring(0, s.length() - 2).trim()) * 1_000_000;
        throw new NumberFormatException("a delay needs a unit: ns, us or ms");
    }
}
