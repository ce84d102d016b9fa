package dev.jrdma.verbs;

/** A verbs object was used after it (or its parent) was closed. */
public final class ClosedException extends VerbsException {
    /**
     * A use of a closed object (errno {@link #EBADF}).
     *
     * @param verb the verb that was called, e.g. {@code ibv_post_send}
     * @param what the object, e.g. "QP 0x11"
     */
    public ClosedException(String verb, String what) {
        super(verb, VerbsException.EBADF, what + " is closed: create a new one (closing a parent closes its children)");
    }
}
