package dev.jrdma.verbs;

/**
 * A shared receive queue's attributes ({@code struct ibv_srq_attr}).
 *
 * @param maxWr  the receive requests it holds
 * @param maxSge scatter entries per receive request
 * @param limit  the armed limit: below this many receives the SRQ raises SRQ_LIMIT_REACHED (0 = not armed)
 */
public record SrqAttr(int maxWr, int maxSge, int limit) {
    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException when {@code maxWr} or {@code maxSge} is below 1, or {@code limit} is negative
     */
    public SrqAttr {
        if (maxWr < 1) throw new IllegalArgumentException("maxWr must be at least 1, not " + maxWr);
        if (maxSge < 1) throw new IllegalArgumentException("maxSge must be at least 1, not " + maxSge);
        if (limit < 0) throw new IllegalArgumentException("limit must not be negative, not " + limit);
    }
}
