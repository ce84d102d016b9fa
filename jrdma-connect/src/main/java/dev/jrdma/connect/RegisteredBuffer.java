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

    /** The registered memory (zero-copy). */
    public MemorySegment segment() {
        checkLive();
        return segment;
    }

    /** The registered memory as a direct ByteBuffer (zero-copy, big-endian like every ByteBuffer). */
    public ByteBuffer byteBuffer() {
        checkLive();
        return segment.asByteBuffer();
    }

    public long length() {
        return segment.byteSize();
    }

    /** The address work requests name (the region's address plus this slice's offset). */
    public long address() {
        return mr.address() + offset;
    }

    public int lkey() {
        return mr.lkey();
    }

    public int rkey() {
        return mr.rkey();
    }

    public MemoryRegion region() {
        return mr;
    }

    /** Offset of this slice in its memory region. */
    public long regionOffset() {
        return offset;
    }

    /** This buffer as a peer names it: export it with {@link RemoteBuffer#toBytes()}. */
    public RemoteBuffer remote() {
        return new RemoteBuffer(address(), rkey(), length());
    }

    /** A part of this buffer as a peer names it. */
    public RemoteBuffer remote(long off, long len) {
        return remote().slice(off, len);
    }

    int sizeClass() {
        return sizeClass;
    }

    void checkRange(long off, long len, String op) {
        checkLive();
        if (off < 0 || len < 0 || off + len > length()) {
            throw new IndexOutOfBoundsException(op + ": [" + off + ", " + (off + len) + ") is outside the local buffer of " + length() + " bytes");
        }
    }

    private void checkLive() {
        if (released) throw new IllegalStateException("this registered buffer was given back to its pool");
    }

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
        return String.format("RegisteredBuffer[0x%x, %d bytes, lkey 0x%08x, rkey 0x%08x]", address(), length(), lkey(), rkey());
    }
}
