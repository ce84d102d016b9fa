package dev.jrdma.connect;

import dev.jrdma.verbs.MemoryRegion;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A slice of registered memory handed out by a {@link BufferPool}. Zero-copy: {@link #segment()} and
 * {@link #byteBuffer()} are the registered memory itself. Closing it gives the slice back to the pool.
 */
public final class RegisteredBuffer implements AutoCloseable {
    private final BufferPool pool;
    private final MemoryRegion mr;
    private final MemorySegment segment;
    private final long offset;
    private final int sizeClass;
    private volatile boolean released;

    RegisteredBuffer(BufferPool pool, MemoryRegion mr, long offset, long length, int sizeClass) {
        this.pool = pool;
        this.mr = mr;
        this.offset = offset;
        this.sizeClass = sizeClass;
        this.segment = mr.segment().asSlice(offset, length);
    }

    /**
     * {@return the registered memory (zero-copy), exactly {@link #length} bytes}
     *
     * @throws IllegalStateException when the buffer was given back to its pool
     */
    public MemorySegment segment() {
        checkLive();
        return segment;
    }

    /**
     * {@return the registered memory as a direct ByteBuffer (zero-copy, big-endian like every new ByteBuffer)}
     *
     * @throws IllegalStateException when the buffer was given back to its pool
     */
    public ByteBuffer byteBuffer() {
        checkLive();
        return segment.asByteBuffer();
    }

    /** {@return the length in bytes: the size asked of the pool (the slice under it may be larger)} */
    public long length() {
        return segment.byteSize();
    }

    /** {@return the address work requests name: the region's address plus this slice's offset} */
    public long address() {
        return mr.address() + offset;
    }

    /** {@return the local key of the region the slice is in, for this side's work requests} */
    public int lkey() {
        return mr.lkey();
    }

    /** {@return the remote key of the region the slice is in: what a peer uses when the pool grants remote rights} */
    public int rkey() {
        return mr.rkey();
    }

    /** {@return the memory region the slice is in (a pool slab, or a region of its own for a large buffer)} */
    public MemoryRegion region() {
        return mr;
    }

    /** {@return the offset of this slice in its memory region, in bytes} */
    public long regionOffset() {
        return offset;
    }

    /**
     * {@return this buffer as a peer names it (address, rkey, length): send it with {@link RemoteBuffer#toBytes()}}
     * A peer can use it only with the rights the pool's regions were registered with.
     */
    public RemoteBuffer remote() {
        return new RemoteBuffer(address(), rkey(), length());
    }

    /**
     * A part of this buffer as a peer names it.
     *
     * @param off where the part starts, in bytes from this buffer's start
     * @param len its length in bytes
     * @return the part
     * @throws IndexOutOfBoundsException when {@code [off, off + len)} is not inside this buffer
     */
    public RemoteBuffer remote(long off, long len) {
        return remote().slice(off, len);
    }

    int sizeClass() {
        return sizeClass;
    }

    void checkRange(long off, long len, String op) {
        checkLive();
        if (off < 0 || len < 0 || off + len > length()) {
            throw new IndexOutOfBoundsException(
                    op + ": [" + off + ", " + (off + len) + ") is outside the local buffer of " + length() + " bytes");
        }
    }

    private void checkLive() {
        if (released) throw new IllegalStateException("this registered buffer was given back to its pool");
    }

    /** {@return whether {@link #close} gave the buffer back to its pool} */
    public boolean isReleased() {
        return released;
    }

    /** Gives the slice back to the pool. Idempotent. */
    @Override
    public void close() {
        if (released) return;
        synchronized (this) {
            if (released) return;
            released = true;
        }
        pool.release(this);
    }

    @Override
    public String toString() {
        return String.format(
                "RegisteredBuffer[0x%x, %d bytes, lkey 0x%08x, rkey 0x%08x]", address(), length(), lkey(), rkey());
    }
}
