package dev.jrdma.verbs;

/**
 * A memory window ({@code struct ibv_mw}): remote access to a part of a region, granted and revoked without
 * re-registering. Type 1 is bound with {@link QueuePair#bindMemoryWindow}; type 2 with a BIND_MW work request
 * and revoked with LOCAL_INV (or a peer's SEND_WITH_INV).
 */
public interface MemoryWindow extends AutoCloseable {
    /** {@return the protection domain the window was allocated in} */
    ProtectionDomain pd();

    /** {@return the window's type} */
    MwType type();

    /** {@return the rkey of the current binding (changes with every bind)} */
    int rkey();

    /** {@return whether it was deallocated (directly or with its protection domain)} */
    boolean isClosed();

    /** {@code ibv_dealloc_mw}: revokes any binding. Idempotent. */
    @Override
    void close();
}
