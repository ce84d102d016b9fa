package dev.jrdma.verbs;

/** A scatter/gather element ({@code struct ibv_sge}): a piece of a registered buffer. Mutable and reused. */
public final class Sge {
    /** An empty element (address, length and key 0), to be pointed at a buffer with {@code set}. */
    public Sge() {}

    /** The start of the buffer ({@code addr}): a virtual address inside a registered region. */
    public long addr;
    /** The buffer's length in bytes ({@code length}), read as unsigned. */
    public int length;
    /** The local key of the region the buffer lies in ({@code lkey}). */
    public int lkey;

    /**
     * Points this element at {@code length} bytes of {@code mr} starting {@code offset} bytes into it.
     *
     * @param mr     the registered region (its address and lkey are used)
     * @param offset the start, in bytes from the region's start
     * @param length the length in bytes
     * @return this
     */
    public Sge set(MemoryRegion mr, long offset, int length) {
        this.addr = mr.address() + offset;
        this.length = length;
        this.lkey = mr.lkey();
        return this;
    }

    /**
     * Sets the three fields directly.
     *
     * @param addr   the buffer's address
     * @param length the buffer's length in bytes
     * @param lkey   the local key of the region the buffer lies in
     * @return this
     */
    public Sge set(long addr, int length, int lkey) {
        this.addr = addr;
        this.length = length;
        this.lkey = lkey;
        return this;
    }

    @Override
    public String toString() {
        return "Sge[addr=0x" + Long.toHexString(addr) + ", length=" + length + ", lkey=0x" + Integer.toHexString(lkey)
                + "]";
    }
}
