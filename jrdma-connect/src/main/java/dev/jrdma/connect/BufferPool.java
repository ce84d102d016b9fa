package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Registered memory without a registration per buffer: big slabs are registered once and cut into slices of
 * power-of-two sizes (64 bytes up to the slab size), which go back to a free list when closed. A request larger
 * than a slab gets a region of its own, deregistered when it is given back. Thread-safe.
 *
 * <p>Slices are 64-byte aligned, so an 8-byte word at offset 0 is a valid atomic target.
 *
 * <p>Memory is freed only after its region's deregistration succeeded: while a region is registered the device may
 * still write into it (a late READ response, an atomic result). When a deregistration fails the memory is kept,
 * deliberately leaked for the rest of the process, counted in {@link #leakedBytes()} and logged.
 */
public final class BufferPool implements AutoCloseable {
    static final int MIN_SHIFT = 6;

    private final ProtectionDomain pd;
    private final long slabSize;
    private final Set<Access> access;
    private static final System.Logger LOG = System.getLogger(BufferPool.class.getName());

    /** A region of the pool and the arena that owns its memory (freed only once the region is deregistered). */
    private record Registration(MemoryRegion region, Arena arena) {}

    private final List<MemoryRegion> slabs = new ArrayList<>();
    private final List<Registration> registrations = new ArrayList<>();
    private final List<ArrayDeque<RegisteredBuffer>> free;
    private final int maxClass;
    private MemoryRegion current;
    private long bump;
    /** Written under the lock, read without it by {@link #isOpen}. */
    private volatile boolean closed;

    private long registered;
    private long leaked;
    private int inUse;

    /**
     * A pool that registers nothing until the first allocation.
     *
     * @param pd       where the slabs are registered
     * @param slabSize bytes per slab, a power of two of at least 4 KiB
     * @param access   rights of every slab (LOCAL_WRITE, and REMOTE_* for buffers peers may touch)
     * @throws IllegalArgumentException when {@code slabSize} is not a power of two of at least 4096
     */
    public BufferPool(ProtectionDomain pd, long slabSize, Set<Access> access) {
        if (slabSize < 4096 || Long.bitCount(slabSize) != 1)
            throw new IllegalArgumentException("slab size must be a power of two >= 4096, not " + slabSize);
        this.pd = pd;
        this.slabSize = slabSize;
        this.access = EnumSet.copyOf(access);
        this.maxClass = Long.numberOfTrailingZeros(slabSize) - MIN_SHIFT;
        this.free = new ArrayList<>(maxClass + 1);
        for (int i = 0; i <= maxClass; i++) free.add(new ArrayDeque<>());
    }

    /** {@return the bytes per slab, a power of two: the largest size served by a slice} */
    public long slabSize() {
        return slabSize;
    }

    /** {@return the rights every region of the pool is registered with} */
    public Set<Access> access() {
        return access;
    }

    /** {@return the bytes registered now: slabs (never given back before close) and large buffers still out} */
    public synchronized long registeredBytes() {
        return registered;
    }

    /**
     * {@return the bytes kept because their deregistration failed: never freed, since the device may still write
     * into them}
     */
    public synchronized long leakedBytes() {
        return leaked;
    }

    /** {@return whether the pool is open: its memory is usable (no lock; it may close right after)} */
    public boolean isOpen() {
        return !closed;
    }

    /** {@return how many buffers are handed out and not yet given back} */
    public synchronized int inUse() {
        return inUse;
    }

    /** {@return how many slabs are registered} */
    public synchronized int slabCount() {
        return slabs.size();
    }

    /**
     * A registered buffer of exactly {@code size} bytes: a slice of a slab (rounded up to a power of two of at least
     * 64 bytes) or, above the slab size, a region of its own. Contents are not cleared.
     *
     * @param size bytes, at least 1
     * @return the buffer; close it to give it back
     * @throws IllegalArgumentException when {@code size} is not positive
     * @throws IllegalStateException    when the pool is closed
     * @throws dev.jrdma.verbs.VerbsException when registering a new slab or region fails
     */
    public RegisteredBuffer allocate(long size) {
        if (size <= 0) throw new IllegalArgumentException("buffer size must be positive, not " + size);
        synchronized (this) {
            if (closed) throw new IllegalStateException("the buffer pool is closed");
            RegisteredBuffer b = slice(size);
            inUse++;
            return b;
        }
    }

    /** A new buffer of {@code size} bytes: a free slice, a new one of the current slab, or a region of its own. Caller holds the lock. */
    private RegisteredBuffer slice(long size) {
        if (size > slabSize) {
            MemoryRegion mr = register(size);
            return new RegisteredBuffer(this, mr, 0, size, -1);
        }
        int cls = Math.max(0, 64 - Long.numberOfLeadingZeros(size - 1) - MIN_SHIFT);
        long chunk = 1L << (cls + MIN_SHIFT);
        RegisteredBuffer old = free.get(cls).poll();
        if (old != null) return new RegisteredBuffer(this, old.region(), old.regionOffset(), size, cls);
        if (current == null || bump + chunk > slabSize) {
            current = register(slabSize);
            bump = 0;
        }
        RegisteredBuffer b = new RegisteredBuffer(this, current, bump, size, cls);
        bump += chunk;
        return b;
    }

    /**
     * The region of this pool that holds {@code [address, address + length)} under {@code rkey}, or null: how an
     * export named by a {@link RemoteBuffer} finds the memory it opens to a peer.
     */
    synchronized MemoryRegion regionFor(long address, int rkey, long length) {
        for (Registration r : registrations) {
            MemoryRegion mr = r.region();
            if (mr.rkey() == rkey
                    && address >= mr.address()
                    && length >= 0
                    && address - mr.address() <= mr.length() - length) return mr;
        }
        return null;
    }

    /**
     * A registered buffer holding a copy of {@code data}, as {@link #allocate(long)} (an empty array gets a 1-byte
     * buffer).
     *
     * @param data the bytes to copy
     * @return the buffer; close it to give it back
     * @throws IllegalStateException when the pool is closed
     */
    public RegisteredBuffer allocate(byte[] data) {
        RegisteredBuffer b = allocate(Math.max(1, data.length));
        MemorySegment.copy(data, 0, b.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, 0, data.length);
        return b;
    }

    private MemoryRegion register(long size) {
        @SuppressWarnings(
                "MustBeClosedChecker") // its Registration owns it (closed on release or close); here on failure
        Arena arena = Arena.ofShared();
        try {
            MemorySegment seg = arena.allocate(size, 4096);
            MemoryRegion mr = pd.registerMemory(seg, access);
            registrations.add(new Registration(mr, arena));
            if (size == slabSize) slabs.add(mr);
            registered += size;
            return mr;
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    void release(RegisteredBuffer b) {
        synchronized (this) {
            if (closed) return;
            inUse--;
            if (b.sizeClass() < 0) {
                // a dedicated region: deregister it, then free its memory
                Registration r = registrationOf(b.region());
                registrations.remove(r);
                registered -= r.region().length();
                deregisterAndFree(r);
                return;
            }
            free.get(b.sizeClass()).push(b);
        }
    }

    private Registration registrationOf(MemoryRegion mr) {
        for (Registration r : registrations) {
            if (r.region() == mr) return r;
        }
        throw new IllegalStateException("not a region of this pool: " + mr);
    }

    /** Deregisters {@code r}'s region and frees its memory; a failed deregistration keeps (leaks) the memory. Caller holds the lock. */
    private void deregisterAndFree(Registration r) {
        MemoryRegion mr = r.region();
        try {
            mr.close();
        } catch (RuntimeException e) {
            if (!mr.isClosed()) {
                leaked += mr.length();
                LOG.log(
                        System.Logger.Level.WARNING,
                        "deregistering " + mr + " failed; its " + mr.length()
                                + " bytes are kept, never freed, because the device may still write into them ("
                                + leaked + " bytes kept by this pool)",
                        e);
                return;
            }
            // it was deregistered anyway (its protection domain was closed first, which closed it)
        }
        r.arena().close();
    }

    /**
     * Deregisters every region and frees its memory (memory whose deregistration fails is kept, see
     * {@link #leakedBytes()}); buffers still out become unusable. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
            for (Registration r : registrations) deregisterAndFree(r);
            registrations.clear();
            slabs.clear();
        }
    }
}
