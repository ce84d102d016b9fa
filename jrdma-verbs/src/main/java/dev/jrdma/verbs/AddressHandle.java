package dev.jrdma.verbs;

/**
 * An address handle ({@code struct ibv_ah}): the path to one remote port, named by UD sends
 * ({@link SendWorkRequest#ud}). Create it from an {@link AhAttr} or from a received completion
 * ({@link ProtectionDomain#createAddressHandleFromWc}) to answer the sender.
 */
public interface AddressHandle extends AutoCloseable {
    ProtectionDomain pd();

    /** The address vector it was created with (a copy). */
    AhAttr attr();

    boolean isClosed();

    /** {@code ibv_destroy_ah}. Idempotent. */
    @Override
    void close();
}
