package dev.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.util.Set;

/** A registered memory region ({@code struct ibv_mr}). Hand {@link #address()}, {@link #rkey()} and the length to a peer. */
public interface MemoryRegion extends AutoCloseable {
    ProtectionDomain pd();

    /** The registered memory. */
    MemorySegment segment();

    /** The address a peer names in RDMA and atomic requests (the MR's iova). */
    long address();

    long length();

    /** The key local work requests use in their SGEs. */
    int lkey();

    /** The key a peer uses to access this region remotely. */
    int rkey();

    Set<Access> access();

    boolean isClosed();

    /** {@code ibv_dereg_mr}. Idempotent. */
    @Override
    void close();
}
