package dev.jrdma.cm;

import dev.jrdma.verbs.VerbsException;

/** A failed librdmacm call, with the errno it set (0 when the call was refused before reaching librdmacm). */
public final class CmException extends Exception {
    /** The librdmacm function that failed (part of the serialized form). */
    private final String call;
    /** The errno it set, or 0 (part of the serialized form). */
    private final int errno;

    CmException(String call, int errno) {
        this(call, errno, null);
    }

    CmException(String call, int errno, String detail) {
        super(call + " failed" + (errno != 0 ? " (" + errnoName(errno) + ")" : "")
                + (detail != null ? ": " + detail : ""));
        this.call = call;
        this.errno = errno;
    }

    /** {@return the librdmacm function that failed, e.g. {@code rdma_resolve_addr}} */
    public String call() {
        return call;
    }

    /** {@return the (positive) errno the call set, or 0 when it was refused before reaching librdmacm} */
    public int errno() {
        return errno;
    }

    /**
     * An errno's name with what it means for rdma_cm, e.g. {@code "ECONNREFUSED, connection refused: nothing listens
     * there"}; errnos rdma_cm does not give a meaning of its own are named as {@link VerbsException#errnoName} does.
     *
     * @param errno a positive errno value
     * @return its name and meaning
     */
    public static String errnoName(int errno) {
        return switch (errno) {
            case 98 -> "EADDRINUSE, address already in use";
            case 99 -> "EADDRNOTAVAIL, the address is not on an RDMA device here";
            case 101 -> "ENETUNREACH, network unreachable: no RDMA device has a route to it";
            case 104 -> "ECONNRESET, connection reset";
            case 110 -> "ETIMEDOUT, timed out";
            case 111 -> "ECONNREFUSED, connection refused: nothing listens there";
            case 113 -> "EHOSTUNREACH, no route to host";
            default -> VerbsException.errnoName(errno);
        };
    }
}
