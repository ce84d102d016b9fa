package dev.jrdma.nativeverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;

/**
 * The libibverbs entry points, bound with {@code java.lang.foreign} only. {@link Lib} tries to load the library
 * and never throws; {@link Fn} holds the method handles and must only be touched after {@link Lib#available()}.
 *
 * <p>Exported verbs are looked up by name (the default {@code @@IBVERBS_1.1} versions). The inline data-path
 * verbs are called through the function pointers of the context's {@code ibv_context_ops}: the handles in
 * {@link Fn} named {@code OPS_*} are address-less and take the pointer as their first argument.
 */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class Ibv {
    private Ibv() {}

    static final Linker LINKER = Linker.nativeLinker();
    /** The library to bind; {@code -Djrdma.native.library=PATH} overrides it (tests use it to simulate a missing one). */
    static final String LIBRARY = System.getProperty("jrdma.native.library", "libibverbs.so.1");

    /** Loads libibverbs once; records why it could not be loaded. */
    static final class Lib {
        private Lib() {}

        static final SymbolLookup LOOKUP;
        static final String ERROR;

        static {
            SymbolLookup l = null;
            String err = null;
            try {
                l = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
                if (l.find("ibv_get_device_list").isEmpty()) {
                    err = LIBRARY + " has no ibv_get_device_list";
                    l = null;
                }
            } catch (Throwable t) {
                err = LIBRARY + " could not be loaded (" + t.getMessage() + ")";
            }
            LOOKUP = l;
            ERROR = err;
        }

        static boolean available() {
            return LOOKUP != null;
        }
    }

    // ---------------------------------------------------------------- errno capture
    static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPT = Linker.Option.captureCallState("errno");

    static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** A fresh call-state segment; for control-path verbs only. */
    static MemorySegment callState(Arena a) {
        return a.allocate(CALL_STATE);
    }

    static final class Fn {
        private Fn() {}

        private static MethodHandle exported(String name, FunctionDescriptor fd, boolean errno) {
            MemorySegment sym =
                    Lib.LOOKUP.find(name).orElseThrow(() -> new UnsatisfiedLinkError(LIBRARY + " has no " + name));
            return errno ? LINKER.downcallHandle(sym, fd, ERRNO_OPT) : LINKER.downcallHandle(sym, fd);
        }

        private static Optional<MethodHandle> optional(String name, FunctionDescriptor fd, boolean errno) {
            return Lib.LOOKUP
                    .find(name)
                    .map(sym -> errno ? LINKER.downcallHandle(sym, fd, ERRNO_OPT) : LINKER.downcallHandle(sym, fd));
        }

        private static FunctionDescriptor fd(MemoryLayout ret, MemoryLayout... args) {
            return ret == null ? FunctionDescriptor.ofVoid(args) : FunctionDescriptor.of(ret, args);
        }

        // (state, int*) -> ibv_device**
        static final MethodHandle GET_DEVICE_LIST = exported("ibv_get_device_list", fd(ADDRESS, ADDRESS), true);
        static final MethodHandle FREE_DEVICE_LIST = exported("ibv_free_device_list", fd(null, ADDRESS), false);
        static final MethodHandle GET_DEVICE_GUID = exported("ibv_get_device_guid", fd(JAVA_LONG, ADDRESS), false);
        static final MethodHandle OPEN_DEVICE = exported("ibv_open_device", fd(ADDRESS, ADDRESS), true);
        static final MethodHandle CLOSE_DEVICE = exported("ibv_close_device", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle QUERY_DEVICE = exported("ibv_query_device", fd(JAVA_INT, ADDRESS, ADDRESS), true);
        static final MethodHandle QUERY_PORT =
                exported("ibv_query_port", fd(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS), true);
        static final MethodHandle QUERY_GID =
                exported("ibv_query_gid", fd(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS), true);
        /** {@code _ibv_query_gid_ex(ctx, port, index, entry, flags, entry_size)}, rdma-core 32+. */
        static final Optional<MethodHandle> QUERY_GID_EX = optional(
                "_ibv_query_gid_ex", fd(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG), true);

        static final MethodHandle ALLOC_PD = exported("ibv_alloc_pd", fd(ADDRESS, ADDRESS), true);
        static final MethodHandle DEALLOC_PD = exported("ibv_dealloc_pd", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle REG_MR =
                exported("ibv_reg_mr", fd(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT), true);
        static final MethodHandle DEREG_MR = exported("ibv_dereg_mr", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle CREATE_COMP_CHANNEL = exported("ibv_create_comp_channel", fd(ADDRESS, ADDRESS), true);
        static final MethodHandle DESTROY_COMP_CHANNEL =
                exported("ibv_destroy_comp_channel", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle CREATE_CQ =
                exported("ibv_create_cq", fd(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), true);
        static final MethodHandle DESTROY_CQ = exported("ibv_destroy_cq", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle GET_CQ_EVENT =
                exported("ibv_get_cq_event", fd(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), true);
        static final MethodHandle ACK_CQ_EVENTS = exported("ibv_ack_cq_events", fd(null, ADDRESS, JAVA_INT), false);
        static final MethodHandle CREATE_QP = exported("ibv_create_qp", fd(ADDRESS, ADDRESS, ADDRESS), true);
        static final MethodHandle DESTROY_QP = exported("ibv_destroy_qp", fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle MODIFY_QP = exported("ibv_modify_qp", fd(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), true);
        static final MethodHandle QUERY_QP =
                exported("ibv_query_qp", fd(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS), true);

        /** libc poll(2): (state, pollfd*, nfds, timeout ms) -> int. */
        static final MethodHandle POLL = LINKER.downcallHandle(
                LINKER.defaultLookup().find("poll").orElseThrow(),
                fd(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT),
                ERRNO_OPT);

        // ---- inline verbs through ibv_context_ops: (fnptr, args...) ----
        // The hot four take their pointers as addresses (long): a MemorySegment argument costs a native-segment and
        // scope check per call (2.4 ns per post+poll pair here); the queues' gates keep what they point at alive.
        /** poll_cq(cq, num_entries, wc): hot path, no thread-state transition. */
        static final MethodHandle OPS_POLL_CQ =
                LINKER.downcallHandle(fd(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG), Linker.Option.critical(false));
        /** post_send(qp, wr, bad_wr): hot path. */
        static final MethodHandle OPS_POST_SEND =
                LINKER.downcallHandle(fd(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.critical(false));
        /** post_srq_recv(srq, wr, bad_wr): hot path. */
        static final MethodHandle OPS_POST_SRQ_RECV =
                LINKER.downcallHandle(fd(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.critical(false));
        /** post_recv(qp, wr, bad_wr): hot path. */
        static final MethodHandle OPS_POST_RECV =
                LINKER.downcallHandle(fd(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.critical(false));
        /** req_notify_cq(cq, solicited_only). */
        static final MethodHandle OPS_REQ_NOTIFY_CQ =
                LINKER.downcallHandle(fd(JAVA_INT, ADDRESS, JAVA_INT), Linker.Option.critical(false));
        /** alloc_mw(pd, type) with errno. */
        static final MethodHandle OPS_ALLOC_MW = LINKER.downcallHandle(fd(ADDRESS, ADDRESS, JAVA_INT), ERRNO_OPT);
        /** bind_mw(qp, mw, mw_bind). */
        static final MethodHandle OPS_BIND_MW =
                LINKER.downcallHandle(fd(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), ERRNO_OPT);
        /** dealloc_mw(mw). */
        static final MethodHandle OPS_DEALLOC_MW = LINKER.downcallHandle(fd(JAVA_INT, ADDRESS), ERRNO_OPT);
    }

    /**
     * The verbs added for asynchronous events, SRQs, address handles and the extra queries, bound on first use (a
     * holder class): a program that never uses them never pays for their downcall stubs, which are slow to make on a
     * slow machine. Exported verbs only; touch after {@link Lib#available()}.
     */
    static final class Extra {
        private Extra() {}

        /** verbs_context's query_device_ex(context, input, attr, attr_size), called through its pointer. */
        static final MethodHandle VCTX_QUERY_DEVICE_EX =
                LINKER.downcallHandle(Fn.fd(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

        static final MethodHandle GET_ASYNC_EVENT =
                Fn.exported("ibv_get_async_event", Fn.fd(JAVA_INT, ADDRESS, ADDRESS), true);
        static final MethodHandle ACK_ASYNC_EVENT = Fn.exported("ibv_ack_async_event", Fn.fd(null, ADDRESS), false);
        static final MethodHandle QUERY_PKEY =
                Fn.exported("ibv_query_pkey", Fn.fd(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS), true);
        static final MethodHandle RESIZE_CQ = Fn.exported("ibv_resize_cq", Fn.fd(JAVA_INT, ADDRESS, JAVA_INT), true);
        static final MethodHandle CREATE_AH = Fn.exported("ibv_create_ah", Fn.fd(ADDRESS, ADDRESS, ADDRESS), true);
        static final MethodHandle CREATE_AH_FROM_WC =
                Fn.exported("ibv_create_ah_from_wc", Fn.fd(ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_BYTE), true);
        static final MethodHandle DESTROY_AH = Fn.exported("ibv_destroy_ah", Fn.fd(JAVA_INT, ADDRESS), true);
        static final MethodHandle CREATE_SRQ = Fn.exported("ibv_create_srq", Fn.fd(ADDRESS, ADDRESS, ADDRESS), true);
        static final MethodHandle MODIFY_SRQ =
                Fn.exported("ibv_modify_srq", Fn.fd(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), true);
        static final MethodHandle QUERY_SRQ = Fn.exported("ibv_query_srq", Fn.fd(JAVA_INT, ADDRESS, ADDRESS), true);
        static final MethodHandle DESTROY_SRQ = Fn.exported("ibv_destroy_srq", Fn.fd(JAVA_INT, ADDRESS), true);
    }

    /** libc fcntl(2), variadic after the command: (fd, cmd, arg) -> int. */
    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2));

    private static final int F_GETFL = 3, F_SETFL = 4, O_NONBLOCK = 04000; // Linux

    /** Sets O_NONBLOCK on a file descriptor (best effort: a failure leaves it blocking). */
    static void setNonBlocking(int fd) {
        try {
            int flags = (int) FCNTL.invokeExact(fd, F_GETFL, 0);
            if (flags >= 0 && (flags & O_NONBLOCK) == 0) {
                int ignored = (int) FCNTL.invokeExact(fd, F_SETFL, flags | O_NONBLOCK);
            }
        } catch (Throwable t) {
            // keep the blocking fd: poll(2) still says when an event is there
        }
    }

    /**
     * A view of {@code s}'s memory in the global scope. A segment of a shared arena, passed to a downcall, is
     * acquired and released around the call (two atomic read-modify-writes) and checked on every access; the data
     * path's arrays are instead guarded by their queue's {@link QueueGate}, which is shut before their arena is
     * closed, so they use this view: no atomics beyond the gate's own.
     */
    static MemorySegment unscoped(MemorySegment s) {
        return MemorySegment.ofAddress(s.address()).reinterpret(s.byteSize());
    }

    /**
     * All of memory, for the hot paths' loads and stores by absolute address into their gate-guarded arrays: a
     * constant segment, whose checks the JIT folds (a field segment's base, size and scope are loaded and checked
     * on every access).
     */
    static final MemorySegment NATIVE = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    // ---------------------------------------------------------------- eventfd: waking a thread blocked in poll(2)
    /** libc eventfd/read/write/close, bound on first use (a holder class). */
    private static final class Fd {
        private Fd() {}

        static final MethodHandle EVENTFD = LINKER.downcallHandle(
                LINKER.defaultLookup().find("eventfd").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT),
                ERRNO_OPT);
        static final MethodHandle READ = LINKER.downcallHandle(
                LINKER.defaultLookup().find("read").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        static final MethodHandle WRITE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("write").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        static final MethodHandle CLOSE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    private static final int EFD_NONBLOCK = 04000, EFD_CLOEXEC = 02000000;

    /** A non-blocking eventfd(2) with counter 0; throws when none can be made (the open file limit). */
    static int eventFd(String verb) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = callState(a);
            int fd = (int) Fd.EVENTFD.invokeExact(st, 0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (fd < 0) throw Errors.verb(verb, errno(st), "eventfd failed: check the open file limit (ulimit -n)");
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Adds 1 to an eventfd's counter: a poll(2) on it wakes. */
    static void signalEventFd(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment one = a.allocate(JAVA_LONG);
            one.set(JAVA_LONG, 0, 1L);
            long ignored = (long)
                    Fd.WRITE.invokeExact(fd, one, 8L); // EAGAIN only when the counter is near 2^64: still signalled
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Resets an eventfd's counter to 0; true when it was signalled. */
    static boolean drainEventFd(int fd, MemorySegment scratch8) {
        try {
            return (long) Fd.READ.invokeExact(fd, scratch8, 8L) == 8L;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void closeFd(int fd) {
        try {
            int ignored = (int) Fd.CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Reads a NUL-terminated C string of at most {@code max} bytes at {@code offset}. */
    static String cString(MemorySegment seg, long offset, int max) {
        MemorySegment s = seg.asSlice(offset, max);
        int n = 0;
        while (n < max && s.get(JAVA_BYTE, n) != 0) n++;
        byte[] b = new byte[n];
        MemorySegment.copy(s, JAVA_BYTE, 0, b, 0, n);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Sneaky-rethrow helper for MethodHandle calls. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException("native call failed", t);
    }
}
