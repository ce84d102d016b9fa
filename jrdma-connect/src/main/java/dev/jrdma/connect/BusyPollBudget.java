package dev.jrdma.connect;

/**
 * Whether an idle {@link ProgressCore} owner polls on or sleeps. It polls on for the budget after its last work (a
 * reply to a message just sent comes sooner than a sleeping thread wakes up) only while that pays: while at least half
 * of its last {@link #MEMORY} waits for work ended within the budget. When waits keep running past it (a server
 * between a client's bursts, a gRPC call whose other threads take longer than the budget, a peer starved of CPU), each
 * spin costs the whole budget's CPU, on a machine whose other threads may need it, and the wake-up is paid anyway: the
 * owner then sleeps at once. A wait counts from the last work to the next whether the owner spun or slept through it,
 * so short waits are seen coming back while it sleeps, and the spin comes back with them.
 *
 * <p>Owner only, no clock of its own: the core passes the times in.
 */
final class BusyPollBudget {
    /** How many of the last waits decide. */
    static final int MEMORY = 8;

    private static final int ALL = (1 << MEMORY) - 1;

    private volatile long budgetNanos;
    /** One bit per recent wait, newest lowest: 1 ended within the budget. All 1 at first: spin, as before. */
    private int history = ALL;

    BusyPollBudget(long budgetNanos) {
        this.budgetNanos = budgetNanos;
    }

    long budgetNanos() {
        return budgetNanos;
    }

    void budgetNanos(long nanos) {
        budgetNanos = nanos;
    }

    /**
     * {@return whether an owner idle for {@code idleNanos} since its last work (or its last wake-up) polls on}: within
     * the budget, and polling on has paid lately (always with {@link ProgressCore#SPIN_FOREVER}).
     */
    boolean spins(long idleNanos) {
        long budget = budgetNanos;
        if (budget == ProgressCore.SPIN_FOREVER) return true;
        return idleNanos < budget && pays();
    }

    /** {@return whether at least half of the recent waits ended within the budget} */
    boolean pays() {
        return Integer.bitCount(history) * 2 >= MEMORY;
    }

    /** Work came after the owner had waited {@code waitNanos} for it (spinning, sleeping or both). */
    void waited(long waitNanos) {
        history = ((history << 1) | (waitNanos < budgetNanos ? 1 : 0)) & ALL;
    }
}
