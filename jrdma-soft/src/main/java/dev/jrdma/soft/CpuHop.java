package dev.jrdma.soft;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Moves the calling thread off the CPU it runs on, once: its affinity without that CPU ({@code sched_setaffinity(2)}:
 * the kernel moves it at once), then its own affinity again, so the scheduler may place it anywhere from then on as
 * before. For a thread that busy-polls for a same-host peer whose thread is waiting for this very CPU
 * ({@link ProgressEngine#progressFromPoll}): the kernel does not separate them by itself while they hand the CPU to each
 * other, and on one core each hop of a ping-pong costs a context switch at least (a spinning pair waits out whole
 * busy-poll budgets: ~211 us a round trip). A thread allowed on one CPU only is not moved. Its CPU set is the
 * thread's own, read at each move (a set the application gave it stays, whole, once the move is over).
 */
final class CpuHop {
    /** {@code cpu_set_t}: 1024 CPUs. */
    private static final int SET_BYTES = 128;

    private static final System.Logger LOG = System.getLogger(CpuHop.class.getName());
    private static final MethodHandle GET, SET;

    static {
        MethodHandle get = null, set = null;
        try {
            Linker linker = Linker.nativeLinker();
            var lookup = linker.defaultLookup();
            FunctionDescriptor d = FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
            var g = lookup.find("sched_getaffinity");
            var s = lookup.find("sched_setaffinity");
            if (g.isPresent() && s.isPresent()) {
                get = linker.downcallHandle(g.get(), d);
                set = linker.downcallHandle(s.get(), d);
            }
        } catch (RuntimeException | LinkageError e) {
            // no native access: never moves
        }
        GET = get;
        SET = set;
    }

    private final MemorySegment own = Arena.global().allocate(SET_BYTES, 8);
    private final MemorySegment without = Arena.global().allocate(SET_BYTES, 8);
    /** One thread at a time uses the two sets; another one skips its move. */
    private final AtomicBoolean busy = new AtomicBoolean();

    /**
     * Moves the calling thread off {@code cpu} (the one it runs on), keeping it within its own affinity.
     *
     * @param cpu the CPU the thread runs on ({@link CurrentCpu#get})
     * @return whether it was moved (false: unknown CPU, no other CPU allowed, another thread moving, or a failed call)
     */
    boolean moveOff(int cpu) {
        if (SET == null || cpu < 0 || cpu >= SET_BYTES * 8 || !busy.compareAndSet(false, true)) return false;
        try {
            if ((int) GET.invokeExact(0, (long) SET_BYTES, own) != 0) return false;
            MemorySegment.copy(own, 0, without, 0, SET_BYTES);
            long word = without.get(ValueLayout.JAVA_LONG, (cpu >>> 6) * 8L);
            word &= ~(1L << (cpu & 63));
            without.set(ValueLayout.JAVA_LONG, (cpu >>> 6) * 8L, word);
            if (isEmpty(without)) return false; // allowed on this CPU alone
            if ((int) SET.invokeExact(0, (long) SET_BYTES, without) != 0) return false;
            // back to its own set at once: the kernel moved it already and leaves it where it is now
            if (!restore(2))
                LOG.log(
                        System.Logger.Level.WARNING,
                        Thread.currentThread().getName()
                                + ": sched_setaffinity could not give the thread its CPUs back; CPU " + cpu
                                + " stays excluded");
            return true;
        } catch (Throwable e) {
            return false;
        } finally {
            busy.set(false);
        }
    }

    /** Gives the calling thread its own CPU set back, in at most {@code tries} calls; false when each failed. */
    private boolean restore(int tries) throws Throwable {
        for (int i = 0; i < tries; i++) if ((int) SET.invokeExact(0, (long) SET_BYTES, own) == 0) return true;
        return false;
    }

    private static boolean isEmpty(MemorySegment set) {
        for (int i = 0; i < SET_BYTES; i += 8) if (set.get(ValueLayout.JAVA_LONG, i) != 0) return false;
        return true;
    }
}
