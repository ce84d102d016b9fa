package dev.jrdma.soft;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The libc calls of {@link LinuxUdpLink}, bound once (Linux on x86-64 or AArch64 with native access enabled for this
 * module; {@link #AVAILABLE} says whether they are): socket set-up, the non-blocking send and receive calls, the
 * receive thread's {@code poll} and its wake-up eventfd.
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
                Linker.Option errno = Linker.Option.captureCallState("errno");
                // short non-blocking system calls: critical downcalls (no thread-state transition), errno read
                // after a failure (lastErrno)
                Linker.Option[] quick = {Linker.Option.critical(false)};
                ValueLayout I = ValueLayout.JAVA_INT, L = ValueLayout.JAVA_LONG, P = ValueLayout.ADDRESS;
                h[0] = linker.downcallHandle(
                        libc.find("socket").orElseThrow(), FunctionDescriptor.of(I, I, I, I), errno);
                h[1] = linker.downcallHandle(
                        libc.find("setsockopt").orElseThrow(), FunctionDescriptor.of(I, I, I, I, P, I), errno);
                h[2] = linker.downcallHandle(libc.find("bind").orElseThrow(), FunctionDescriptor.of(I, I, P, I), errno);
                // the data pointer is passed as a long (a buffer's address): no segment made per packet
                h[3] = linker.downcallHandle(
                        libc.find("sendto").orElseThrow(), FunctionDescriptor.of(L, I, L, L, I, P, I), quick);
                h[4] = linker.downcallHandle(
                        libc.find("recvfrom").orElseThrow(), FunctionDescriptor.of(L, I, L, L, I, P, P), quick);
                h[5] = linker.downcallHandle(
                        libc.find("recvmmsg").orElseThrow(), FunctionDescriptor.of(I, I, P, I, I, P), quick);
                // blocking: a plain downcall (not critical), errno read after a failure (lastErrno)
                h[6] = linker.downcallHandle(libc.find("poll").orElseThrow(), FunctionDescriptor.of(I, P, L, I));
                h[7] = linker.downcallHandle(libc.find("eventfd").orElseThrow(), FunctionDescriptor.of(I, I, I), errno);
                h[8] = linker.downcallHandle(libc.find("read").orElseThrow(), FunctionDescriptor.of(L, I, P, L), errno);
                h[9] = linker.downcallHandle(
                        libc.find("write").orElseThrow(), FunctionDescriptor.of(L, I, P, L)); // its errno is not needed
                h[10] = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(I, I));
                h[11] = linker.downcallHandle(
                        libc.find("sendmsg").orElseThrow(), FunctionDescriptor.of(L, I, P, I), quick);
                h[12] = linker.downcallHandle(
                        libc.find("sendmmsg").orElseThrow(), FunctionDescriptor.of(I, I, P, I, I), quick);
                h[13] = linker.downcallHandle(
                        libc.find("__errno_location").orElseThrow(), FunctionDescriptor.of(L), quick);
                h[14] = linker.downcallHandle(
                        libc.find("read").orElseThrow(),
                        FunctionDescriptor.of(L, I, P, L),
                        quick); // the eventfd's reset: its errno is not needed
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
}
