package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** RDMA Extended Transport Header (16 bytes): VA (64), R_Key (32), DMA length (32). */
public final class Reth {
    /** The RETH's size in bytes. */
    public static final int BYTES = 16;

    private Reth() {}

    /**
     * {@return the remote virtual address the request reads or writes}
     *
     * @param b the packet buffer (big-endian)
     * @param off the RETH's absolute offset in {@code b}
     */
    public static long va(ByteBuffer b, int off) {
        return b.getLong(off);
    }
    /**
     * {@return the R_Key that grants the access}
     *
     * @param b the packet buffer (big-endian)
     * @param off the RETH's absolute offset in {@code b}
     */
    public static int rkey(ByteBuffer b, int off) {
        return b.getInt(off + 8);
    }
    /**
     * {@return the DMA length: the whole message's bytes, as an unsigned 32-bit value}
     *
     * @param b the packet buffer (big-endian)
     * @param off the RETH's absolute offset in {@code b}
     */
    public static long dmaLength(ByteBuffer b, int off) {
        return b.getInt(off + 12) & 0xFFFF_FFFFL;
    }

    /**
     * Writes a RETH.
     *
     * @param b the packet buffer (big-endian)
     * @param off the RETH's absolute offset in {@code b}
     * @param va the remote virtual address
     * @param rkey the R_Key
     * @param dmaLength the message's length in bytes (low 32 bits kept)
     */
    public static void write(ByteBuffer b, int off, long va, int rkey, long dmaLength) {
        b.putLong(off, va);
        b.putInt(off + 8, rkey);
        b.putInt(off + 12, (int) dmaLength);
    }
}
