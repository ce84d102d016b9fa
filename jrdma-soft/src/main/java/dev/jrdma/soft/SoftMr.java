package dev.jrdma.soft;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.spi.Resource;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/** A registered memory region: the segment, its keys (lkey = rkey) and rights. */
final class SoftMr extends Resource implements MemoryRegion {
    final SoftPd pd;
    final MemorySegment seg;
    final long addr;
    final long len;
    final int key;
    final int keyIndex;
    final int accessBits;
    private final Set<Access> access;

    SoftMr(SoftPd pd, MemorySegment seg, Set<Access> access) {
        super(pd, "memory region");
        this.pd = pd;
        this.seg = seg;
        this.addr = seg.address();
        this.len = seg.byteSize();
        this.access =
                Collections.unmodifiableSet(access.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(access));
        this.accessBits = Access.toBits(access);
        this.keyIndex = pd.transport().addKey(this);
        this.key = pd.transport().freshKey(keyIndex); // a random key byte: keys cannot be guessed from the index
    }

    @Override
    public SoftPd pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return seg;
    }

    @Override
    public long address() {
        return addr;
    }

    @Override
    public long length() {
        return len;
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public Set<Access> access() {
        return access;
    }

    /** Whether {@code [a, a + n)} lies inside the region. */
    boolean contains(long a, long n) {
        return n >= 0 && a - addr >= 0 && a - addr <= len && n <= len - (a - addr);
    }

    @Override
    protected void destroy() {
        pd.transport().removeKey(keyIndex, this);
    }

    @Override
    public String toString() {
        return "SoftMr[addr=0x" + Long.toHexString(addr) + ", len=" + len + ", key=0x" + Integer.toHexString(key)
                + ", access=" + access + "]";
    }
}
