package dev.jrdma.netty;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.RegisteredBuffer;
import dev.jrdma.verbs.VerbsException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import java.util.ArrayDeque;

/**
 * A channel's default allocator: direct buffers (what {@code buffer()}, {@code ioBuffer()} and {@code directBuffer()}
 * give) are {@link RegisteredByteBuf}s over the registered pool of the channel's connection, so a write of one is sent
 * from where it lies; heap and composite buffers, and direct ones before the channel is connected or larger than a
 * slab of the pool, come from Netty's default allocator and are copied once on send.
 *
 * <p>A buffer from the pool is a slice of a registered slab taken under the pool's lock (no registration per buffer);
 * a buffer larger than a slab would need a memory registration of its own, which costs more than the copy it saves.
 */
final class RegisteredByteBufAllocator implements ByteBufAllocator {
    private static final int DEFAULT_CAPACITY = 256;
    /**
     * The largest buffer kept for reuse when released: one that small is copied into the send ring anyway
     * ({@link RdmaChannel#IN_PLACE_MIN}), so only its objects are worth keeping, and they cost more than the copy.
     */
    static final int RECYCLED_MAX_CAPACITY = RdmaChannel.IN_PLACE_MIN;
    /** Released buffers kept for reuse, of one capacity and of all together (per channel). */
    static final int RECYCLED_PER_CAPACITY = 64, RECYCLED_MAX = 256;

    private final ByteBufAllocator fallback = ByteBufAllocator.DEFAULT;
    /** The pool of the channel's connection; null until the channel is connected. */
    private volatile BufferPool pool;
    /**
     * Released buffers that never grew, by capacity (made on first use), for the next request of that capacity: a
     * request/response protocol's small messages (netty-bench's 64 B echo) otherwise made a buffer, its views, its
     * pool slice and reference count per message, and took the pool's lock twice. Guarded by {@code this}.
     */
    private ArrayDeque<RegisteredByteBuf>[] recycled;

    private int recycledCount;
    /** False once the channel closed: released buffers give their memory back at once (the pool is shared). */
    private boolean recycling = true;

    /** The channel is connected: direct buffers come from its pool from now on. */
    void attach(BufferPool connectionPool) {
        this.pool = connectionPool;
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity, int maxCapacity) {
        if (initialCapacity < 0 || initialCapacity > maxCapacity) {
            return fallback.directBuffer(initialCapacity, maxCapacity); // Netty's own argument checks and messages
        }
        RegisteredByteBuf reused = takeRecycled(initialCapacity);
        if (reused != null) return reused.reuse(maxCapacity);
        RegisteredByteBuf.Registered m = registered(initialCapacity);
        return m == null
                ? fallback.directBuffer(initialCapacity, maxCapacity)
                : new RegisteredByteBuf(this, m, maxCapacity);
    }

    /** A released buffer of exactly {@code capacity} bytes of the open pool, or null. */
    private synchronized RegisteredByteBuf takeRecycled(int capacity) {
        if (recycledCount == 0 || capacity > RECYCLED_MAX_CAPACITY) return null;
        BufferPool p = pool;
        if (p == null || !p.isOpen()) { // the group closed: its memory is gone, and these buffers' with it
            recycled = null;
            recycledCount = 0;
            return null;
        }
        ArrayDeque<RegisteredByteBuf> q = recycled[capacity];
        RegisteredByteBuf b = q == null ? null : q.pollLast(); // the most recent: its memory is warmest
        if (b != null) recycledCount--;
        return b;
    }

    /**
     * Keeps {@code buf} (its last reference just went; its memory a slice of {@code memoryPool}, never grown) for the
     * next request of its capacity; false when it is not kept (too big, another pool's, the pool closed, enough kept),
     * and the caller gives its memory back. Any thread.
     */
    @SuppressWarnings("unchecked")
    synchronized boolean recycle(RegisteredByteBuf buf, BufferPool memoryPool) {
        int capacity = buf.capacity();
        if (!recycling || capacity > RECYCLED_MAX_CAPACITY || recycledCount >= RECYCLED_MAX) return false;
        if (memoryPool != pool || !memoryPool.isOpen()) return false;
        if (recycled == null) recycled = new ArrayDeque[RECYCLED_MAX_CAPACITY + 1];
        ArrayDeque<RegisteredByteBuf> q = recycled[capacity];
        if (q == null) recycled[capacity] = q = new ArrayDeque<>();
        if (q.size() >= RECYCLED_PER_CAPACITY) return false;
        q.addLast(buf);
        recycledCount++;
        return true;
    }

    /**
     * The channel closed: the buffers kept for reuse give their memory back to the pool, which its loop's other
     * connections share (the group's), and buffers released from now on do so at once. Any thread.
     */
    void stopRecycling() {
        ArrayDeque<RegisteredByteBuf>[] kept;
        synchronized (this) {
            recycling = false;
            kept = recycled;
            recycled = null;
            recycledCount = 0;
        }
        if (kept == null) return;
        for (ArrayDeque<RegisteredByteBuf> q : kept) {
            if (q != null) for (RegisteredByteBuf b : q) b.freeMemory();
        }
    }

    /** Released buffers kept for reuse now (tests). */
    synchronized int recycledCount() {
        return recycledCount;
    }

    /**
     * Memory for a {@link RegisteredByteBuf} that grows to {@code capacity} bytes: registered when it can be, else
     * plain direct memory (freed when the buffer is).
     */
    CleanableDirectBuffer memory(int capacity) {
        RegisteredByteBuf.Registered m = registered(capacity);
        return m != null ? m : PlatformDependent.allocateDirect(capacity);
    }

    /** A registered slice of the pool when the channel is connected and {@code capacity} fits a slab, else null. */
    private RegisteredByteBuf.Registered registered(int capacity) {
        BufferPool p = pool;
        if (p == null || capacity <= 0 || capacity > p.slabSize()) return null;
        try {
            RegisteredBuffer b = p.allocate(capacity);
            return new RegisteredByteBuf.Registered(p, b, b.byteBuffer());
        } catch (IllegalStateException | VerbsException e) {
            return null; // the connection closed (its pool with it), or no slab could be registered: plain memory
            // serves
        }
    }

    @Override
    public ByteBuf directBuffer() {
        return directBuffer(DEFAULT_CAPACITY, Integer.MAX_VALUE);
    }

    @Override
    public ByteBuf directBuffer(int initialCapacity) {
        return directBuffer(initialCapacity, Integer.MAX_VALUE);
    }

    @Override
    public ByteBuf buffer() {
        return directBuffer();
    }

    @Override
    public ByteBuf buffer(int initialCapacity) {
        return directBuffer(initialCapacity);
    }

    @Override
    public ByteBuf buffer(int initialCapacity, int maxCapacity) {
        return directBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf ioBuffer() {
        return directBuffer();
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity) {
        return directBuffer(initialCapacity);
    }

    @Override
    public ByteBuf ioBuffer(int initialCapacity, int maxCapacity) {
        return directBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public ByteBuf heapBuffer() {
        return fallback.heapBuffer();
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity) {
        return fallback.heapBuffer(initialCapacity);
    }

    @Override
    public ByteBuf heapBuffer(int initialCapacity, int maxCapacity) {
        return fallback.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public CompositeByteBuf compositeBuffer() {
        return fallback.compositeBuffer();
    }

    @Override
    public CompositeByteBuf compositeBuffer(int maxNumComponents) {
        return fallback.compositeBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer() {
        return fallback.compositeHeapBuffer();
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer(int maxNumComponents) {
        return fallback.compositeHeapBuffer(maxNumComponents);
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer() {
        return fallback.compositeDirectBuffer();
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer(int maxNumComponents) {
        return fallback.compositeDirectBuffer(maxNumComponents);
    }

    @Override
    public boolean isDirectBufferPooled() {
        return false;
    }

    @Override
    public int calculateNewCapacity(int minNewCapacity, int maxCapacity) {
        return fallback.calculateNewCapacity(minNewCapacity, maxCapacity);
    }
}
