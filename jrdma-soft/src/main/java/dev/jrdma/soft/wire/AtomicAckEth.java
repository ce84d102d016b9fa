package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Atomic Acknowledge Extended Transport Header (8 bytes): the original remote data (64). */
public final class AtomicAckEth {
    public static final int BYTES = 8;

    private AtomicAckEth() {}

    public static long originalData(ByteBuffer b, int off) { return b.getLong(off); }
    public static void write(ByteBuffer b, int off, long original) { b.putLong(off, original); }
}
