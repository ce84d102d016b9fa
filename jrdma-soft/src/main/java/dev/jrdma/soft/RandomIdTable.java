package dev.jrdma.soft;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.random.RandomGenerator;

/**
 * Numbers drawn at random from {@code [first, last]} (at most 24 bits), each naming one object: QP numbers
 * ({@link QpTable}) and memory key indices ({@link KeyTable}). RoCE carries no authentication: whoever guesses a QP
 * number, a PSN and an rkey can inject packets, and ReDMArk (USENIX Security 2021) did so with numbers handed out in
 * turn. So each number is drawn at random, and drawn again while it lies within {@link #MIN_STEP} of the number
 * handed out before it (circularly, in the 24-bit space): knowing one number says nothing about the next.
 *
 * <p>An open-addressed table of ints (linear probing, no boxing): {@link #get} runs for every received packet,
 * takes no lock and allocates nothing. Writers ({@link #add}, {@link #remove}, the tags) are serialized by the
 * caller. A removed entry stays as a tombstone that keeps its number and {@linkplain #tag tag} (so a number drawn
 * again soon gets its old tag back, e.g. the last key byte of a key index) until the table is rebuilt; entries never
 * move in place, so a reader never misses one that is there.
 */
final class RandomIdTable<T> {
    /** The least distance between a number and the one handed out before it. */
    static final int MIN_STEP = 1 << 16;
    /** The numbers are 24-bit, like QP numbers and key indices; distances wrap around this space. */
    static final int SPACE = 1 << 24;
    /** The random source of the device's numbers when no other is given. */
    static final RandomGenerator SYSTEM_RANDOM = new SecureRandom();

    private static final int EMPTY = 0; // no number is 0 (first >= 1)
    private static final int MIN_CAPACITY = 64;

    /** One generation of the table: replaced whole when it grows or drops its tombstones. */
    private static final class Slots<T> {
        final AtomicIntegerArray ids;
        final AtomicReferenceArray<T> values;
        /** Writers' data per slot ({@link #tag}): read and written under the caller's lock only. */
        final int[] tags;

        final int mask;

        Slots(int capacity) {
            ids = new AtomicIntegerArray(capacity);
            values = new AtomicReferenceArray<>(capacity);
            tags = new int[capacity];
            mask = capacity - 1;
        }
    }

    private final int first, last, limit;
    private final RandomGenerator random;
    private volatile Slots<T> slots = new Slots<>(MIN_CAPACITY);
    /** Live entries, and slots not empty (live or tombstones). Writers only. */
    private int size, used;
    /** The number {@link #add} handed out last, or -1. */
    private int previous = -1;

    /**
     * @param first  the least number handed out (at least 1)
     * @param last   the greatest (below 2^24)
     * @param limit  the most entries at once
     * @param random where the numbers come from: {@link #SYSTEM_RANDOM}, or a seeded source (tests)
     */
    RandomIdTable(int first, int last, int limit, RandomGenerator random) {
        if (first < 1 || last >= SPACE || last - first + 1 < 4 * MIN_STEP)
            throw new IllegalArgumentException(first + ".." + last);
        this.first = first;
        this.last = last;
        this.limit = limit;
        this.random = random;
    }

    private static int hash(int id) {
        int h = id * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    /** The object {@code id} names, or null; no lock, no allocation. */
    T get(int id) {
        if (id < first || id > last) return null;
        Slots<T> s = slots;
        for (int i = hash(id) & s.mask; ; i = (i + 1) & s.mask) {
            int k = s.ids.get(i);
            if (k == EMPTY) return null;
            if (k == id) {
                T v = s.values.get(i);
                // a writer may have given the slot to another number meanwhile (it writes the number before the object)
                return s.ids.get(i) == id ? v : null;
            }
        }
    }

    /**
     * Draws a free number at least {@link #MIN_STEP} from the last one handed out, and names {@code value} with it.
     *
     * @return the number, or -1 when the table holds {@code limit} entries
     */
    int add(T value) {
        if (size >= limit) return -1;
        if ((used + 1) * 2 > slots.ids.length()) rebuild();
        while (true) {
            int id = first + random.nextInt(last - first + 1);
            if (previous >= 0 && distance(id, previous) < MIN_STEP) continue;
            if (insert(id, value)) {
                previous = id;
                return id;
            }
        }
    }

    /** The distance between two numbers in the 24-bit space, around its end. */
    static int distance(int a, int b) {
        int d = Math.abs(a - b) & (SPACE - 1);
        return Math.min(d, SPACE - d);
    }

    private boolean insert(int id, T value) {
        Slots<T> s = slots;
        int tombstone = -1, i = hash(id) & s.mask;
        for (int k; (k = s.ids.get(i)) != EMPTY; i = (i + 1) & s.mask) {
            if (k == id) {
                if (s.values.get(i) != null) return false; // taken
                s.values.set(i, value); // its own tombstone, with its tag
                size++;
                return true;
            }
            if (tombstone < 0 && s.values.get(i) == null) tombstone = i;
        }
        if (tombstone >= 0) {
            i = tombstone; // another number's tombstone: it forgets that number
        } else {
            used++;
        }
        s.tags[i] = 0;
        s.ids.set(i, id); // before the object: a reader of the old number sees the change (get's second look)
        s.values.set(i, value);
        size++;
        return true;
    }

    /** {@code id} no longer names {@code value}; false when it did not. */
    boolean remove(int id, T value) {
        Slots<T> s = slots;
        int i = slotOf(s, id);
        if (i < 0 || !s.values.compareAndSet(i, value, null)) return false;
        size--;
        return true;
    }

    /** A writer's int kept with {@code id} (also once it is removed, until the table is rebuilt); {@code orElse} when none. */
    int tag(int id, int orElse) {
        Slots<T> s = slots;
        int i = slotOf(s, id);
        return i < 0 ? orElse : s.tags[i];
    }

    /** Keeps {@code tag} with {@code id}, when the table has a slot for it. */
    void setTag(int id, int tag) {
        Slots<T> s = slots;
        int i = slotOf(s, id);
        if (i >= 0) s.tags[i] = tag;
    }

    private static <T> int slotOf(Slots<T> s, int id) {
        if (id == EMPTY) return -1;
        for (int i = hash(id) & s.mask; ; i = (i + 1) & s.mask) {
            int k = s.ids.get(i);
            if (k == EMPTY) return -1;
            if (k == id) return i;
        }
    }

    /** A new generation with the live entries only, at most a quarter full. */
    private void rebuild() {
        Slots<T> old = slots;
        int capacity = MIN_CAPACITY;
        while (capacity < (size + 1) * 4) capacity <<= 1;
        Slots<T> fresh = new Slots<>(capacity);
        for (int j = 0; j < old.ids.length(); j++) {
            T v = old.values.get(j);
            if (v == null) continue;
            int id = old.ids.get(j), i = hash(id) & fresh.mask;
            while (fresh.ids.get(i) != EMPTY) i = (i + 1) & fresh.mask;
            fresh.ids.set(i, id);
            fresh.values.set(i, v);
            fresh.tags[i] = old.tags[j];
        }
        used = size;
        slots = fresh; // published whole: a reader sees the old generation or the new one
    }

    /** Entries now. */
    int size() {
        return size;
    }

    /** How many slots {@link #valueAt} has now: a caller looking for an object by other means walks them all. */
    int capacity() {
        return slots.ids.length();
    }

    /** The object in slot {@code slot}, or null (racy: objects may come, go or move to a new generation meanwhile). */
    T valueAt(int slot) {
        Slots<T> s = slots;
        return slot < s.values.length() ? s.values.get(slot) : null;
    }
}
