package dev.jrdma.soft;

/** A receive work request, copied at post time into a slot of the {@link RecvQueue}. */
final class RecvWqe extends Wqe {
    RecvWqe(int maxSge) {
        super(maxSge);
    }
}
