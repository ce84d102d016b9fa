package dev.jrdma.netty;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.RegisteredBuffer;
import java.nio.ByteBuffer;

/**
 * A channel's registered send memory: {@code slots} slices of {@code slotSize} bytes, taken and given back in
 * order (sends on one reliable connection complete in the order they were posted). Outbound bytes of buffers that are
 * not registered memory of the connection are copied here once, and the adapter sends them from here: the only copy
 * on the way out. Event loop only.
 */
final class SendRing implements AutoCloseable {
    private final RegisteredBuffer memory;
    private final int slotSize;
    private final ByteBuffer[] views;
    private int next;
    private int inUse;

    SendRing(BufferPool pool, int slots, int slotSize) {
        this.slotSize = slotSize;
        this.memory = pool.allocate((long) slots * slotSize);
        this.views = new ByteBuffer[slots];
        ByteBuffer whole = memory.byteBuffer();
        for (int i = 0; i < slots; i++) views[i] = whole.slice(i * slotSize, slotSize);
    }

    int slotSize() {
        return slotSize;
    }

    int inUse() {
        return inUse;
    }

    /** The next free slot (the caller keeps fewer sends in flight than there are slots). */
    int take() {
        int slot = next;
        next = next + 1 == views.length ? 0 : next + 1;
        inUse++;
        return slot;
    }

    /** Gives back the slot {@link #take} just returned, unsent. */
    void untake() {
        next = next == 0 ? views.length - 1 : next - 1;
        inUse--;
    }

    /** The oldest {@code n} slots are free again. */
    void release(int n) {
        inUse -= n;
    }

    /** The slot's memory, ready to receive {@code length} bytes. */
    ByteBuffer view(int slot, int length) {
        ByteBuffer b = views[slot];
        b.clear().limit(length);
        return b;
    }

    RegisteredBuffer memory() {
        return memory;
    }

    long offset(int slot) {
        return (long) slot * slotSize;
    }

    @Override
    public void close() {
        memory.close();
    }
}
