package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** RDMA Extended Transport Header (16 bytes): VA (64), R_Key (32), DMA length (32). */
public final class Reth {
    public static final int BYTES = 16;

    private Reth() {}

    public static long va(ByteBuffer b, int off) { return b.getLong(off); }
    public static int rkey(ByteBuffer b, int off) { return b.getInt(off + 8); }
    /** DMA length as an unsigned 32-bit value. */
    public static long dmaLength(ByteBuffer b, int off) { return b.getInt(off + 12) & 0xFFFF_FFFFL; }

    public static void write(ByteBuffer b, int off, long va, int rkey, long dmaLength) {
        b.putLong(off, va);
        b.putInt(off + 8, rkey);
        b.putInt(off + 12, (int) dmaLength);
    }
}
