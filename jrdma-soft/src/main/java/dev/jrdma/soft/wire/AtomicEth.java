package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Atomic Extended Transport Header (28 bytes): VA (64), R_Key (32), swap or add data (64), compare data (64). */
public final class AtomicEth {
    public static final int BYTES = 28;

    private AtomicEth() {}

    public static long va(ByteBuffer b, int off) { return b.getLong(off); }
    public static int rkey(ByteBuffer b, int off) { return b.getInt(off + 8); }
    public static long swapOrAdd(ByteBuffer b, int off) { return b.getLong(off + 12); }
    public static long compare(ByteBuffer b, int off) { return b.getLong(off + 20); }

    public static void write(ByteBuffer b, int off, long va, int rkey, long swapOrAdd, long compare) {
        b.putLong(off, va);
        b.putInt(off + 8, rkey);
        b.putLong(off + 12, swapOrAdd);
        b.putLong(off + 20, compare);
    }
}
