package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion channel ({@code struct ibv_comp_channel*}). {@link #awaitEvent} blocks in poll(2) on the channel's
 * file descriptor (no spinning), then reads the event with {@code ibv_get_cq_event}. It also polls an eventfd of
 * its own, which {@link #wakeup} signals from any thread.
 */
final class NativeChannel extends NativeResource implements CompletionChannel {
    private static final short POLLIN = 1;
    /** Longest single poll(2): a close by another thread waits for the slice in flight, then the waiter throws. */
    private static final int SLICE_MS = 100;

    final NativeContext context;
    final MemorySegment ch;
    final int fd;
    /** eventfd(2) that {@link #wakeup} signals; closed with the channel. */
    private final int wakeFd;

    final Set<NativeCq> cqs = ConcurrentHashMap.newKeySet();
    /**
     * Held from ibv_get_cq_event until the event is counted on its CQ, and by a CQ's destroy while it acks what it
     * counted and calls ibv_destroy_cq: an event read but not counted would make ibv_destroy_cq wait forever.
     */
    final Object eventLock = new Object();

    NativeChannel(NativeContext context, MemorySegment ch, int wakeFd) {
        super(
                context,
                "completion channel fd " + ch.get(JAVA_INT, offset(Layouts.COMP_CHANNEL, "fd")) + " of "
                        + context.device.name());
        this.context = context;
        this.ch = ch;
        this.fd = ch.get(JAVA_INT, offset(Layouts.COMP_CHANNEL, "fd"));
        // non-blocking, as ibv_get_cq_event(3) suggests: a read never blocks under a lock when another thread took the
        // event
        Ibv.setNonBlocking(fd);
        this.wakeFd = wakeFd;
    }

    @Override
    public void wakeup() {
        if (!tryEnter()) return; // closed (or closing): nobody is left to wake
        try {
            Ibv.signalEventFd(wakeFd);
        } finally {
            exit();
        }
    }

    @Override
    public Context context() {
        return context;
    }

    @Override
    public CompletionQueue awaitEvent(Duration timeout) {
        checkOpen("ibv_get_cq_event");
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + Math.max(0, timeout.toNanos());
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment pfd = a.allocate(Layouts.POLLFD.byteSize() * 2, 8);
            MemorySegment scratch = a.allocate(8, 8);
            MemorySegment cqOut = a.allocate(ADDRESS);
            MemorySegment ctxOut = a.allocate(ADDRESS);
            while (true) {
                enter("ibv_get_cq_event"); // the fd and the struct stay valid until exit(): close waits (< one slice)
                try {
                    long left = deadline == Long.MAX_VALUE ? SLICE_MS : (deadline - System.nanoTime()) / 1_000_000L;
                    if (left < 0) return null;
                    int ms = (int) Math.min(left, SLICE_MS);
                    pfd.set(JAVA_INT, 0, fd);
                    pfd.set(JAVA_SHORT, 4, POLLIN);
                    pfd.set(JAVA_SHORT, 6, (short) 0);
                    pfd.set(JAVA_INT, 8, wakeFd);
                    pfd.set(JAVA_SHORT, 12, POLLIN);
                    pfd.set(JAVA_SHORT, 14, (short) 0);
                    int rc = (int) Ibv.Fn.POLL.invokeExact(st, pfd, 2L, ms);
                    if (rc < 0) {
                        int e = Ibv.errno(st);
                        if (e == 4) continue; // EINTR
                        throw Errors.verb("poll", e, "waiting on the completion channel's fd " + fd + " failed");
                    }
                    if (rc == 0) {
                        if (deadline != Long.MAX_VALUE && System.nanoTime() >= deadline) return null;
                        continue;
                    }
                    if (isClosed()) throw new ClosedException("ibv_get_cq_event", what());
                    if (pfd.get(JAVA_SHORT, 14) != 0 && Ibv.drainEventFd(wakeFd, scratch)) return null; // woken
                    if (pfd.get(JAVA_SHORT, 6) == 0) continue;
                    synchronized (eventLock) {
                        int g = (int) Ibv.Fn.GET_CQ_EVENT.invokeExact(st, ch, cqOut, ctxOut);
                        if (g != 0) {
                            int e = Errors.errno(g, st);
                            if (e == VerbsException.EAGAIN || e == 4) continue;
                            throw Errors.verb("ibv_get_cq_event", e, "reading the completion channel failed");
                        }
                        long cqAddr = cqOut.get(ADDRESS, 0).address();
                        NativeCq cq = context.cqs.get(cqAddr);
                        if (cq == null)
                            continue; // cannot happen: a CQ's destroy removes it under eventLock after the kernel's
                        // last event
                        cq.eventReceived();
                        return cq;
                    }
                } finally {
                    exit();
                }
            }
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    void releaseDependents() {
        List<NativeCq> attached = new ArrayList<>(cqs);
        RuntimeException first = null;
        for (NativeCq cq : attached) {
            try {
                cq.closeAndAwait();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    @Override
    protected void free() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            Ibv.closeFd(wakeFd);
            int rc = (int) Ibv.Fn.DESTROY_COMP_CHANNEL.invokeExact(st, ch);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_destroy_comp_channel",
                        Errors.errno(rc, st),
                        "CQs created outside jrdma may still use this channel");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what();
    }
}
