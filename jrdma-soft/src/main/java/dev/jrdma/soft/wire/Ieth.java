package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Invalidate Extended Transport Header (4 bytes): the R_Key to invalidate. */
public final class Ieth {
    /** The IETH's size in bytes. */
    public static final int BYTES = 4;

    private Ieth() {}

    /**
     * {@return the R_Key the responder invalidates}
     *
     * @param b the packet buffer (big-endian)
     * @param off the IETH's absolute offset in {@code b}
     */
    public static int rkey(ByteBuffer b, int off) {
        return b.getInt(off);
    }
    /**
     * Writes an IETH.
     *
     * @param b the packet buffer (big-endian)
     * @param off the IETH's absolute offset in {@code b}
     * @param rkey the R_Key to invalidate
     */
    public static void write(ByteBuffer b, int off, int rkey) {
        b.putInt(off, rkey);
    }
}
