package dev.jrdma.verbs;

/**
 * A post to a send or receive queue was refused. Like {@code bad_wr} in C: the work requests before
 * {@link #badIndex()} in the chain were posted, this one and those after it were not.
 */
public final class PostException extends VerbsException {
    private final int badIndex;

    public PostException(String verb, int errno, int badIndex, String message) {
        super(verb, errno, "work request #" + badIndex + " of the chain: " + message);
        this.badIndex = badIndex;
    }

    /** Position in the chain of the first work request that was not posted. */
    public int badIndex() {
        return badIndex;
    }
}
