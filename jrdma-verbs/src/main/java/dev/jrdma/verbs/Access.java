package dev.jrdma.verbs;

import java.util.EnumSet;
import java.util.Set;

/** Access rights of a memory region, a memory window or a queue pair ({@code enum ibv_access_flags}). */
public enum Access {
    LOCAL_WRITE(1),
    REMOTE_WRITE(2),
    REMOTE_READ(4),
    REMOTE_ATOMIC(8),
    MW_BIND(16),
    ZERO_BASED(32),
    ON_DEMAND(64),
    RELAXED_ORDERING(1 << 20);

    /** The bit libibverbs uses for this flag. */
    public final int bit;

    Access(int bit) {
        this.bit = bit;
    }

    public static int toBits(Set<Access> flags) {
        int bits = 0;
        for (Access a : values()) if (flags.contains(a)) bits |= a.bit;
        return bits;
    }

    public static EnumSet<Access> fromBits(int bits) {
        EnumSet<Access> set = EnumSet.noneOf(Access.class);
        for (Access a : values()) if ((bits & a.bit) != 0) set.add(a);
        return set;
    }

    /** The rights that let a peer touch memory: REMOTE_WRITE and REMOTE_ATOMIC also require LOCAL_WRITE. */
    public static void checkConsistent(String verb, Set<Access> flags) {
        if ((flags.contains(REMOTE_WRITE) || flags.contains(REMOTE_ATOMIC)) && !flags.contains(LOCAL_WRITE)) {
            throw new VerbsException(verb, VerbsException.EINVAL,
                    "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (the adapter writes into the memory): add Access.LOCAL_WRITE");
        }
    }
}
