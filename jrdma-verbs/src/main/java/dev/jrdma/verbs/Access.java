package dev.jrdma.verbs;

import java.util.EnumSet;
import java.util.Set;

/** Access rights of a memory region, a memory window or a queue pair ({@code enum ibv_access_flags}). */
public enum Access {
    /** {@code IBV_ACCESS_LOCAL_WRITE}: the device may write the memory (receive buffers, READ and atomic results). */
    LOCAL_WRITE(1),
    /** {@code IBV_ACCESS_REMOTE_WRITE}: a peer may RDMA WRITE into it; needs LOCAL_WRITE. */
    REMOTE_WRITE(2),
    /** {@code IBV_ACCESS_REMOTE_READ}: a peer may RDMA READ from it. */
    REMOTE_READ(4),
    /** {@code IBV_ACCESS_REMOTE_ATOMIC}: a peer may run atomic operations on it; needs LOCAL_WRITE. */
    REMOTE_ATOMIC(8),
    /** {@code IBV_ACCESS_MW_BIND}: memory windows may be bound to the region. */
    MW_BIND(16),
    /**
     * {@code IBV_ACCESS_ZERO_BASED}: remote addresses are offsets from the start of the window, not virtual addresses.
     */
    ZERO_BASED(32),
    /** {@code IBV_ACCESS_ON_DEMAND}: on-demand paging: the memory is not pinned at registration. */
    ON_DEMAND(64),
    /** {@code IBV_ACCESS_RELAXED_ORDERING}: the device may write the memory out of order (a PCIe performance hint). */
    RELAXED_ORDERING(1 << 20);

    /** The bit libibverbs uses for this flag. */
    public final int bit;

    Access(int bit) {
        this.bit = bit;
    }

    /**
     * Encodes rights as libibverbs bits.
     *
     * @param flags the rights
     * @return their {@code IBV_ACCESS_*} bits ORed together
     */
    public static int toBits(Set<Access> flags) {
        int bits = 0;
        for (Access a : values()) if (flags.contains(a)) bits |= a.bit;
        return bits;
    }

    /**
     * Decodes libibverbs bits.
     *
     * @param bits {@code IBV_ACCESS_*} bits; bits this library does not know are ignored
     * @return a new set of the rights they stand for
     */
    public static EnumSet<Access> fromBits(int bits) {
        EnumSet<Access> set = EnumSet.noneOf(Access.class);
        for (Access a : values()) if ((bits & a.bit) != 0) set.add(a);
        return set;
    }

    /**
     * Checks that rights are consistent as libibverbs requires: REMOTE_WRITE and REMOTE_ATOMIC also need LOCAL_WRITE.
     *
     * @param verb  the verb named in the error, e.g. {@code ibv_reg_mr}
     * @param flags the rights to check
     * @throws VerbsException (EINVAL) when LOCAL_WRITE is missing
     */
    public static void checkConsistent(String verb, Set<Access> flags) {
        if ((flags.contains(REMOTE_WRITE) || flags.contains(REMOTE_ATOMIC)) && !flags.contains(LOCAL_WRITE)) {
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (the adapter writes into the memory): add Access.LOCAL_WRITE");
        }
    }
}
