package dev.jrdma.soft.wire;

/**
 * 24-bit packet sequence number arithmetic. PSNs compare modulo 2^24: {@code a} is after {@code b} when
 * {@code (a - b) mod 2^24} lies in the forward half of the space (1 .. 2^23 - 1).
 */
public final class Psn {
    public static final int MASK = 0xFF_FFFF;
    /** Half the PSN space: the largest window over which an ordering is defined. */
    public static final int HALF = 1 << 23;

    private Psn() {}

    /** {@code psn + n} modulo 2^24. */
    public static int add(int psn, int n) { return (psn + n) & MASK; }

    /** {@code psn + 1} modulo 2^24. */
    public static int next(int psn) { return (psn + 1) & MASK; }

    /** Signed distance {@code a - b} in the range -2^23 .. 2^23 - 1. */
    public static int diff(int a, int b) { return ((a - b) << 8) >> 8; }

    /** Negative, zero or positive as {@code a} is before, equal to or after {@code b} (modulo 2^24). */
    public static int compare(int a, int b) { return diff(a, b); }

    public static boolean before(int a, int b) { return diff(a, b) < 0; }
    public static boolean after(int a, int b) { return diff(a, b) > 0; }

    /** Whether {@code psn} lies in {@code [start, start + size)} modulo 2^24. */
    public static boolean inWindow(int psn, int start, int size) {
        return ((psn - start) & MASK) < size;
    }
}
