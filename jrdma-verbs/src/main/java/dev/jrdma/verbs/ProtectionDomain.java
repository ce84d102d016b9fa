package dev.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;

/** A protection domain ({@code struct ibv_pd}): memory regions, windows and QPs of one PD may work together. */
public interface ProtectionDomain extends AutoCloseable {
    /** {@return the context the protection domain was allocated in} */
    Context context();

    /**
     * {@code ibv_reg_mr}: registers a native memory segment so the device may access it with the given rights.
     * The segment must stay alive while the region is registered; close the region before its arena.
     * It must be native memory that other threads may access ({@code Arena.ofShared()}, {@code ofAuto()} or
     * {@code global()}): a device touches it from its own threads, so heap and confined segments are refused.
     * REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too, as in libibverbs.
     *
     * @param segment the memory to register
     * @param access  the rights of local work requests and of peers on it
     * @return the region, closed with this protection domain
     * @throws VerbsException (EINVAL) for a heap or confined segment or inconsistent rights; or the provider's errno
     *         (ENOMEM when the memory cannot be pinned, e.g. {@code ulimit -l})
     */
    MemoryRegion registerMemory(MemorySegment segment, Set<Access> access);

    /**
     * {@code ibv_reg_mr} with the rights as arguments; see {@link #registerMemory(MemorySegment, Set)}.
     *
     * @param segment the memory to register: native and shared
     * @param access  the rights; none gives local read access only
     * @return the region, closed with this protection domain
     * @throws VerbsException as {@link #registerMemory(MemorySegment, Set)}
     */
    default MemoryRegion registerMemory(MemorySegment segment, Access... access) {
        return registerMemory(
                segment, access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access));
    }

    /**
     * {@code ibv_create_qp}: a queue pair in the RESET state.
     *
     * @param attr its type, completion queues, capacities and SRQ
     * @return the queue pair, closed with this protection domain
     * @throws VerbsException (EINVAL) for capacities above the device's limits or objects of another context
     */
    QueuePair createQueuePair(QpInitAttr attr);

    /**
     * {@code ibv_create_srq}: a shared receive queue holding at least {@code attr.maxWr()} receives of
     * {@code attr.maxSge()} entries each, with {@code attr.limit()} armed (0 = not armed).
     *
     * @param attr its capacities and limit
     * @return the shared receive queue, closed with this protection domain
     * @throws VerbsException (EINVAL) for capacities above the device's limits
     */
    SharedReceiveQueue createSrq(SrqAttr attr);

    /**
     * {@code ibv_create_ah}: an address handle for UD sends to the port {@code attr} describes.
     *
     * @param attr the remote port's address vector (copied)
     * @return the address handle, closed with this protection domain
     * @throws VerbsException (EINVAL) when the address cannot be resolved, e.g. a RoCE address without {@code isGlobal}
     */
    AddressHandle createAddressHandle(AhAttr attr);

    /**
     * {@code ibv_create_ah_from_wc}: an address handle that answers the sender of a UD receive.
     *
     * @param wc   the receive's completion (its source QP, flags and port data)
     * @param grh  the receive buffer's first 40 bytes ({@link Grh}), where the device put the sender's address
     * @param port the local port the receive came in on
     * @return the address handle, closed with this protection domain
     * @throws VerbsException (EINVAL) when the completion carries no GRH on a port that needs one (RoCE)
     */
    AddressHandle createAddressHandleFromWc(WorkCompletion wc, java.lang.foreign.MemorySegment grh, int port);

    /**
     * {@code ibv_alloc_mw}: an unbound memory window.
     *
     * @param type type 1 (bound with {@link QueuePair#bindMemoryWindow}) or type 2 (bound with a BIND_MW request)
     * @return the window, closed with this protection domain
     * @throws VerbsException (EOPNOTSUPP) when the device has no windows of that type
     */
    MemoryWindow allocMemoryWindow(MwType type);

    /** {@return whether it was closed (directly or with its context)} */
    boolean isClosed();

    /** {@code ibv_dealloc_pd}, after closing its QPs, SRQs, windows and regions. Idempotent. */
    @Override
    void close();
}
