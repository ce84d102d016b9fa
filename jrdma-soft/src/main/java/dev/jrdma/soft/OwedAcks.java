package dev.jrdma.soft;

/**
 * The QPs that owe their peer a coalesced ACK at the end of one {@link Receiver}'s burst: each packet that asks for an
 * ACK lists its QP here instead of sending one, and the end of the drive sends one ACK per QP for the whole burst.
 * With {@code -Djrdma.soft.deferAcks=true} a polling thread's list may stay owed one drive longer
 * ({@link #sendOwedBefore}): the next post on the QP then sends the ACK right after the request, so the answer of a
 * ping-pong reaches the peer first.
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
     * The end of a polling thread's drive {@code drive} that received packets: the ACKs owed since an earlier drive are
     * sent now, those of this drive stay owed one drive more (or until a post on their QP, or a drive that finds the
     * link empty, or the receive thread, once nobody has polled for {@link ProgressEngine#POLL_QUIET_NANOS}: an ACK
     * waits at most about that long, below the shortest retransmission timeout).
     *
     * @return whether ACKs stay owed (then {@link #left} is set)
     */
    boolean sendOwedBefore(long drive) {
        int kept = 0;
        for (int i = 0; i < count; i++) {
            SoftQp qp = pending[i];
            pending[i] = null;
            if (!qp.ackOwed()) continue; // a post on the QP sent it
            if (qp.ackDrive != drive) send(qp); // owed since an earlier drive
            else if (qp.ackKept != drive) { // (a QP whose ACK a post sent and this drive owes again is listed twice)
                qp.ackKept = drive;
                pending[kept++] = qp;
            }
        }
        count = kept;
        if (kept == 0) return false;
        left = true;
        return true;
    }

    private void send(SoftQp qp) {
        try {
            qp.flushAck();
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
