package dev.jrdma.connect;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A bounded lock-free queue, many producers and many consumers (Dmitry Vyukov's bounded MPMC queue, as JCTools'
 * {@code MpmcArrayQueue}): each slot carries a sequence number that says whose turn it is, a producer claims a slot by
 * advancing the tail, a consumer by advancing the head, and the slot's sequence publishes the item. Nothing is
 * allocated per item. It carries the commands other threads hand a {@link ProgressCore} (its owner alone takes them)
 * and an endpoint's spare operations (the owner gives them back, any sending thread takes one).
 *
 * @param <E> what it holds
 */
final class BoundedQueue<E> {
    private final AtomicReferenceArray<E> items;
    /** Per slot: its index plus the laps done when a producer may fill it, one more when a consumer may take it. */
    private final AtomicLongArray turns;

    private final int mask;
    private final AtomicLong tail = new AtomicLong();
    private final AtomicLong head = new AtomicLong();

    /** A queue of {@code capacity} items, rounded up to a power of two. */
    BoundedQueue(int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be positive, not " + capacity);
        int size = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1);
        items = new AtomicReferenceArray<>(size);
        turns = new AtomicLongArray(size);
        for (int i = 0; i < size; i++) turns.set(i, i);
        mask = size - 1;
    }

    int capacity() {
        return mask + 1;
    }

    /** Adds {@code item}; false when the queue is full (nothing was added). Any thread. */
    boolean offer(E item) {
        if (item == null) throw new NullPointerException("item");
        long t;
        int slot;
        while (true) {
            t = tail.get();
            slot = (int) t & mask;
            long ahead = turns.getAcquire(slot) - t;
            if (ahead == 0) {
                if (tail.compareAndSet(t, t + 1)) break;
            } else if (ahead < 0) {
                return false; // the slot still holds the item of the previous lap: full
            }
            // else another producer claimed it first: look again
        }
        items.setPlain(slot, item);
        turns.setRelease(slot, t + 1); // published: a consumer may take it
        return true;
    }

    /**
     * The oldest item, removed; null when there is none (or the oldest is claimed and not yet published: a producer
     * is a few instructions from it). Any thread.
     */
    E poll() {
        long h;
        int slot;
        while (true) {
            h = head.get();
            slot = (int) h & mask;
            long ahead = turns.getAcquire(slot) - (h + 1);
            if (ahead == 0) {
                if (head.compareAndSet(h, h + 1)) break;
            } else if (ahead < 0) {
                return null; // empty, or not yet published
            }
        }
        E item = items.getPlain(slot);
        items.setPlain(slot, null);
        turns.setRelease(slot, h + mask + 1); // free for the producer of the next lap
        return item;
    }

    /** Whether no item was offered and not taken (claimed ones count: their producer publishes them at once). */
    boolean isEmpty() {
        return head.get() == tail.get();
    }

    int size() {
        return (int) Math.max(0, tail.get() - head.get());
    }
}
