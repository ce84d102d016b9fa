package dev.jrdma.connect;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A received message: the bytes of a peer's {@code send}, or the immediate value of a peer's
 * {@code writeWithImmediate} (whose data went straight into the memory the peer wrote).
 */
public final class Message {
    private final byte[] data;
    private final boolean hasImmediate;
    private final int immediate;

    Message(byte[] data, boolean hasImmediate, int immediate) {
        this.data = data;
        this.hasImmediate = hasImmediate;
        this.immediate = immediate;
    }

    /** {@return the payload, the array itself, not a copy (empty for a write with immediate)} */
    public byte[] bytes() {
        return data;
    }

    /** {@return the payload's length in bytes (0 for a write with immediate)} */
    public int length() {
        return data.length;
    }

    /** {@return the payload wrapped as a heap {@link ByteBuffer} (no copy)} */
    public ByteBuffer byteBuffer() {
        return ByteBuffer.wrap(data);
    }

    /** {@return the payload as a heap {@link MemorySegment} (no copy)} */
    public MemorySegment segment() {
        return MemorySegment.ofArray(data);
    }

    /** {@return the payload decoded as UTF-8} */
    public String text() {
        return new String(data, StandardCharsets.UTF_8);
    }

    /** {@return true for the notification of a peer's RDMA write with immediate, false for a send's bytes} */
    public boolean isWriteWithImmediate() {
        return hasImmediate;
    }

    /**
     * {@return the immediate value of a write with immediate (the 32 bits the writer passed)}
     *
     * @throws IllegalStateException when the message is a send's bytes, not a write with immediate
     */
    public int immediate() {
        if (!hasImmediate) throw new IllegalStateException("not a write with immediate");
        return immediate;
    }

    @Override
    public String toString() {
        return hasImmediate
                ? "Message[write with immediate 0x" + Integer.toHexString(immediate) + "]"
                : "Message[" + data.length + " bytes]";
    }
}
