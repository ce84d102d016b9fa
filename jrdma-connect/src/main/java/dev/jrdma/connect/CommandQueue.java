package dev.jrdma.connect;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A bounded lock-free queue of commands for a {@link ProgressCore}: many threads offer, the core's owner alone takes
 * (multi-producer, single-consumer, as Aeron's and JCTools' MPSC array queues). A producer claims a slot by
 * advancing the tail, then publishes its command into it; the owner takes slots in order and waits the few
 * instructions a claimed slot may still be empty. Nothing is allocated per command.
 */
final class CommandQueue {
    private final AtomicReferenceArray<Runnable> slots;
    private final int mask;
    /** The next slot a producer claims (volatile: {@link ProgressCore} reads it to decide to sleep). */
    private final AtomicLong tail = new AtomicLong();
    /** The next slot the owner takes; producers read it to see whether there is room. */
    private final AtomicLong head = new AtomicLong();

    /** A queue of {@code capacity} commands, rounded up to a power of two. */
    CommandQueue(int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be positive, not " + capacity);
        int size = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1);
        slots = new AtomicReferenceArray<>(size);
        mask = size - 1;
    }

    int capacity() {
        return mask + 1;
    }

    /** Adds {@code command}; false when the queue is full (nothing was added). Any thread. */
    boolean offer(Runnable command) {
        if (command == null) throw new NullPointerException("command");
        long t;
        do {
            t = tail.get();
            if (t - head.get() > mask) return false;
        } while (!tail.compareAndSet(t, t + 1));
        slots.setRelease((int) t & mask, command);
        return true;
    }

    /** The oldest command, removed; null when none was offered. The owner only. */
    Runnable poll() {
        long h = head.getPlain();
        if (h == tail.get()) return null;
        int i = (int) h & mask;
        Runnable r;
        while ((r = slots.getAcquire(i)) == null) Thread.onSpinWait(); // claimed, not yet published
        slots.setPlain(i, null);
        head.setRelease(h + 1);
        return r;
    }

    /** Whether no command was offered and not taken (a volatile read of the tail). */
    boolean isEmpty() {
        return head.getAcquire() == tail.get();
    }

    int size() {
        return (int) (tail.get() - head.getAcquire());
    }
}
