package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Immediate data extended header (4 bytes), carried as is (network order on the wire). */
public final class ImmDt {
    public static final int BYTES = 4;

    private ImmDt() {}

    public static int imm(ByteBuffer b, int off) { return b.getInt(off); }
    public static void write(ByteBuffer b, int off, int imm) { b.putInt(off, imm); }
}
