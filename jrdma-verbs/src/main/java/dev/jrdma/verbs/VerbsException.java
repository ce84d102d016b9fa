package dev.jrdma.verbs;

/**
 * A verb failed. Names the verb, the errno where there is one, and what to check.
 * Unchecked, like the verbs' own error returns are easy to forget but never silent.
 */
public class VerbsException extends RuntimeException {
    /**
     * Linux errno values that verbs report, for comparing with {@link #errno()}: {@code EPERM} 1, {@code ENOENT} 2,
     * {@code EIO} 5, {@code EBADF} 9 (a closed object), {@code EAGAIN} 11, {@code ENOMEM} 12 (also: memory could not be
     * pinned), {@code EACCES} 13, {@code EFAULT} 14, {@code EBUSY} 16, {@code EEXIST} 17, {@code ENODEV} 19 (no such device),
     * {@code EINVAL} 22 (a bad argument or state), {@code ENOSPC} 28 (a full queue, a CQ overrun), {@code ENOSYS} 38,
     * {@code EOPNOTSUPP} 95 (not supported by this device), {@code ETIMEDOUT} 110, {@code ECONNREFUSED} 111.
     */
    public static final int EPERM = 1,
            ENOENT = 2,
            EIO = 5,
            EBADF = 9,
            EAGAIN = 11,
            ENOMEM = 12,
            EACCES = 13,
            EFAULT = 14,
            EBUSY = 16,
            EEXIST = 17,
            ENODEV = 19,
            EINVAL = 22,
            ENOSPC = 28,
            ENOSYS = 38,
            EOPNOTSUPP = 95,
            ETIMEDOUT = 110,
            ECONNREFUSED = 111;

    /** The verb that failed (part of the serialized form). */
    private final String verb;
    /** The errno, or 0 (part of the serialized form). */
    private final int errno;

    /**
     * A failure of {@code verb}.
     *
     * @param verb    the verb that failed, e.g. {@code ibv_modify_qp}
     * @param errno   the errno, or 0 when the failure was detected in Java
     * @param message what went wrong and what to check
     */
    public VerbsException(String verb, int errno, String message) {
        super(format(verb, errno, message));
        this.verb = verb;
        this.errno = errno;
    }

    /**
     * A failure of {@code verb} caused by another exception.
     *
     * @param verb    the verb that failed, e.g. {@code ibv_reg_mr}
     * @param errno   the errno, or 0 when the failure was detected in Java
     * @param message what went wrong and what to check
     * @param cause   the underlying exception
     */
    public VerbsException(String verb, int errno, String message, Throwable cause) {
        super(format(verb, errno, message), cause);
        this.verb = verb;
        this.errno = errno;
    }

    private static String format(String verb, int errno, String message) {
        String err = errno == 0 ? "" : " (" + errnoName(errno) + ")";
        return verb + " failed" + err + ": " + message;
    }

    /** {@return the verb that failed, e.g. {@code ibv_modify_qp}} */
    public String verb() {
        return verb;
    }

    /** {@return the errno, or 0 when the failure was detected in Java} */
    public int errno() {
        return errno;
    }

    /**
     * The symbolic name and meaning of an errno, as messages print it.
     *
     * @param errno a Linux errno value
     * @return e.g. "EINVAL, invalid argument", or "errno N" for a value not listed here
     */
    public static String errnoName(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM, operation not permitted";
            case ENOENT -> "ENOENT, no such entry";
            case EIO -> "EIO, input/output error";
            case EBADF -> "EBADF, bad file descriptor";
            case EAGAIN -> "EAGAIN, resource temporarily unavailable";
            case ENOMEM -> "ENOMEM, cannot allocate memory";
            case EACCES -> "EACCES, permission denied";
            case EFAULT -> "EFAULT, bad address";
            case EBUSY -> "EBUSY, resource busy";
            case EEXIST -> "EEXIST, already exists";
            case ENODEV -> "ENODEV, no such device";
            case EINVAL -> "EINVAL, invalid argument";
            case ENOSPC -> "ENOSPC, no space left";
            case ENOSYS -> "ENOSYS, not implemented";
            case EOPNOTSUPP -> "EOPNOTSUPP, operation not supported";
            case ETIMEDOUT -> "ETIMEDOUT, timed out";
            case ECONNREFUSED -> "ECONNREFUSED, connection refused";
            default -> "errno " + errno;
        };
    }
}
