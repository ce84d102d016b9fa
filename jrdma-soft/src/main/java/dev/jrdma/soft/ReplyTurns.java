package dev.jrdma.soft;

/**
 * QPs with READ responses left to send: each gets one turn (a send window) per pass of the receive loop, so a large
 * READ never keeps the driving thread from the socket (and from other QPs) until its last response is out.
 */
final class ReplyTurns {
    private final Object lock = new Object();
    private SoftQp[] waiting = new SoftQp[16];
    /** QPs in {@link #waiting} (written under {@link #lock}; read without it first: most drives find none). */
    private volatile int count;

    private final Counter.Set counters;
    private final String device;

    ReplyTurns(Counter.Set counters, String device) {
        this.counters = counters;
        this.device = device;
    }

    /** A QP (under its lock) has more READ responses to send than one turn allows: it gets another turn. */
    void request(SoftQp qp) {
        synchronized (lock) {
            int c = count;
            if (c == waiting.length) waiting = java.util.Arrays.copyOf(waiting, waiting.length * 2);
            waiting[c] = qp;
            count = c + 1;
        }
    }

    /** Gives every QP that asked for it one more turn (with {@code r}'s scratch array); returns whether some still want more. */
    boolean run(Receiver r) {
        int n;
        SoftQp[] running;
        if (count == 0) return false; // every drive asks, empty polls included: no monitor for the usual answer
        synchronized (lock) {
            n = count;
            if (n == 0) return false;
            if (r.turnsRunning.length < n) r.turnsRunning = new SoftQp[waiting.length];
            running = r.turnsRunning;
            System.arraycopy(waiting, 0, running, 0, n);
            java.util.Arrays.fill(waiting, 0, n, null);
            count = 0;
        }
        for (int i = 0; i < n; i++) {
            SoftQp qp = running[i];
            running[i] = null;
            try {
                qp.continueReplies();
            } catch (RuntimeException | Error e) {
                counters.add(Counter.RX_DROPPED);
                System.getLogger("dev.jrdma.soft")
                        .log(
                                System.Logger.Level.WARNING,
                                "soft device " + device + ": sending replies of " + qp + " failed",
                                e);
            }
        }
        synchronized (lock) {
            return count > 0;
        }
    }
}
