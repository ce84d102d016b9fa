package dev.jrdma.verbs;

/**
 * A post to a send or receive queue was refused. Like {@code bad_wr} in C: the work requests before
 * {@link #badIndex()} in the chain were posted, this one and those after it were not.
 */
public final class PostException extends VerbsException {
    /** The position of the first request not posted (part of the serialized form). */
    private final int badIndex;

    /**
     * A refused post.
     *
     * @param verb     the verb, e.g. {@code ibv_post_send}
     * @param errno    the errno, e.g. {@link #ENOMEM} for a full queue or {@link #EINVAL} for a bad request
     * @param badIndex the position in the chain of the first request not posted, from 0
     * @param message  what was wrong with that request
     */
    public PostException(String verb, int errno, int badIndex, String message) {
        super(verb, errno, "work request #" + badIndex + " of the chain: " + message);
        this.badIndex = badIndex;
    }

    /** {@return the position in the chain (from 0) of the first work request that was not posted} */
    public int badIndex() {
        return badIndex;
    }
}
