package dev.jrdma.connect;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A received message lent in its registered receive buffer ({@link Endpoint#onReceiveLent}): read it in place, then
 * {@link #release()} it once. One object per receive buffer, reused for every message that lands there, so nothing is
 * allocated per message; do not use it after its release.
 */
public final class LentMessage {
    private final Endpoint endpoint;
    private final int slot;
    private final MemorySegment memory;
    private int length;
    private boolean hasImmediate;
    private int immediate;
    /** Lent and not yet released (written by the endpoint's owner; read by a releasing thread to refuse twice). */
    volatile boolean lent;
    /** The release of another thread, handed to the owner as a command (one per slot: nothing allocated per release). */
    final Runnable releaseOnOwner;
    /** Scans of the endpoint's leak watch that found it lent (the owner's); whether it was reported as held too long. */
    int scansHeld;

    boolean reported;
    /** Where it was lent or last touched ({@link #touch}), when the group records sites; else null. */
    private volatile Throwable site;

    LentMessage(Endpoint endpoint, int slot, MemorySegment memory) {
        this.endpoint = endpoint;
        this.slot = slot;
        this.memory = memory;
        this.releaseOnOwner = () -> endpoint.releaseOnOwner(this);
    }

    /** It is back (the endpoint's owner). */
    void released() {
        lent = false;
    }

    /** Lends it again with a new message (the endpoint's owner). */
    LentMessage lend(int newLength, boolean newHasImmediate, int newImmediate) {
        length = newLength;
        hasImmediate = newHasImmediate;
        immediate = newImmediate;
        scansHeld = 0;
        reported = false;
        site = endpoint.group().recordsLentSites() ? new Throwable("lent: " + this) : null;
        lent = true;
        return this;
    }

    /**
     * Records where the message is now, for the report of one held too long: when the group records sites
     * ({@link EndpointGroup#recordLentSites}, on with Netty's leak detection level ADVANCED or PARANOID), the stack of
     * this call with {@code hint}; else nothing. jrdma-netty's received buffers call it from their {@code touch}, so the
     * last handler that got the message is named. Any thread.
     *
     * @param hint what holds the message now (a handler's context, say), or null
     * @return this message
     */
    public LentMessage touch(Object hint) {
        if (site != null) site = new Throwable("touched: " + hint, site);
        return this;
    }

    /** {@return where it was lent or last touched, or null when sites are not recorded} */
    Throwable site() {
        return site;
    }

    /**
     * {@return the index of the receive buffer the message lies in (0 up to the endpoint's receive buffers), or -1 for
     * a message received before the handler was set (then a copy on the heap)}
     */
    public int slot() {
        return slot;
    }

    /**
     * {@return the whole receive buffer the message lies in, from its first byte (the same segment for every message
     * of this slot: nothing allocated); the message is its first {@link #length()} bytes}
     */
    public MemorySegment slotMemory() {
        return memory;
    }

    /** {@return the payload's length in bytes (0 for a write with immediate)} */
    public int length() {
        return length;
    }

    /** {@return the payload as a segment over the receive buffer, no copy (a new slice object per call)} */
    public MemorySegment segment() {
        return memory.asSlice(0, length);
    }

    /** {@return a copy of the payload} */
    public byte[] bytes() {
        byte[] copy = new byte[length];
        MemorySegment.copy(memory, ValueLayout.JAVA_BYTE, 0, copy, 0, length);
        return copy;
    }

    /** {@return true for the notification of a peer's RDMA write with immediate, false for a send's bytes} */
    public boolean isWriteWithImmediate() {
        return hasImmediate;
    }

    /**
     * {@return the immediate value of a write with immediate}
     *
     * @throws IllegalStateException when the message is a send's bytes
     */
    public int immediate() {
        if (!hasImmediate) throw new IllegalStateException("not a write with immediate");
        return immediate;
    }

    /**
     * Gives the receive buffer back: it is posted again and the peer gets its credit back. Any thread.
     *
     * @throws IllegalStateException when it was released already
     */
    public void release() {
        endpoint.release(this);
    }

    @Override
    public String toString() {
        return hasImmediate
                ? "LentMessage[slot " + slot + ", write with immediate 0x" + Integer.toHexString(immediate) + "]"
                : "LentMessage[slot " + slot + ", " + length + " bytes]";
    }
}
