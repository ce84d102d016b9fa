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

    /**
     * {@code ibv_create_srq}: a shared receive queue holding at least {@code attr.maxWr()} receives of
     * {@code attr.maxSge()} entries each, with {@code attr.limit()} armed (0 = not armed).
     */
    SharedReceiveQueue createSrq(SrqAttr attr);

    /** {@code ibv_create_ah}: an address handle for UD sends to the port {@code attr} describes. */
    AddressHandle createAddressHandle(AhAttr attr);

    /**
     * {@code ibv_create_ah_from_wc}: an address handle that answers the sender of a UD receive.
     *
     * @param wc   the receive's completion (its source QP, flags and port data)
     * @param grh  the receive buffer's first 40 bytes ({@link Grh}), where the device put the sender's address
     * @param port the local port the receive came in on
     */
    AddressHandle createAddressHandleFromWc(WorkCompletion wc, java.lang.foreign.MemorySegment grh, int port);

    /** {@code ibv_alloc_mw}. */
    MemoryWindow allocMemoryWindow(MwType type);

    boolean isClosed();

    /** {@code ibv_dealloc_pd}, after closing its QPs, SRQs, windows and regions. Idempotent. */
    @Override
    void close();
}
