package dev.jrdma.connect;

import java.nio.ByteBuffer;
import java.util.HexFormat;

/**
 * Remote memory a peer may access: address, rkey and length. One side exports it ({@link RegisteredBuffer#remote()}),
 * sends {@link #toBytes()} to the other, which imports it with {@link #fromBytes}.
 *
 * @param address the first byte's address in the peer's memory, as its work requests name it
 * @param rkey    the remote key of the region or memory window that covers the range
 * @param length  the number of bytes, not negative
 */
public record RemoteBuffer(long address, int rkey, long length) {
    /** Encoded size: magic "RB", u64 address, u32 rkey, u64 length. */
    public static final int BYTES = 2 + 8 + 4 + 8;

    private static final short MAGIC = 0x5242; // "RB"

    /**
     * Checks the length.
     *
     * @throws IllegalArgumentException when {@code length} is negative
     */
    public RemoteBuffer {
        if (length < 0) throw new IllegalArgumentException("negative length " + length);
    }

    /**
     * A part of this buffer, with the same rkey.
     *
     * @param offset where the part starts, in bytes from {@link #address}
     * @param len    its length in bytes
     * @return the part
     * @throws IndexOutOfBoundsException when {@code [offset, offset + len)} is not inside this buffer
     */
    public RemoteBuffer slice(long offset, long len) {
        if (offset < 0 || len < 0 || offset + len > length) {
            throw new IndexOutOfBoundsException(
                    "slice [" + offset + ", " + (offset + len) + ") outside the remote buffer of " + length + " bytes");
        }
        return new RemoteBuffer(address + offset, rkey, len);
    }

    /** {@return the {@value #BYTES}-byte big-endian encoding, for {@link #fromBytes} on the peer} */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES)
                .putShort(MAGIC)
                .putLong(address)
                .putInt(rkey)
                .putLong(length)
                .array();
    }

    /**
     * Decodes what {@link #toBytes} made.
     *
     * @param b the {@value #BYTES} bytes
     * @return the remote buffer they describe
     * @throws IllegalArgumentException when {@code b} has another length, does not start with the magic, or encodes a
     *                                  negative length
     */
    public static RemoteBuffer fromBytes(byte[] b) {
        if (b.length != BYTES)
            throw new IllegalArgumentException("a remote buffer is " + BYTES + " bytes, got " + b.length);
        ByteBuffer bb = ByteBuffer.wrap(b);
        if (bb.getShort() != MAGIC)
            throw new IllegalArgumentException(
                    "not a remote buffer: " + HexFormat.of().formatHex(b));
        return new RemoteBuffer(bb.getLong(), bb.getInt(), bb.getLong());
    }

    void check(long offset, long len, String op) {
        if (offset < 0 || len < 0 || offset + len > length) {
            throw new IndexOutOfBoundsException(op + ": [" + offset + ", " + (offset + len)
                    + ") is outside the remote buffer of " + length + " bytes");
        }
    }

    @Override
    public String toString() {
        return String.format("RemoteBuffer[0x%x, rkey 0x%08x, %d bytes]", address, rkey, length);
    }
}
