package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Invalidate Extended Transport Header (4 bytes): the R_Key to invalidate. */
public final class Ieth {
    public static final int BYTES = 4;

    private Ieth() {}

    public static int rkey(ByteBuffer b, int off) { return b.getInt(off); }
    public static void write(ByteBuffer b, int off, int rkey) { b.putInt(off, rkey); }
}
