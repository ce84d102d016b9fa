package dev.jrdma.soft;

/**
 * A responder resource (rxe's {@code resp_res}): an executed READ or atomic, kept in the {@link Responder}'s ring of
 * max_dest_rd_atomic to answer duplicates without executing again, and the replies still to send. Under the QP's
 * monitor only.
 */
final class ResponderResource {
    boolean valid, atomic;
    int firstPsn, npkts;
    SoftMr mr;
    long off, length, orig;
    /** What the request asked for (a duplicate must ask for a part of it). */
    long va;

    int rkey;
    /** Reply packets {@code [sendFrom, sendTo)} are still to go out. */
    int sendFrom, sendTo;
    /** Reply packets {@code [0, sentOnce)} went out at least once: what is pending below it is a replay. */
    int sentOnce;

    boolean pending() {
        return valid && sendFrom < sendTo;
    }

    /** The request is executed: its {@code n} replies go out, none yet sent. */
    void start(int n) {
        npkts = n;
        sendFrom = sentOnce = 0;
        sendTo = n;
        valid = true;
    }

    /** Reply packet {@code sendFrom} went out. */
    void sent() {
        sendFrom++;
        sentOnce = Math.max(sentOnce, sendFrom);
    }

    /**
     * Whether what is pending is only a replay for a duplicate request, every reply having gone out once. The requester
     * sends a READ/atomic that takes this slot only once it has every reply (max_rd_atomic), so a replay still pending
     * then is stale: a response it took for lost came late, and its re-request arrived after.
     */
    boolean replayOnly() {
        return sentOnce == npkts;
    }

    /** Queues reply packets {@code [from, to)} again (merged with those still pending). */
    void replay(int from, int to) {
        if (pending()) {
            sendFrom = Math.min(sendFrom, from);
            sendTo = Math.max(sendTo, to);
        } else {
            sendFrom = from;
            sendTo = to;
        }
    }
}
