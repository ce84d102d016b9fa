package dev.jrdma.soft.wire;

/**
 * 24-bit packet sequence number arithmetic. PSNs compare modulo 2^24: {@code a} is after {@code b} when
 * {@code (a - b) mod 2^24} lies in the forward half of the space (1 .. 2^23 - 1).
 */
public final class Psn {
    /** The 24 bits of a PSN. */
    public static final int MASK = 0xFF_FFFF;
    /** Half the PSN space: the largest window over which an ordering is defined. */
    public static final int HALF = 1 << 23;

    private Psn() {}

    /**
     * {@return {@code psn + n} modulo 2^24}
     *
     * @param psn a PSN
     * @param n the packets to add (negative goes back)
     */
    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /**
     * {@return {@code psn + 1} modulo 2^24}
     *
     * @param psn a PSN
     */
    public static int next(int psn) {
        return (psn + 1) & MASK;
    }

    /**
     * {@return the signed distance {@code a - b}, in the range -2^23 .. 2^23 - 1}
     *
     * @param a a PSN
     * @param b a PSN
     */
    public static int diff(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    /**
     * {@return negative, zero or positive as {@code a} is before, equal to or after {@code b} (modulo 2^24)}
     *
     * @param a a PSN
     * @param b a PSN
     */
    public static int compare(int a, int b) {
        return diff(a, b);
    }

    /**
     * {@return whether {@code a} comes before {@code b} (modulo 2^24)}
     *
     * @param a a PSN
     * @param b a PSN
     */
    public static boolean before(int a, int b) {
        return diff(a, b) < 0;
    }
    /**
     * {@return whether {@code a} comes after {@code b} (modulo 2^24)}
     *
     * @param a a PSN
     * @param b a PSN
     */
    public static boolean after(int a, int b) {
        return diff(a, b) > 0;
    }

    /**
     * {@return whether {@code psn} lies in {@code [start, start + size)} modulo 2^24}
     *
     * @param psn the PSN to test
     * @param start the window's first PSN
     * @param size the window's size in packets
     */
    public static boolean inWindow(int psn, int start, int size) {
        return ((psn - start) & MASK) < size;
    }
}
