package dev.jrdma.verbs;

/** A verbs object was used after it (or its parent) was closed. */
public final class ClosedException extends VerbsException {
    public ClosedException(String verb, String what) {
        super(verb, VerbsException.EBADF, what + " is closed: create a new one (closing a parent closes its children)");
    }
}
