package dev.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;

/** A protection domain ({@code struct ibv_pd}): memory regions, windows and QPs of one PD may work together. */
public interface ProtectionDomain extends AutoCloseable {
    Context context();

    /**
     * {@code ibv_reg_mr}: registers a native memory segment so the device may access it with the given rights.
     * The segment must stay alive while the region is registered; close the region before its arena.
     * It must be native memory that other threads may access ({@code Arena.ofShared()}, {@code ofAuto()} or
     * {@code global()}): a device touches it from its own threads, so heap and confined segments are refused.
     * REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too, as in libibverbs.
     */
    MemoryRegion registerMemory(MemorySegment segment, Set<Access> access);

    default MemoryRegion registerMemory(MemorySegment segment, Access... access) {
        return registerMemory(segment, access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access));
    }

    /** {@code ibv_create_qp}. */
    QueuePair createQueuePair(QpInitAttr attr);

    /** {@code ibv_alloc_mw}. */
    MemoryWindow allocMemoryWindow(MwType type);

    boolean isClosed();

    /** {@code ibv_dealloc_pd}, after closing its QPs, windows and regions. Idempotent. */
    @Override
    void close();
}
