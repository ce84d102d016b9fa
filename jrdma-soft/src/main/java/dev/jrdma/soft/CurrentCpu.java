package dev.jrdma.soft;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The CPU the calling thread runs on now ({@code sched_getcpu(3)}: glibc reads it from the thread's rseq area or the
 * vDSO, no system call), so that a thread spinning for its same-host peer's answer can tell that the peer's thread last
 * ran on this very CPU and is waiting for it ({@link ProgressEngine#progressFromPoll}). A hint: the thread may move
 * right after the call.
 */
final class CurrentCpu {
    /** {@link #get}'s answer when the CPU is not known (no glibc, or the call failed). */
    static final int UNKNOWN = -1;

    private static final MethodHandle GETCPU = find();

    private CurrentCpu() {}

    private static MethodHandle find() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup()
                    .find("sched_getcpu")
                    .map(f -> linker.downcallHandle(
                            f, FunctionDescriptor.of(ValueLayout.JAVA_INT), Linker.Option.critical(false)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null; // no native access (or no such function): the hint is never given
        }
    }

    /** {@return the CPU the calling thread runs on, or {@link #UNKNOWN}} */
    static int get() {
        if (GETCPU == null) return UNKNOWN;
        try {
            int cpu = (int) GETCPU.invokeExact();
            return cpu >= 0 ? cpu : UNKNOWN;
        } catch (Throwable e) {
            return UNKNOWN;
        }
    }
}
