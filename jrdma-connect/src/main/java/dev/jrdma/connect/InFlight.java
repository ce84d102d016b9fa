package dev.jrdma.connect;

import java.util.function.Consumer;

/**
 * Operations posted to the send queue and not yet completed, in an array indexed by their work request id: a slot
 * per send-queue entry, found again from the id without a map or a boxed key. The id also carries a sequence
 * number, so a completion that comes after its operation was given up (timed out, failed) finds its slot reused by
 * another operation and is recognised as stale. The endpoint's owner thread alone uses it.
 */
final class InFlight<T> {
    private final Object[] ops;
    private final long[] ids;
    private final int[] free;
    private final int slotBits;
    private int freeCount;
    private long sequence;
    private int size;

    /** Room for {@code capacity} operations (the send queue's depth). */
    InFlight(int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be positive, not " + capacity);
        ops = new Object[capacity];
        ids = new long[capacity];
        free = new int[capacity];
        for (int i = 0; i < capacity; i++) free[i] = capacity - 1 - i;
        freeCount = capacity;
        slotBits = 32 - Integer.numberOfLeadingZeros(Math.max(1, capacity - 1));
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    boolean isFull() {
        return freeCount == 0;
    }

    /** Takes a slot for {@code op}; returns the work request id to post it with (positive, below 2^62). */
    long add(T op) {
        if (freeCount == 0) throw new IllegalStateException("all " + ops.length + " slots are in use");
        int slot = free[--freeCount];
        long id = (++sequence << slotBits) | slot;
        ops[slot] = op;
        ids[slot] = id;
        size++;
        return id;
    }

    /** The operation posted with {@code wrId}, removed; null when it was given up already (or never posted). */
    @SuppressWarnings("unchecked")
    T remove(long wrId) {
        int slot = (int) (wrId & ((1L << slotBits) - 1));
        if (wrId <= 0 || slot >= ops.length || ids[slot] != wrId || ops[slot] == null) return null;
        T op = (T) ops[slot];
        release(slot);
        return op;
    }

    /** The operation in {@code slot} (0 .. capacity-1), or null: for scanning without allocating. */
    @SuppressWarnings("unchecked")
    T at(int slot) {
        return (T) ops[slot];
    }

    /** The id the operation in {@code slot} was posted with. */
    long idAt(int slot) {
        return ids[slot];
    }

    int capacity() {
        return ops.length;
    }

    /** Removes every operation, oldest slot first, handing each to {@code action}. */
    @SuppressWarnings("unchecked")
    void drain(Consumer<T> action) {
        for (int slot = 0; slot < ops.length && size > 0; slot++) {
            T op = (T) ops[slot];
            if (op == null) continue;
            release(slot);
            action.accept(op);
        }
    }

    private void release(int slot) {
        ops[slot] = null;
        ids[slot] = 0;
        free[freeCount++] = slot;
        size--;
    }
}
