package dev.jrdma.connect;

import java.time.Duration;

/**
 * The close protocol of one connection, spoken over its control channel (the TCP socket kept after the handshake,
 * or rdma_cm's disconnect events):
 * <ol>
 * <li>The closing side refuses new work and waits, up to the timeout, for what it has in flight: its goodbye then
 *     follows the acknowledgements of its last messages, so their receive completions are queued at the peer before
 *     the goodbye arrives there.</li>
 * <li>It says goodbye, then lingers until the peer acknowledges (at most {@link #LINGER_MAX_NS}): the peer's own
 *     last ACKs may trail its data, and a QP destroyed too early would leave the peer's sends to time out.</li>
 * <li>The peer, told, refuses new work and gives what it has in flight until the drain deadline (the timeout, at
 *     most {@link #DRAIN_MAX_NS}) to complete; then it moves its QP to ERR and acknowledges, once.</li>
 * </ol>
 * The endpoint's owner alone uses it (the close is a command it runs); the decisions take the time from the caller.
 */
final class Goodbye {
    /** How long a closing side waits for the peer to acknowledge its goodbye. */
    static final long LINGER_MAX_NS = 2_000_000_000L;
    /** How long a side told of the peer's close waits for its own operations in flight. */
    static final long DRAIN_MAX_NS = 1_000_000_000L;

    private final long timeoutNs;
    private volatile Control control; // read by other threads for the addresses
    private boolean byeSent, ackSent, peerAcked;
    private long drainDeadline;
    private boolean draining;

    Goodbye(Duration timeout) {
        this.timeoutNs = timeout.toNanos();
    }

    /** The control channel, once the handshake made it. */
    void attach(Control c) {
        control = c;
    }

    Control control() {
        return control;
    }

    /** Tells the peer this side closes (once; nothing before the handshake finished). */
    void sayBye() {
        if (control == null || byeSent) return;
        byeSent = true;
        control.bye();
    }

    /** Tells a closing peer that nothing of ours is in flight any more (once). */
    void acknowledge() {
        if (control == null || ackSent) return;
        ackSent = true;
        control.byeAck();
    }

    /** The peer acknowledged our goodbye, or can no longer (its control channel ended). */
    void peerAcknowledged() {
        peerAcked = true;
    }

    boolean isPeerAcknowledged() {
        return peerAcked;
    }

    /** When a closing side stops waiting for the peer's acknowledgement. */
    long lingerDeadline(long now) {
        return now + Math.min(timeoutNs, LINGER_MAX_NS);
    }

    /** The peer closed while operations of ours are in flight: they get until the drain deadline. */
    void startDrain(long now) {
        draining = true;
        drainDeadline = now + Math.min(timeoutNs, DRAIN_MAX_NS);
    }

    boolean isDraining() {
        return draining;
    }

    boolean drainExpired(long now) {
        return draining && now - drainDeadline > 0;
    }

    void endDrain() {
        draining = false;
    }
}
