package dev.jrdma.verbs;

/**
 * A verb failed. Names the verb, the errno where there is one, and what to check.
 * Unchecked, like the verbs' own error returns are easy to forget but never silent.
 */
public class VerbsException extends RuntimeException {
    public static final int EPERM = 1, ENOENT = 2, EIO = 5, EBADF = 9, EAGAIN = 11, ENOMEM = 12, EACCES = 13,
            EFAULT = 14, EBUSY = 16, EEXIST = 17, ENODEV = 19, EINVAL = 22, ENOSPC = 28, ENOSYS = 38,
            EOPNOTSUPP = 95, ETIMEDOUT = 110, ECONNREFUSED = 111;

    private final String verb;
    private final int errno;

    public VerbsException(String verb, int errno, String message) {
        super(format(verb, errno, message));
        this.verb = verb;
        this.errno = errno;
    }

    public VerbsException(String verb, int errno, String message, Throwable cause) {
        super(format(verb, errno, message), cause);
        this.verb = verb;
        this.errno = errno;
    }

    private static String format(String verb, int errno, String message) {
        String err = errno == 0 ? "" : " (" + errnoName(errno) + ")";
        return verb + " failed" + err + ": " + message;
    }

    /** The verb that failed, e.g. {@code ibv_modify_qp}. */
    public String verb() {
        return verb;
    }

    /** The errno, or 0 when the failure was detected in Java. */
    public int errno() {
        return errno;
    }

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
