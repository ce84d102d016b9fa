package dev.jrdma.verbs;

/** A scatter/gather element ({@code struct ibv_sge}): a piece of a registered buffer. Mutable and reused. */
public final class Sge {
    public long addr;
    public int length;
    public int lkey;

    /** Points this element at {@code length} bytes of {@code mr} starting {@code offset} bytes into it. */
    public Sge set(MemoryRegion mr, long offset, int length) {
        this.addr = mr.address() + offset;
        this.length = length;
        this.lkey = mr.lkey();
        return this;
    }

    public Sge set(long addr, int length, int lkey) {
        this.addr = addr;
        this.length = length;
        this.lkey = lkey;
        return this;
    }

    @Override
    public String toString() {
        return "Sge[addr=0x" + Long.toHexString(addr) + ", length=" + length + ", lkey=0x" + Integer.toHexString(lkey) + "]";
    }
}
