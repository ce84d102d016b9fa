package dev.jrdma.netty;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.RegisteredBuffer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.util.internal.CleanableDirectBuffer;
import java.nio.ByteBuffer;

/**
 * A Netty direct buffer whose memory is a {@link RegisteredBuffer} of a channel's pool: the channel sends its bytes
 * with the buffer's own address and key, without copying them into its send ring. Made by
 * {@link RegisteredByteBufAllocator}; releasing the last reference gives the memory back to the pool.
 *
 * <p>Netty's direct buffer does the indexing and growing; this class only says where its memory comes from. The
 * first memory is handed to Netty's wrapping constructor, which never frees what it wraps, so this class gives it back
 * itself (after a growth has copied it, or on the last release); memory got by growing comes with its own clean-up,
 * which Netty runs. A buffer that grows past what the pool registers moves to plain direct memory and is copied on
 * send like any other.
 */
final class RegisteredByteBuf extends UnpooledDirectByteBuf {
    /** The memory under index 0 now. */
    private CleanableDirectBuffer memory;
    /** The first memory, while this class still owes its clean-up (Netty does not free a wrapped buffer). */
    private Registered initial;

    RegisteredByteBuf(RegisteredByteBufAllocator alloc, Registered initial, int maxCapacity) {
        super(alloc, initial.view(), maxCapacity);
        this.memory = initial;
        this.initial = initial;
        setIndex(0, 0); // the wrapping constructor marks the wrapped bytes readable: a new buffer has none
    }

    @Override
    protected CleanableDirectBuffer allocateDirectBuffer(int capacity) {
        CleanableDirectBuffer m = ((RegisteredByteBufAllocator) alloc()).memory(capacity);
        memory = m;
        return m;
    }

    @Override
    public ByteBuf capacity(int newCapacity) {
        Registered first = initial;
        super.capacity(newCapacity);
        if (first != null && memory != first) { // the bytes were copied to new memory: the first can go back
            initial = null;
            first.clean();
        }
        return this;
    }

    /**
     * The last reference is gone: a small buffer that never grew goes back to its allocator, memory, views and all, for
     * the next buffer of its size ({@link RegisteredByteBufAllocator#recycle}); any other gives its memory back.
     */
    @Override
    protected void deallocate() {
        Registered first = initial;
        if (first != null && memory == first && ((RegisteredByteBufAllocator) alloc()).recycle(this, first.pool))
            return;
        freeMemory();
    }

    /** Gives the memory back (the last reference went, or its allocator stopped keeping it: its channel closed). */
    void freeMemory() {
        super.deallocate();
        Registered first = initial;
        if (first != null) {
            initial = null;
            first.clean();
        }
    }

    /** Hands a recycled buffer out again ({@link RegisteredByteBufAllocator}): one reference, empty, as a new one. */
    RegisteredByteBuf reuse(int maxCapacity) {
        resetRefCnt();
        maxCapacity(maxCapacity);
        setIndex(0, 0);
        markReaderIndex();
        markWriterIndex();
        return this;
    }

    /**
     * {@return the registered memory under index 0 when it is {@code pool}'s, else null (plain direct memory after
     * growing, or another pool's: another protection domain, whose key this channel's queue pair cannot use)}
     */
    RegisteredBuffer registeredIn(BufferPool pool) {
        return memory instanceof Registered r && r.pool == pool ? r.slice : null;
    }

    /** Registered memory as Netty's buffer wants it: the clean-up gives the slice back to its pool. */
    record Registered(BufferPool pool, RegisteredBuffer slice, ByteBuffer view) implements CleanableDirectBuffer {
        @Override
        public ByteBuffer buffer() {
            return view;
        }

        @Override
        public void clean() {
            slice.close(); // idempotent; a pool closed meanwhile has freed the memory already
        }
    }
}
