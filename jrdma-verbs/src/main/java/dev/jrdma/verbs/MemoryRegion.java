package dev.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.util.Set;

/** A registered memory region ({@code struct ibv_mr}). Hand {@link #address()}, {@link #rkey()} and the length to a peer. */
public interface MemoryRegion extends AutoCloseable {
    /** {@return the protection domain the region was registered in} */
    ProtectionDomain pd();

    /** {@return the registered memory} */
    MemorySegment segment();

    /** {@return the address a peer names in RDMA and atomic requests (the MR's iova), and local SGEs use} */
    long address();

    /** {@return the registered length in bytes} */
    long length();

    /** {@return the key local work requests use in their SGEs ({@code lkey})} */
    int lkey();

    /** {@return the key a peer uses to access this region remotely ({@code rkey})} */
    int rkey();

    /** {@return the rights it was registered with} */
    Set<Access> access();

    /** {@return whether it was deregistered (directly or with its protection domain)} */
    boolean isClosed();

    /** {@code ibv_dereg_mr}. Idempotent. */
    @Override
    void close();
}
