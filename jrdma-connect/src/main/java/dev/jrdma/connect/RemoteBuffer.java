package dev.jrdma.connect;

import java.nio.ByteBuffer;
import java.util.HexFormat;

/**
 * Remote memory a peer may access: address, rkey and length. One side exports it ({@link RegisteredBuffer#remote()}),
 * sends {@link #toBytes()} to the other, which imports it with {@link #fromBytes}.
 */
public record RemoteBuffer(long address, int rkey, long length) {
    /** Encoded size: magic "RB", u64 address, u32 rkey, u64 length. */
    public static final int BYTES = 2 + 8 + 4 + 8;
    private static final short MAGIC = 0x5242; // "RB"

    public RemoteBuffer {
        if (length < 0) throw new IllegalArgumentException("negative length " + length);
    }

    /** A part of this buffer. */
    public RemoteBuffer slice(long offset, long len) {
        if (offset < 0 || len < 0 || offset + len > length) {
            throw new IndexOutOfBoundsException("slice [" + offset + ", " + (offset + len) + ") outside the remote buffer of " + length + " bytes");
        }
        return new RemoteBuffer(address + offset, rkey, len);
    }

    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).putShort(MAGIC).putLong(address).putInt(rkey).putLong(length).array();
    }

    public static RemoteBuffer fromBytes(byte[] b) {
        if (b.length != BYTES) throw new IllegalArgumentException("a remote buffer is " + BYTES + " bytes, got " + b.length);
        ByteBuffer bb = ByteBuffer.wrap(b);
        if (bb.getShort() != MAGIC) throw new IllegalArgumentException("not a remote buffer: " + HexFormat.of().formatHex(b));
        return new RemoteBuffer(bb.getLong(), bb.getInt(), bb.getLong());
    }

    void check(long offset, long len, String op) {
        if (offset < 0 || len < 0 || offset + len > length) {
            throw new IndexOutOfBoundsException(op + ": [" + offset + ", " + (offset + len) + ") is outside the remote buffer of " + length + " bytes");
        }
    }

    @Override
    public String toString() {
        return String.format("RemoteBuffer[0x%x, rkey 0x%08x, %d bytes]", address, rkey, length);
    }
}
