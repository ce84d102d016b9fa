package dev.jrdma.bench;

/** A benchmark failed for a reason the user can act on; the message says what and what to do. */
public class BenchException extends RuntimeException {
    public BenchException(String message) {
        super(message);
    }

    public BenchException(String message, Throwable cause) {
        super(message, cause);
    }
}
