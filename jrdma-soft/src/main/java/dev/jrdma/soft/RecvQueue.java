package dev.jrdma.soft;

/** The receive queue of a QP: a ring of preallocated {@link RecvWqe} slots; the responder consumes from {@link #head}, posts go to {@link #tail}. */
final class RecvQueue {
    private final RecvWqe[] slots;
    private final int mask;
    int head, tail;

    RecvQueue(int size, int maxSge) {
        slots = new RecvWqe[size];
        for (int i = 0; i < size; i++) slots[i] = new RecvWqe(maxSge);
        mask = size - 1;
    }

    RecvWqe at(int index) {
        return slots[index & mask];
    }

    RecvWqe first() {
        return slots[head & mask];
    }

    int capacity() {
        return slots.length;
    }

    boolean isEmpty() {
        return head == tail;
    }

    boolean isFull() {
        return tail - head == slots.length;
    }

    void clear() {
        head = tail = 0;
    }
}
