package dev.jrdma.bench;

/** A benchmark failed for a reason the user can act on; the message says what and what to do. */
public class BenchException extends RuntimeException {
    /**
     * A failure with what happened and what to do.
     *
     * @param message what failed and what to do
     */
    public BenchException(String message) {
        super(message);
    }

    /**
     * A failure with its cause.
     *
     * @param message what failed and what to do
     * @param cause   the underlying exception
     */
    public BenchException(String message, Throwable cause) {
        super(message, cause);
    }
}
