package dev.jrdma.soft;

import dev.jrdma.soft.wire.Psn;

/**
 * The sender's cork of one RC QP (issue 23), as a NIC batches doorbells and Linux's TCP autocorks: between jrdma peers
 * over UDP, a post made while the QP has request packets in flight (sent, not acknowledged) does not run the requester
 * at once. Its WQEs wait, unstarted, in the send queue, and leave with whatever is posted meanwhile in one batch (one
 * {@code sendmsg} with UDP segmentation for equal-size packets, {@link QpTransmitter}) at the first of: the ACK or
 * response the packets in flight bring (the completer runs the requester), a poll of a CQ or a wait for a completion
 * event on the device ({@link Transport#releaseCorks}), the held posts reaching the batch's size ({@link
 * TxBatch#CAPACITY} packets or 64 KiB), or {@link #DEADLINE_NANOS} after the first post held (the device's timer), so a
 * thread that posts and then does neither is never stalled longer. A post with nothing in flight leaves at once (a
 * ping-pong's latency does not move). Peers reached through a same-host ring (a ring write is no system call), rxe and
 * NICs are never corked. Everything runs under the QP's monitor but {@link #deadline}, which the timer reads.
 */
final class SendCork {
    /** {@code -Djrdma.soft.cork=on|off}: on by default. */
    static final boolean ENABLED = !"off".equals(System.getProperty("jrdma.soft.cork", "on"));
    /** {@code -Djrdma.soft.corkMicros=N}: the longest a post is held (30 us by default). */
    static final long DEADLINE_NANOS = Long.getLong("jrdma.soft.corkMicros", 30) * 1000;
    /** Bytes held that make the batch leave: the most one segmented send carries. */
    static final int MAX_BYTES = 64 << 10;

    private final SoftQp qp;
    /** Whether this QP corks (tests turn it on or off per QP). */
    boolean enabled = ENABLED;
    /** Packets and bytes of the posts held. */
    private int packets;

    private long bytes;
    /** When the posts held leave at the latest (clock time), 0 when none is held; the timer reads it unlocked. */
    volatile long deadline;
    /** The QP is on its transport's list for the next poll ({@link Transport#releaseCorks}). */
    boolean listed;

    SendCork(SoftQp qp) {
        this.qp = qp;
    }

    /**
     * The WQEs from {@code first} to the send queue's tail were just posted: whether they wait (true: the posts are
     * held) or the requester runs now (false), which then sends whatever was held with them.
     */
    boolean holds(SendQueue sq, int first) {
        if (!enabled || !qp.sendsRequests() || !inFlight() || !overUdpToJrdmaPeer()) return false;
        int mtu = qp.mtu;
        for (int i = first; i != sq.tail; i++) {
            SendWqe w = sq.at(i);
            // a local operation or a failed WQE completes without a packet: not later than it would uncorked
            if (w.local || w.localErr != null) return false;
            packets += w.readOrAtomic ? 1 : (int) Math.max(1, (w.total + mtu - 1) / mtu);
            bytes += w.readOrAtomic ? 0 : w.total;
        }
        if (packets >= TxBatch.CAPACITY || bytes >= MAX_BYTES) return false; // a full batch leaves now
        if (deadline == 0) {
            long d = qp.clock().nanoTime() + DEADLINE_NANOS;
            deadline = d == 0 ? 1 : d;
            qp.timer().wake(deadline);
        }
        if (!listed) {
            listed = true;
            qp.transport().corked(qp);
        }
        qp.count(Counter.TX_CORKED_POSTS);
        return true;
    }

    /** Whether request packets are in flight: sent and not yet acknowledged. */
    private boolean inFlight() {
        return Psn.diff(qp.requester.sentEnd, qp.completer.oldestUnacked) > 0;
    }

    /** A jrdma peer reached through the UDP socket (not a same-host ring). */
    private boolean overUdpToJrdmaPeer() {
        if (!qp.out.toJrdmaPeer()) return false;
        ShmLink rings = qp.transport().shmLink();
        return rings == null || !rings.ringTo(qp.remote);
    }

    /** Whether posts are held. */
    boolean holding() {
        return deadline != 0;
    }

    /** The requester runs (under the QP's monitor): it sends what was held, as the window allows. */
    void opened() {
        if (deadline != 0) deadline = 0;
        packets = 0;
        bytes = 0;
    }

    /** A poll or a waiting thread took this QP off its transport's list: what is held leaves now. */
    void release() {
        synchronized (qp) {
            listed = false;
            send();
        }
    }

    /**
     * The timer at {@code now} (under the QP's monitor): the held posts leave when their deadline has passed. The QP
     * stays on its transport's list (listed once however often the deadline fires).
     */
    void onTimer(long now) {
        long d = deadline;
        if (d != 0 && now - d >= 0) send();
    }

    /** Runs the requester (under the QP's monitor) when posts are held: they leave in one batch. */
    private void send() {
        if (!holding()) return;
        qp.count(Counter.TX_CORK_RELEASES);
        qp.requester.runBatched();
    }
}
