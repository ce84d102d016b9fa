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

    boolean pending() {
        return valid && sendFrom < sendTo;
    }
}
