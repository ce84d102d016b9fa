package dev.jrdma.soft;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * The libc calls of {@link LinuxUdpLink}, bound once (Linux on x86-64 or AArch64 with native access enabled for this
 * module; {@link #AVAILABLE} says whether they are): socket set-up, the non-blocking send and receive calls, the
 * receive thread's {@code poll} and its wake-up eventfd.
 *
 * <p>The short non-blocking calls of the data path ({@code sendto}, {@code sendmsg}, {@code sendmmsg},
 * {@code recvfrom}, {@code recvmmsg}) go through libc's {@code syscall(2)} with their system call numbers: glibc's
 * named wrappers are thread-cancellation points, and each call of one in a process with threads brackets the system
 * call with two atomic updates of the thread's cancellation state, which a busy poll paid on every empty look (about 4%
 * of a polling thread's time under {@code perf}, about 0.05 us of a 64 B half round trip between two
 * namespaces: jrdma-bench/README.md, "Two namespaces: 64 B latency (session 22, lead)"). jrdma never cancels threads.
 * {@code -Djrdma.soft.rawSyscalls=false} binds the named wrappers instead.
 */
final class UdpLibc {
    private UdpLibc() {}

    static final boolean AVAILABLE;
    static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    static final MethodHandle SOCKET,
            SETSOCKOPT,
            BIND,
            SENDTO,
            RECVFROM,
            RECVMMSG,
            POLL,
            EVENTFD,
            READ,
            READ_QUIET,
            PPOLL,
            WRITE,
            CLOSE,
            SENDMSG,
            SENDMMSG,
            ERRNO_LOCATION;
    /** All of memory, to read errno at the address {@code __errno_location()} gives without making a segment per read. */
    static final MemorySegment EVERYWHERE;

    /** See the class comment: the data path's calls through {@code syscall(2)} (default) or libc's named wrappers. */
    static final boolean RAW_SYSCALLS = !"false".equals(System.getProperty("jrdma.soft.rawSyscalls"));

    static {
        MethodHandle[] h = new MethodHandle[16];
        MemorySegment everywhere = null;
        boolean ok = false;
        try {
            Module self = LinuxUdpLink.class.getModule();
            String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
            String arch = System.getProperty("os.arch", "");
            // the struct offsets above are LP64 Linux's; without native access every call would warn (or be denied)
            if (os.contains("linux")
                    && (arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64"))
                    && self.isNativeAccessEnabled()) {
                Linker linker = Linker.nativeLinker();
                var libc = linker.defaultLookup();
                boolean arm = arch.equals("aarch64");
                Linker.Option errno = Linker.Option.captureCallState("errno");
                // short non-blocking system calls: critical downcalls (no thread-state transition), errno read
                // after a failure (lastErrno)
                Linker.Option critical = Linker.Option.critical(false);
                ValueLayout I = ValueLayout.JAVA_INT, L = ValueLayout.JAVA_LONG, P = ValueLayout.ADDRESS;
                h[0] = linker.downcallHandle(
                        libc.find("socket").orElseThrow(), FunctionDescriptor.of(I, I, I, I), errno);
                h[1] = linker.downcallHandle(
                        libc.find("setsockopt").orElseThrow(), FunctionDescriptor.of(I, I, I, I, P, I), errno);
                h[2] = linker.downcallHandle(libc.find("bind").orElseThrow(), FunctionDescriptor.of(I, I, P, I), errno);
                // the data pointer is passed as a long (a buffer's address): no segment made per packet
                h[3] = quick(linker, libc, "sendto", arm ? 206 : 44, FunctionDescriptor.of(L, I, L, L, I, P, I));
                h[4] = quick(linker, libc, "recvfrom", arm ? 207 : 45, FunctionDescriptor.of(L, I, L, L, I, P, P));
                h[5] = quick(linker, libc, "recvmmsg", arm ? 243 : 299, FunctionDescriptor.of(I, I, P, I, I, P));
                // blocking: a plain downcall (not critical), errno read after a failure (lastErrno)
                h[6] = linker.downcallHandle(libc.find("poll").orElseThrow(), FunctionDescriptor.of(I, P, L, I));
                h[7] = linker.downcallHandle(libc.find("eventfd").orElseThrow(), FunctionDescriptor.of(I, I, I), errno);
                h[8] = linker.downcallHandle(libc.find("read").orElseThrow(), FunctionDescriptor.of(L, I, P, L), errno);
                h[9] = linker.downcallHandle(
                        libc.find("write").orElseThrow(), FunctionDescriptor.of(L, I, P, L)); // its errno is not needed
                h[10] = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(I, I));
                h[11] = quick(linker, libc, "sendmsg", arm ? 211 : 46, FunctionDescriptor.of(L, I, P, I));
                h[12] = quick(linker, libc, "sendmmsg", arm ? 269 : 307, FunctionDescriptor.of(I, I, P, I, I));
                h[13] = linker.downcallHandle(
                        libc.find("__errno_location").orElseThrow(), FunctionDescriptor.of(L), critical);
                h[14] = linker.downcallHandle(
                        libc.find("read").orElseThrow(),
                        FunctionDescriptor.of(L, I, P, L),
                        critical); // the eventfd's reset: its errno is not needed
                // blocking, with a limit in nanoseconds (a thread standing in waits for less than a millisecond)
                h[15] = linker.downcallHandle(libc.find("ppoll").orElseThrow(), FunctionDescriptor.of(I, P, L, P, P));
                everywhere = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
                ok = true;
            }
        } catch (RuntimeException | Error e) {
            ok = false;
        }
        SOCKET = h[0];
        SETSOCKOPT = h[1];
        BIND = h[2];
        SENDTO = h[3];
        RECVFROM = h[4];
        RECVMMSG = h[5];
        POLL = h[6];
        EVENTFD = h[7];
        READ = h[8];
        WRITE = h[9];
        CLOSE = h[10];
        SENDMSG = h[11];
        SENDMMSG = h[12];
        ERRNO_LOCATION = h[13];
        READ_QUIET = h[14];
        PPOLL = h[15];
        EVERYWHERE = everywhere;
        AVAILABLE = ok;
    }

    /**
     * A critical downcall (no thread-state transition; errno read after a failure through {@code __errno_location}) of
     * the data path's call {@code name}, whose system call number is {@code nr}: {@code syscall(nr, ...)} with the
     * call's own Java type (see the class comment), or the named wrapper when {@link #RAW_SYSCALLS} is off.
     */
    private static MethodHandle quick(Linker linker, SymbolLookup libc, String name, long nr, FunctionDescriptor call) {
        Linker.Option critical = Linker.Option.critical(false);
        if (!RAW_SYSCALLS) return linker.downcallHandle(libc.find(name).orElseThrow(), call, critical);
        List<MemoryLayout> args = new ArrayList<>();
        args.add(ValueLayout.JAVA_LONG); // the number; the call's arguments are syscall's variadic ones
        args.addAll(call.argumentLayouts());
        MethodHandle raw = linker.downcallHandle(
                libc.find("syscall").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, args.toArray(MemoryLayout[]::new)),
                Linker.Option.firstVariadicArg(1),
                critical);
        // syscall returns a long; recvmmsg and sendmmsg return an int count (at most the vlen asked for)
        return MethodHandles.explicitCastArguments(MethodHandles.insertArguments(raw, 0, nr), call.toMethodType());
    }
}
