package dev.jrdma.nativeverbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One caller at a time in a native queue's data path (a QP's send or receive queue, a CQ's poll), and a close that
 * waits for the caller in flight before the queue is freed. Taking it is one compare-and-set, leaving it one
 * release store: the cost a single-threaded poster pays, with no monitor. Callers that find it busy spin (a post
 * or poll holds it for one short native call); once {@link #shut} it refuses everyone for good.
 *
 * <p>It guards the queue's own native arrays (work requests, SGEs, completions), which one caller at a time may
 * fill, and the native object against a concurrent destroy: the destroy runs after {@link #shut}.
 */
final class QueueGate {
    private static final int FREE = 0, BUSY = 1, SHUT = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(QueueGate.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through STATE
    private volatile int state;

    /** Takes the gate; false when it is shut (the queue is being destroyed). */
    boolean enter() {
        return STATE.compareAndSet(this, FREE, BUSY) || enterContended();
    }

    private boolean enterContended() {
        for (int spins = 1; ; spins++) {
            int s = (int) STATE.getVolatile(this);
            if (s == SHUT) return false;
            if (s == FREE && STATE.compareAndSet(this, FREE, BUSY)) return true;
            pause(spins);
        }
    }

    /** Leaves the gate taken by {@link #enter}. */
    void exit() {
        STATE.setRelease(this, FREE);
    }

    /** Waits for the caller in flight, then refuses every later {@link #enter}. Idempotent. */
    void shut() {
        for (int spins = 1; ; spins++) {
            int s = (int) STATE.getVolatile(this);
            if (s == SHUT) return;
            if (s == FREE && STATE.compareAndSet(this, FREE, SHUT)) return;
            pause(spins);
        }
    }

    boolean isShut() {
        return (int) STATE.getVolatile(this) == SHUT;
    }

    private static void pause(int spins) {
        // the holder may have been descheduled: give it the core now and then
        if ((spins & 63) == 0) Thread.yield(); else Thread.onSpinWait();
    }
}
