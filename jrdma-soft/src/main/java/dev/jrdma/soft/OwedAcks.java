package dev.jrdma.soft;

/**
 * The QPs that owe their peer a coalesced ACK at the end of one {@link Receiver}'s burst: each packet that asks for an
 * ACK lists its QP here instead of sending one, and the end of the drive sends one ACK per QP for the whole burst. A
 * polling thread keeps the ACK of a QP whose peer takes carried ACKs ({@link CarriedAcks}) owed one drive longer
 * ({@link #sendOwedBefore}): the thread's next post on the QP then carries it in its first request, so the answering
 * side of a ping-pong sends one datagram.
 */
final class OwedAcks {
    private SoftQp[] pending = new SoftQp[64];
    private int count;
    /**
     * ACKs were left owed at the end of a drive (volatile: the receive thread reads it before it blocks, and a polling
     * thread sets it before it reads whether the receive thread blocks; see {@link ProgressEngine#awaitPackets}).
     */
    volatile boolean left;

    private final Counter.Set counters;
    private final String device;

    OwedAcks(Counter.Set counters, String device) {
        this.counters = counters;
        this.device = device;
    }

    void add(SoftQp qp) {
        if (count == pending.length) pending = java.util.Arrays.copyOf(pending, pending.length * 2);
        pending[count++] = qp;
    }

    /** Sends every ACK listed. */
    void sendAll() {
        if (left) left = false;
        for (int i = 0; i < count; i++) {
            SoftQp qp = pending[i];
            pending[i] = null;
            send(qp);
        }
        count = 0;
    }

    /**
     * The end of a polling thread's drive {@code drive} that received packets: the ACKs of this drive owed to peers that
     * take carried ACKs ({@link CarriedAcks#mayHold}) stay owed, the rest are sent now. A kept ACK leaves with the
     * thread's next post on its QP (carried, or alone after the requests when none could carry it), or its next drive
     * (a poll), or, when the thread neither polls nor posts, the receive thread's, once nobody has polled for {@link
     * ProgressEngine#POLL_QUIET_NANOS} (1 ms): the time a request that arrived right after that drive would wait to be
     * received at all, and half the least retransmission timeout of a jrdma requester ({@link SoftQp#MIN_TIMEOUT_NANOS};
     * only jrdma QPs negotiate carried ACKs), which doubles with every timeout in a row.
     *
     * @return whether ACKs stay owed (then {@link #left} is set)
     */
    boolean sendOwedBefore(long drive) {
        int kept = 0;
        for (int i = 0; i < count; i++) {
            SoftQp qp = pending[i];
            pending[i] = null;
            if (!qp.responder.ackOwed()) continue; // a post on the QP sent or carried it (a racy read: it is set here)
            if (qp.ackDrive != drive || !qp.carried.mayHold()) send(qp); // owed since an earlier drive, or alone
            else if (qp.ackKept != drive) { // (a QP whose ACK a post sent and this drive owes again is listed twice)
                qp.ackKept = drive;
                pending[kept++] = qp;
            }
        }
        count = kept;
        if (kept == 0) {
            if (left) left = false; // as sendAll: nothing is owed now
            return false;
        }
        left = true;
        return true;
    }

    private void send(SoftQp qp) {
        try {
            synchronized (qp) {
                qp.responder.flushAck();
            }
        } catch (RuntimeException | Error e) {
            counters.add(Counter.RX_DROPPED);
            System.getLogger("dev.jrdma.soft")
                    .log(
                            System.Logger.Level.WARNING,
                            "soft device " + device + ": sending an ACK of " + qp + " failed",
                            e);
        }
    }
}
