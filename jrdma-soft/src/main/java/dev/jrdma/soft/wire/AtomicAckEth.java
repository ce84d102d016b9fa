package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Atomic Acknowledge Extended Transport Header (8 bytes): the original remote data (64). */
public final class AtomicAckEth {
    /** The AtomicAckETH's size in bytes. */
    public static final int BYTES = 8;

    private AtomicAckEth() {}

    /**
     * {@return the value the remote word held before the atomic operation}
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicAckETH's absolute offset in {@code b}
     */
    public static long originalData(ByteBuffer b, int off) {
        return b.getLong(off);
    }
    /**
     * Writes an AtomicAckETH.
     *
     * @param b the packet buffer (big-endian)
     * @param off the AtomicAckETH's absolute offset in {@code b}
     * @param original the value the word held before the operation
     */
    public static void write(ByteBuffer b, int off, long original) {
        b.putLong(off, original);
    }
}
