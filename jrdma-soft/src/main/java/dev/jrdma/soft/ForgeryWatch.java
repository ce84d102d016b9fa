package dev.jrdma.soft;

/**
 * Notices when someone sweeps a connected QP's PSN space (issue 21 §6). A peer of the connection never sends a packet
 * far from the window it shares with the QP: its requests are within its own send window of the responder's expected
 * PSN (jrdma's at most 1,024 packets plus one READ chunk, rxe's 128 unacknowledged PSNs), its responses within the
 * QP's outstanding requests, and a stale duplicate lags by no more than a window. A forger who knows the QP number but
 * not the PSN sends PSNs spread over all 2^24, nearly all of them {@link #FAR} or more from the window, and until it
 * finds the window none of them is obeyed. Each such packet (and each packet from another source port than the
 * peer's) is {@link #suspect noted}; {@link #BURST} of them within {@link #PERIOD_NANOS} is a burst: counted
 * ({@code rx_forgery_bursts}), raised as the jrdma-specific asynchronous event QP_FORGERY_SUSPECTED (once per guard),
 * and the QP is {@link #guarded} for {@link #GUARD_NANOS} after the last burst.
 *
 * <p>While guarded, the completer obeys a NAK (sequence, RNR or fatal) only when it names exactly the oldest
 * unacknowledged PSN, the PSN a responder that has acknowledged everything before it NAKs. A sweep that kills the QP
 * must then hit that one PSN, not any of the window's (up to 1,024 in flight): about 2^24 packets per pass instead of
 * 2^24 / window. The cost to the honest peer: a NAK for a later PSN (a loss in the middle of a window whose earlier
 * ACKs were coalesced away or lost) is ignored while guarded, and the retransmission timer repairs the loss instead.
 *
 * <p>Runs under the QP's monitor; time is the device's {@link Clock}.
 */
final class ForgeryWatch {
    /** Distance from the window beyond which no peer of the connection sends a PSN (2^16: 64 times jrdma's largest window). */
    static final int FAR = 1 << 16;
    /** Forgery-like packets within {@link #PERIOD_NANOS} that make a burst. */
    static final int BURST = 64;

    static final long PERIOD_NANOS = 1_000_000_000L;
    /** How long a QP stays guarded after the last burst. */
    static final long GUARD_NANOS = 60_000_000_000L;

    private long periodStart;
    private int inPeriod;
    /** Guarded until this time (while {@link #guarded} is set). */
    private long guardEnd;

    private boolean guarded;

    /**
     * A forgery-like packet arrived at {@code now}.
     *
     * @return true when it completes a burst that starts a guard (the caller raises the event); false otherwise
     */
    boolean suspect(long now, Counter.Set counters) {
        if (inPeriod == 0 || now - periodStart >= PERIOD_NANOS) {
            periodStart = now;
            inPeriod = 0;
        }
        if (++inPeriod != BURST) return false;
        counters.add(Counter.RX_FORGERY_BURSTS);
        boolean starts = !guarded(now);
        guarded = true;
        guardEnd = now + GUARD_NANOS;
        return starts;
    }

    /**
     * Whether the QP is guarded now; {@code clock} is read only while a guard is set (a QP that never saw a burst asks
     * this per packet it sends and receives, and a clock read costs tens of nanoseconds in a VM).
     */
    boolean guarded(Clock clock) {
        return guarded && guarded(clock.nanoTime());
    }

    /** Whether the QP is guarded at {@code now} (a burst in the last {@link #GUARD_NANOS}). */
    boolean guarded(long now) {
        if (guarded && now - guardEnd >= 0) guarded = false;
        return guarded;
    }

    /** A new connection (RESET): nothing suspected. */
    void reset() {
        inPeriod = 0;
        guarded = false;
    }
}
