package dev.jrdma.soft;

/**
 * The send queue of a QP: a ring of preallocated {@link SendWqe} slots. Three indices grow without bound (slot =
 * index &amp; mask): {@link #head}, the oldest WQE not yet completed (the completer's); {@link #next}, the next one
 * the requester transmits; {@link #tail}, where the next post goes. {@code head <= next <= tail}.
 */
final class SendQueue {
    private final SendWqe[] slots;
    private final int mask;
    int head, next, tail;

    SendQueue(int size, int maxSge) {
        slots = new SendWqe[size];
        for (int i = 0; i < size; i++) slots[i] = new SendWqe(maxSge);
        mask = size - 1;
    }

    SendWqe at(int index) {
        return slots[index & mask];
    }

    int capacity() {
        return slots.length;
    }

    boolean isFull() {
        return tail - head == slots.length;
    }

    void clear() {
        head = next = tail = 0;
    }
}
