package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Atomic Extended Transport Header (28 bytes): VA (64), R_Key (32), swap or add data (64), compare data (64). */
public final class AtomicEth {
    /** The AtomicETH's size in bytes. */
    public static final int BYTES = 28;

    private AtomicEth() {}

    /**
     * {@return the remote virtual address of the 8-byte word}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicETH's absolute offset in {@code b}
     */
    public static long va(ByteBuffer b, int off) {
        return b.getLong(off);
    }
    /**
     * {@return the R_Key that grants the access}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicETH's absolute offset in {@code b}
     */
    public static int rkey(ByteBuffer b, int off) {
        return b.getInt(off + 8);
    }
    /**
     * {@return the swap value of a compare-and-swap, or the addend of a fetch-and-add}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicETH's absolute offset in {@code b}
     */
    public static long swapOrAdd(ByteBuffer b, int off) {
        return b.getLong(off + 12);
    }
    /**
     * {@return the compare value of a compare-and-swap (unused by fetch-and-add)}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicETH's absolute offset in {@code b}
     */
    public static long compare(ByteBuffer b, int off) {
        return b.getLong(off + 20);
    }

    /**
     * Writes an AtomicETH.
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicETH's absolute offset in {@code b}
     * @param va the remote word's address
     * @param rkey the R_Key
     * @param swapOrAdd the swap value or the addend
     * @param compare the compare value (0 for fetch-and-add)
     */
    public static void write(ByteBuffer b, int off, long va, int rkey, long swapOrAdd, long compare) {
        b.putLong(off, va);
        b.putInt(off + 8, rkey);
        b.putLong(off + 12, swapOrAdd);
        b.putLong(off + 20, compare);
    }
}
