package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

/**
 * Issue 21 §5: QP numbers and key indices are drawn at random, never near the one before (ReDMArk), from a table that
 * finds them without a lock while they come and go.
 */
class RandomIdTableTest {
    private static final long SEED = 0x5EED_21L;

    @Test
    void tenThousandQpNumbersAreNeverWithin2To16OfTheOneBefore() {
        RandomIdTable<Object> qpns =
                new RandomIdTable<>(QpTable.FIRST_QPN, QpTable.LAST_QPN, QpTable.MAX_QPS, new SplittableRandom(SEED));
        Map<Integer, Object> named = new HashMap<>();
        int previous = -1, below2To16 = 0;
        for (int i = 0; i < 10_000; i++) {
            Object qp = new Object();
            int qpn = qpns.add(qp);
            assertTrue(
                    qpn >= QpTable.FIRST_QPN && qpn <= QpTable.LAST_QPN,
                    "QPN 0x" + Integer.toHexString(qpn) + " outside 0x11..0xFFFFFE");
            if (previous >= 0)
                assertTrue(
                        Math.abs(qpn - previous) >= RandomIdTable.MIN_STEP,
                        i + ": 0x" + Integer.toHexString(qpn) + " after 0x" + Integer.toHexString(previous));
            if (qpn < 1 << 16) below2To16++;
            assertNull(named.put(qpn, qp), "QPN handed out twice");
            previous = qpn;
        }
        for (Map.Entry<Integer, Object> e : named.entrySet()) assertSame(e.getValue(), qpns.get(e.getKey()));
        assertEquals(10_000, qpns.size());
        assertTrue(below2To16 < 100, below2To16 + " of 10,000 QPNs in the old 16-bit space: the 24 bits are used");
    }

    @Test
    void tenThousandRkeysAreNeverWithin2To16OfTheOneBefore() {
        KeyTable keys = new KeyTable(new SplittableRandom(SEED));
        Set<Integer> seen = new HashSet<>();
        long previous = -1;
        for (int i = 0; i < 10_000; i++) {
            Object mr = new Object();
            int index = keys.add(mr);
            int rkey = keys.freshKey(index);
            long unsigned = Integer.toUnsignedLong(rkey);
            assertEquals(index, rkey >>> 8);
            assertTrue(index >= KeyTable.FIRST_INDEX && index <= KeyTable.LAST_INDEX);
            if (previous >= 0)
                assertTrue(
                        Math.abs(unsigned - previous) >= 1 << 16,
                        i + ": rkey 0x" + Integer.toHexString(rkey) + " after 0x" + Long.toHexString(previous));
            assertTrue(seen.add(rkey));
            assertSame(mr, keys.owner(rkey));
            previous = unsigned;
        }
    }

    @Test
    void aSeededSourceGivesTheSameNumbersEveryRunAndTheSystemSourceDoesNot() {
        List<Integer> a = draw(new SplittableRandom(SEED)), b = draw(new SplittableRandom(SEED));
        assertEquals(a, b, "seeded: deterministic tests");
        assertNotEquals(draw(RandomIdTable.SYSTEM_RANDOM), draw(RandomIdTable.SYSTEM_RANDOM));
    }

    private static List<Integer> draw(RandomGenerator random) {
        RandomIdTable<Object> t = new RandomIdTable<>(QpTable.FIRST_QPN, QpTable.LAST_QPN, 100, random);
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < 20; i++) out.add(t.add(new Object()));
        return out;
    }

    @Test
    void removedNumbersAreGoneTheLimitHoldsAndTheTableRebuildsItself() {
        RandomIdTable<Object> t =
                new RandomIdTable<>(QpTable.FIRST_QPN, QpTable.LAST_QPN, 1000, new SplittableRandom(SEED));
        ArrayDeque<int[]> live = new ArrayDeque<>();
        Map<Integer, Object> owners = new HashMap<>();
        // churn: far more adds and removes than slots, so tombstones pile up and the table is rebuilt many times
        for (int i = 0; i < 50_000; i++) {
            if (live.size() == 500 || live.size() > 0 && (i % 3 == 0)) {
                int id = live.poll()[0];
                Object o = owners.remove(id);
                assertFalse(t.remove(id, new Object()), "remove names the object it removes");
                assertTrue(t.remove(id, o));
                assertNull(t.get(id));
            } else {
                Object o = new Object();
                int id = t.add(o);
                owners.put(id, o);
                live.add(new int[] {id});
            }
        }
        for (Map.Entry<Integer, Object> e : owners.entrySet()) assertSame(e.getValue(), t.get(e.getKey()));
        assertEquals(owners.size(), t.size());
        assertTrue(t.capacity() <= 4096, "the tombstones were dropped: " + t.capacity() + " slots for " + t.size());
        while (t.size() < 1000) t.add(new Object());
        assertEquals(-1, t.add(new Object()), "the limit");
        assertNull(t.get(0));
        assertNull(t.get(-5));
        assertNull(t.get(0xFFFFFF));
    }

    /** A source that hands out the numbers a test chooses (only {@code nextInt(bound)} is used). */
    private static final class Scripted implements RandomGenerator {
        final ArrayDeque<Integer> next = new ArrayDeque<>();

        @Override
        public int nextInt(int bound) {
            return next.poll();
        }

        @Override
        public long nextLong() {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void anIndexDrawnAgainAfterItsRemovalGetsAnotherKeyByte() {
        Scripted random = new Scripted();
        KeyTable keys = new KeyTable(random);
        int index = 0x123456;
        random.next.add(index - KeyTable.FIRST_INDEX); // the index
        random.next.add(0x77); // its key byte
        Object first = new Object(), second = new Object(), between = new Object();
        assertEquals(index, keys.add(first));
        assertEquals(index << 8 | 0x77, keys.freshKey(index));
        keys.remove(index, first);
        assertNull(keys.owner(index << 8 | 0x77));
        random.next.add(0x800000 - KeyTable.FIRST_INDEX); // another index in between (2^16 away)
        assertEquals(0x800000, keys.add(between));
        random.next.add(index - KeyTable.FIRST_INDEX); // the same index again
        random.next.add(0x77); // the old key byte: drawn again
        random.next.add(0x78);
        assertEquals(index, keys.add(second));
        assertEquals(index << 8 | 0x78, keys.freshKey(index), "the old key (byte 0x77) never names the new owner");
        assertSame(second, keys.owner(index << 8 | 0x78));
    }

    @Test
    void aReaderFindsEveryLiveNumberWhileOthersComeAndGo() throws Exception {
        RandomIdTable<Object> t =
                new RandomIdTable<>(QpTable.FIRST_QPN, QpTable.LAST_QPN, 5000, new SplittableRandom(SEED));
        int[] stable = new int[50];
        Object[] stableOwners = new Object[50];
        for (int i = 0; i < stable.length; i++) stable[i] = t.add(stableOwners[i] = new Object());
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<String> wrong = new AtomicReference<>();
        Thread reader = Thread.ofPlatform().start(() -> {
            while (!done.get() && wrong.get() == null) {
                for (int i = 0; i < stable.length; i++) {
                    if (t.get(stable[i]) != stableOwners[i])
                        wrong.set("number " + stable[i] + " lost while others came and went");
                }
            }
        });
        ArrayDeque<Integer> churn = new ArrayDeque<>();
        Map<Integer, Object> owners = new HashMap<>();
        for (int i = 0;
                i < 200_000 && wrong.get() == null;
                i++) { // every add and remove, and many rebuilds, while the reader reads
            if (churn.size() < 2000) {
                Object o = new Object();
                int id = t.add(o);
                owners.put(id, o);
                churn.add(id);
            } else {
                int id = churn.poll();
                t.remove(id, owners.remove(id));
            }
        }
        done.set(true);
        reader.join(10_000);
        assertNull(wrong.get());
    }
}
