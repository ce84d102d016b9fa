package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Datagram Extended Transport Header (IBA 9.3.2, 8 bytes): Q_Key, a reserved byte, the source QP (24 bits). */
public final class Deth {
    public static final int BYTES = 8;

    private Deth() {}

    public static int qkey(ByteBuffer b, int off) { return b.getInt(off); }

    public static int srcQp(ByteBuffer b, int off) { return b.getInt(off + 4) & 0xFFFFFF; }

    public static void write(ByteBuffer b, int off, int qkey, int srcQp) {
        b.putInt(off, qkey);
        b.putInt(off + 4, srcQp & 0xFFFFFF);
    }
}
