package dev.jrdma.nativeverbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One caller at a time in a native queue's data path (a QP's send or receive queue, a CQ's poll), and a close that
 * waits for the caller in flight before the queue is freed. Once {@link #shut} it refuses everyone for good.
 *
 * <p>It guards the queue's own native arrays (work requests, SGEs, completions), which one caller at a time may
 * fill, and the native object against a concurrent destroy: the destroy runs after {@link #shut}.
 *
 * <p>Almost always one thread posts to a queue (or polls a CQ), so the gate is biased to the first thread that
 * enters it: that owner enters with a plain store ({@code ownerInside = 1}) and a plain load of the state, and
 * leaves with a release store, no atomic instruction. Any other thread, and {@link #shut}, first takes the bias
 * away for good: it moves the state from BIASED to REVOKING, runs {@link Membarrier#fence} (a full barrier on every
 * CPU running this process), then waits for {@code ownerInside == 0}. The fence orders the owner's store before its
 * load, so either the owner saw REVOKING (and takes the slow path) or the revoker sees the owner inside (and
 * waits). From then on everyone, the owner included, takes the gate with one compare-and-set (FREE to BUSY) and
 * leaves it with a release store; callers that find it busy spin (a post or poll holds it for one short native
 * call). Without membarrier ({@link Membarrier#AVAILABLE} false) the gate is never biased.
 *
 * <p>The owner's store and load are VarHandle opaque accesses: HotSpot's JIT keeps unsafe accesses that are not
 * plain in program order (a CPU-order barrier around each), which is the compiler half of the pairing; the
 * membarrier is the CPU half.
 */
final class QueueGate {
    /** NEW: never entered; FREE/BUSY: the compare-and-set gate; BIASED: the owner's; REVOKING: being taken from it. */
    private static final int NEW = 0, FREE = 1, BUSY = 2, BIASED = 3, REVOKING = 4, SHUT = 5;

    private static final VarHandle STATE, INSIDE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(QueueGate.class, "state", int.class);
            INSIDE = l.findVarHandle(QueueGate.class, "ownerInside", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The thread the gate is biased to: set once, by the first caller, while it holds the gate. */
    private Thread owner;
    /** 1 while the owner is inside on the biased path; written only by the owner (through INSIDE). */
    @SuppressWarnings("unused")
    private int ownerInside;
    /** Set by the first caller: its exit biases the gate to it (read and written only by the gate's holder). */
    private boolean biasOnExit;

    /** Takes the gate; false when it is shut (the queue is being destroyed). */
    boolean enter() {
        if (owner == Thread.currentThread()) {
            INSIDE.setOpaque(this, 1);
            if ((int) STATE.getOpaque(this) == BIASED)
                return true; // a revoker's fence orders the store above before this load
            INSIDE.setRelease(this, 0);
        }
        return STATE.compareAndSet(this, FREE, BUSY) || enterContended();
    }

    private boolean enterContended() {
        for (int spins = 1; ; spins++) {
            int s = (int) STATE.getVolatile(this);
            if (s == SHUT) return false;
            if (s == FREE && STATE.compareAndSet(this, FREE, BUSY)) return true;
            if (s == NEW && STATE.compareAndSet(this, NEW, BUSY)) {
                if (Membarrier.AVAILABLE) {
                    owner = Thread.currentThread();
                    biasOnExit = true;
                }
                return true;
            }
            if (s == BIASED) revoke(FREE);
            else pause(spins);
        }
    }

    /** Leaves the gate taken by {@link #enter}. */
    void exit() {
        if (owner == Thread.currentThread() && (int) INSIDE.getOpaque(this) == 1) { // the owner's own write
            INSIDE.setRelease(this, 0);
        } else if (biasOnExit) {
            biasOnExit = false;
            STATE.setRelease(this, BIASED);
        } else {
            STATE.setRelease(this, FREE);
        }
    }

    /**
     * Takes the bias away from the owner for good, then sets {@code next}; false when another thread was first (the
     * caller looks at the state again).
     */
    private boolean revoke(int next) {
        if (!STATE.compareAndSet(this, BIASED, REVOKING)) return false;
        Membarrier.fence(); // now the owner's ownerInside = 1 is visible, or its next state load sees REVOKING
        for (int spins = 1; (int) INSIDE.getAcquire(this) != 0; spins++) pause(spins);
        STATE.setVolatile(this, next);
        return true;
    }

    /** Waits for the caller in flight, then refuses every later {@link #enter}. Idempotent. */
    void shut() {
        for (int spins = 1; ; spins++) {
            int s = (int) STATE.getVolatile(this);
            if (s == SHUT) return;
            if ((s == FREE || s == NEW) && STATE.compareAndSet(this, s, SHUT)) return;
            if (s == BIASED && revoke(SHUT)) return;
            pause(spins);
        }
    }

    boolean isShut() {
        return (int) STATE.getVolatile(this) == SHUT;
    }

    /** Whether the gate is biased to a thread now (for tests). */
    boolean isBiased() {
        return (int) STATE.getVolatile(this) == BIASED;
    }

    private static void pause(int spins) {
        // the holder may have been descheduled: give it the core now and then
        if ((spins & 63) == 0) Thread.yield();
        else Thread.onSpinWait();
    }
}
