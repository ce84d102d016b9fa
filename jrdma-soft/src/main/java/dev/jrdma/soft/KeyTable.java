package dev.jrdma.soft;

import dev.jrdma.verbs.VerbsException;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The memory keys of one software device (rxe's {@code rxe_pool.c} for MRs and MWs): an lkey/rkey is a key index
 * (its upper 24 bits) naming the MR or window, and an 8-bit key part that changes with every registration and bind,
 * so an old key never names a new owner. The responder looks keys up for every RDMA request ({@link #owner}: no
 * lock, no allocation).
 */
final class KeyTable {
    static final int SIZE = 1 << 16;
    /** The most MRs and windows registered at once (device attributes max_mr, max_mw). */
    static final int MAX_KEYS = SIZE - 1;

    /**
     * RoCE carries no authentication: whoever guesses a QP number, a PSN and an rkey can inject packets. So key
     * indices start at a random point, and the 8-bit key part of every registration and window bind is drawn at
     * random (ReDMArk, USENIX Security 2021, exploited the predictable ones).
     */
    private static final SecureRandom RANDOM = new SecureRandom();

    private final AtomicReferenceArray<Object> owners = new AtomicReferenceArray<>(SIZE);
    private int nextIndex = 1 + RANDOM.nextInt(SIZE - 1);
    /** The key byte last handed out for each key index: the next one differs, so an old key never names a new owner. */
    private final byte[] lastKeyByte = new byte[SIZE];

    /** Reserves a key index for {@code owner} (an MR or MW): the upper 24 bits of its lkey/rkey. */
    synchronized int add(Object owner) {
        for (int i = 0; i < SIZE; i++) {
            int n = nextIndex;
            nextIndex = nextIndex + 1 >= SIZE ? 1 : nextIndex + 1;
            if (owners.get(n) == null) {
                owners.set(n, owner);
                return n;
            }
        }
        throw new VerbsException("ibv_reg_mr", VerbsException.ENOMEM, "the soft device has no free memory key (65000 MRs/MWs registered): deregister some");
    }

    /** {@code index} no longer names {@code owner}. */
    void remove(int index, Object owner) { owners.compareAndSet(index, owner, null); }

    /** A new key for {@code index}: a random 8-bit key part, different from the last one used with this index. */
    synchronized int freshKey(int index) {
        int last = lastKeyByte[index] & 0xFF, b;
        do {
            b = RANDOM.nextInt(256);
        } while (b == last);
        lastKeyByte[index] = (byte) b;
        return (index << 8) | b;
    }

    /** An application chose {@code key} (a type 2 bind with its own key byte): the next fresh key differs from it. */
    synchronized void noteKey(int key) {
        int index = key >>> 8;
        if (index < SIZE) lastKeyByte[index] = (byte) key;
    }

    /** The MR or MW a key names (by its index; the caller compares the whole key), or null. */
    Object owner(int key) {
        int index = key >>> 8;
        return index < SIZE ? owners.get(index) : null;
    }

    /** How many slots {@link #ownerAt} has: a caller looking for an owner by other means walks them all. */
    int slots() { return SIZE; }

    /** The owner in slot {@code slot}, or null (racy: an owner may come or go meanwhile). */
    Object ownerAt(int slot) { return owners.get(slot); }
}
