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

    /** The payload (empty for a write with immediate). */
    public byte[] bytes() {
        return data;
    }

    public int length() {
        return data.length;
    }

    public ByteBuffer byteBuffer() {
        return ByteBuffer.wrap(data);
    }

    public MemorySegment segment() {
        return MemorySegment.ofArray(data);
    }

    public String text() {
        return new String(data, StandardCharsets.UTF_8);
    }

    /** True for the notification of a peer's RDMA write with immediate. */
    public boolean isWriteWithImmediate() {
        return hasImmediate;
    }

    /** The immediate value of a write with immediate. */
    public int immediate() {
        if (!hasImmediate) throw new IllegalStateException("not a write with immediate");
        return immediate;
    }

    @Override
    public String toString() {
        return hasImmediate ? "Message[write with immediate 0x" + Integer.toHexString(immediate) + "]" : "Message[" + data.length + " bytes]";
    }
}
