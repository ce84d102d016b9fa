package dev.jrdma.soft;

import dev.jrdma.verbs.VerbsException;
import java.util.random.RandomGenerator;

/**
 * The memory keys of one software device (rxe's {@code rxe_pool.c} for MRs and MWs): an lkey/rkey is a key index
 * (its upper 24 bits) naming the MR or window, and an 8-bit key part that changes with every registration and bind.
 * Indices are drawn at random ({@link RandomIdTable}: never within 2^16 of the one before, so a registration's rkey
 * is at least 2^24 from the one before), and so is the key part, never the one the index had last (while the table
 * remembers it: an index drawn again gets a new key part, so an old key does not name a new owner). The responder
 * looks keys up for every RDMA request ({@link #owner}: no lock, no allocation).
 */
final class KeyTable {
    static final int FIRST_INDEX = 1;
    /** The greatest key index: 0xFFFFFF with key part 0xFF would be the rkey -1. */
    static final int LAST_INDEX = 0xFF_FFFE;
    /** The most MRs and windows registered at once (device attributes max_mr, max_mw). */
    static final int MAX_KEYS = (1 << 16) - 1;

    private final RandomIdTable<Object> owners;
    private final RandomGenerator random;

    KeyTable() {
        this(RandomIdTable.SYSTEM_RANDOM);
    }

    /** A table drawing its indices and key parts from {@code random} (tests: a seeded source). */
    KeyTable(RandomGenerator random) {
        this.random = random;
        this.owners = new RandomIdTable<>(FIRST_INDEX, LAST_INDEX, MAX_KEYS, random);
    }

    /** Reserves a key index, drawn at random, for {@code owner} (an MR or MW): the upper 24 bits of its lkey/rkey. */
    synchronized int add(Object owner) {
        int index = owners.add(owner);
        if (index < 0)
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.ENOMEM,
                    "the soft device has " + MAX_KEYS + " MRs/MWs registered, its most: deregister some");
        return index;
    }

    /** {@code index} no longer names {@code owner}. */
    synchronized void remove(int index, Object owner) {
        owners.remove(index, owner);
    }

    /** A new key for {@code index}: a random 8-bit key part, different from the last one used with this index. */
    synchronized int freshKey(int index) {
        int last = owners.tag(index, 0), b;
        do {
            b = random.nextInt(256);
        } while (b == last);
        owners.setTag(index, b);
        return (index << 8) | b;
    }

    /** An application chose {@code key} (a type 2 bind with its own key byte): the next fresh key differs from it. */
    synchronized void noteKey(int key) {
        owners.setTag(key >>> 8, key & 0xFF);
    }

    /** The MR or MW a key names (by its index; the caller compares the whole key), or null. */
    Object owner(int key) {
        return owners.get(key >>> 8);
    }

    /** How many slots {@link #ownerAt} has: a caller looking for an owner by other means walks them all. */
    int slots() {
        return owners.capacity();
    }

    /** The owner in slot {@code slot}, or null (racy: an owner may come or go meanwhile). */
    Object ownerAt(int slot) {
        return owners.valueAt(slot);
    }
}
