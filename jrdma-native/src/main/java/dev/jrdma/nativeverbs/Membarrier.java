package dev.jrdma.nativeverbs;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/**
 * Linux membarrier(2), private expedited: one call makes every CPU that runs a thread of this process execute a
 * full memory barrier. {@link QueueGate}'s owner thread enters and leaves with plain stores and loads; the rare
 * thread that takes the gate from it calls {@link #fence} (the asymmetric fence of liburcu's membarrier flavour):
 * the common case pays no atomic instruction, the rare one a system call. {@link #AVAILABLE} is false on other
 * systems, on kernels before 4.14, where a seccomp filter refuses it, or with {@code -Djrdma.native.biasedGates=false};
 * the gates then use a compare-and-set for everyone.
 */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class Membarrier {
    private Membarrier() {}

    /** The commands of {@code enum membarrier_cmd} (linux/membarrier.h). */
    private static final int CMD_QUERY = 0, CMD_PRIVATE_EXPEDITED = 1 << 3, CMD_REGISTER_PRIVATE_EXPEDITED = 1 << 4;

    private static final MethodHandle SYSCALL;
    private static final long NR;
    /** Whether {@link #fence} works in this process (registered, supported). */
    static final boolean AVAILABLE;

    static {
        long nr = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> 324;
            case "aarch64" -> 283;
            default -> -1;
        };
        MethodHandle h = null;
        boolean ok = false;
        if (nr > 0
                && System.getProperty("os.name", "").startsWith("Linux")
                && Boolean.parseBoolean(System.getProperty("jrdma.native.biasedGates", "true"))) {
            try {
                Linker linker = Linker.nativeLinker();
                // long syscall(long number, ...): the membarrier arguments (int cmd, unsigned flags, int cpu_id) are
                // variadic
                h = linker.downcallHandle(
                        linker.defaultLookup().find("syscall").orElseThrow(),
                        FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT),
                        Linker.Option.firstVariadicArg(1));
                long supported = (long) h.invokeExact(nr, CMD_QUERY, 0, 0);
                int need = CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED;
                ok = supported >= 0
                        && (supported & need) == need
                        && (long) h.invokeExact(nr, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
            } catch (Throwable t) {
                ok = false; // no libc syscall, or native access refused: the gates keep their compare-and-set
            }
        }
        SYSCALL = h;
        NR = nr;
        AVAILABLE = ok;
    }

    /** A full memory barrier on every CPU running a thread of this process, this one included. Only when {@link #AVAILABLE}. */
    static void fence() {
        long rc;
        try {
            rc = (long) SYSCALL.invokeExact(NR, CMD_PRIVATE_EXPEDITED, 0, 0);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        // registered at start-up, so the kernel has no reason to refuse; if it does, no gate can be taken safely
        if (rc != 0) throw new InternalError("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration");
    }
}
