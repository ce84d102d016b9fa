package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Immediate data extended header (4 bytes), carried as is (network order on the wire). */
public final class ImmDt {
    /** The ImmDt's size in bytes. */
    public static final int BYTES = 4;

    private ImmDt() {}

    /**
     * {@return the 32 bits of immediate data}
     *
     * @param b the packet buffer (big-endian)
     * @param off the ImmDt's absolute offset in {@code b}
     */
    public static int imm(ByteBuffer b, int off) {
        return b.getInt(off);
    }
    /**
     * Writes an ImmDt.
     *
     * @param b the packet buffer (big-endian)
     * @param off the ImmDt's absolute offset in {@code b}
     * @param imm the immediate data
     */
    public static void write(ByteBuffer b, int off, int imm) {
        b.putInt(off, imm);
    }
}
