package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;

/** Datagram Extended Transport Header (IBA 9.3.2, 8 bytes): Q_Key, a reserved byte, the source QP (24 bits). */
public final class Deth {
    /** The DETH's size in bytes. */
    public static final int BYTES = 8;

    private Deth() {}

    /**
     * {@return the Q_Key the sender presents; the receiving UD QP drops a datagram whose Q_Key is not its own}
     *
     * @param b the packet buffer (big-endian)
     * @param off the DETH's absolute offset in {@code b}
     */
    public static int qkey(ByteBuffer b, int off) {
        return b.getInt(off);
    }

    /**
     * {@return the sender's QP number, 24 bits}
     *
     * @param b the packet buffer (big-endian)
     * @param off the DETH's absolute offset in {@code b}
     */
    public static int srcQp(ByteBuffer b, int off) {
        return b.getInt(off + 4) & 0xFFFFFF;
    }

    /**
     * Writes a DETH (reserved byte 0).
     *
     * @param b the packet buffer (big-endian)
     * @param off the DETH's absolute offset in {@code b}
     * @param qkey the Q_Key
     * @param srcQp the sender's QP number (24 bits kept)
     */
    public static void write(ByteBuffer b, int off, int qkey, int srcQp) {
        b.putInt(off, qkey);
        b.putInt(off + 4, srcQp & 0xFFFFFF);
    }
}
