package dev.jrdma.netty;

/**
 * Notices that an event loop was off its core while it busy-polled, and then has it sleep at once for a while instead of
 * spinning ({@code -Djrdma.netty.preemptedGapMicros=N}, off by default; {@code -Djrdma.netty.preemptedBackoffMicros}, 5000
 * by default). A loop that spins with nothing else to do comes back to its I/O within a microsecond; when it comes back
 * more than the gap later with no task in between, the scheduler gave its core to another thread meanwhile: the
 * machine has more runnable threads than cores. There a spinning loop holds a core that the thread it waits for (the
 * peer's loop, gRPC's calling thread) needs, and is itself queued behind others when its peer answers; a loop that
 * sleeps (as epoll's does) is woken by the answer and favoured by the scheduler (jrdma-netty's README, sessions 18 and
 * 19). On a quiet machine no turn is that late and the loop spins as before. Owner thread only; times from the caller.
 */
final class PreemptionWatch {
    /** The gap that counts as preemption, in ns; 0: never (the watch is off). */
    static final long DEFAULT_GAP_NANOS = Long.getLong("jrdma.netty.preemptedGapMicros", 0) * 1000;
    /** How long a loop sleeps at once after a preemption, in ns. */
    static final long DEFAULT_BACKOFF_NANOS = Long.getLong("jrdma.netty.preemptedBackoffMicros", 5000) * 1000;

    private static final long NONE = Long.MIN_VALUE;

    private final long gapNanos, backoffNanos;
    /** When the loop last spun a turn with nothing else to do, or {@link #NONE}. */
    private long spunAt = NONE;
    /** Until when the loop sleeps at once (while {@link #backingOff}). */
    private long noSpinUntil;

    private boolean backingOff;
    private long preemptions;

    PreemptionWatch(long gapNanos, long backoffNanos) {
        if (gapNanos < 0 || backoffNanos < 0) throw new IllegalArgumentException("negative gap or back-off");
        this.gapNanos = gapNanos;
        this.backoffNanos = backoffNanos;
    }

    /** Whether the watch does anything (a gap is set). */
    boolean enabled() {
        return gapNanos > 0;
    }

    /** The loop is back at its I/O at {@code now}: a spin turn that long ago means it was off its core. */
    void resumed(long now) {
        if (spunAt != NONE && now - spunAt > gapNanos) {
            noSpinUntil = now + backoffNanos;
            backingOff = true;
            preemptions++;
        }
        spunAt = NONE;
    }

    /** Whether the loop may spin at {@code now} (false: it sleeps at once, within a back-off). */
    boolean maySpin(long now) {
        if (backingOff && now - noSpinUntil >= 0) backingOff = false;
        return !backingOff;
    }

    /** The loop spun a turn at {@code now} and has no task to run: it should be back at once. */
    void spun(long now) {
        spunAt = now;
    }

    /** How many preemptions it noticed (tests, diagnostics). */
    long preemptions() {
        return preemptions;
    }
}
