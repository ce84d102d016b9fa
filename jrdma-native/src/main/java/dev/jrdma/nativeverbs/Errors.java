package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.VerbsException;
import java.lang.foreign.MemorySegment;

/** Builds the exceptions of failed verbs: the verb, the errno, what to check. */
final class Errors {
    private Errors() {}

    /** The errno of an int-returning verb: libibverbs returns it (positive), or -1/-errno with errno set. */
    static int errno(int rc, MemorySegment state) {
        if (rc > 0) return rc;
        int e = Ibv.errno(state);
        return e != 0 ? e : -rc;
    }

    static VerbsException verb(String verb, int errno, String whatToCheck) {
        String hint = switch (errno) {
            case VerbsException.EOPNOTSUPP, VerbsException.ENOSYS -> "not supported by this device; " + whatToCheck;
            case VerbsException.EPERM, VerbsException.EACCES ->
                "permission denied (run as a user allowed to use /dev/infiniband, or as root); " + whatToCheck;
            default -> whatToCheck;
        };
        return new VerbsException(verb, errno, hint);
    }

    static VerbsException unsupported(String verb, String what) {
        return new VerbsException(verb, VerbsException.EOPNOTSUPP, what + " is not supported by this device");
    }
}
