package dev.jrdma.verbs;

/**
 * An address handle ({@code struct ibv_ah}): the path to one remote port, named by UD sends
 * ({@link SendWorkRequest#ud}). Create it from an {@link AhAttr} or from a received completion
 * ({@link ProtectionDomain#createAddressHandleFromWc}) to answer the sender.
 */
public interface AddressHandle extends AutoCloseable {
    /** {@return the protection domain the handle was created in} */
    ProtectionDomain pd();

    /** {@return the address vector it was created with (a copy)} */
    AhAttr attr();

    /** {@return whether it was destroyed (directly or with its protection domain)} */
    boolean isClosed();

    /** {@code ibv_destroy_ah}. Idempotent. */
    @Override
    void close();
}
