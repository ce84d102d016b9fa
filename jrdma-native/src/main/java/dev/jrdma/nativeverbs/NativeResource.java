package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.spi.Resource;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Resource} that owns native memory freed by an {@code ibv_destroy_*}/{@code ibv_dealloc_*}/
 * {@code ibv_dereg_*}/{@code ibv_close_device}. {@link Resource#checkOpen} alone is check-then-act: a close on
 * another thread could free the struct between the check and the native call. So every control-path use of the
 * struct runs between {@link #enter} and {@link #exit} (a read lock, with the closed check under it), and the free
 * runs under the write lock: a close waits for uses in flight, and a use that starts after close began throws
 * {@link ClosedException}. The data path (post, poll) keeps its own per-queue locks, which destroy also takes.
 *
 * <p>{@link #releaseDependents} runs before the write lock is taken (dependents are closed there, never under a lock
 * of this object); {@link #free} runs under it. A thread holding {@link #enter} must not close this object, and a
 * thread holding a queue or poll lock (which {@link #free} of a QP or CQ takes) must not block in {@link #enter}:
 * it uses {@link #tryEnter}, which never waits.
 *
 * <p>{@link Resource#close} returns at once when another thread's close of the same object is in progress. So a
 * parent waits, before it frees itself, until each of its children has finished freeing (a child closed by another
 * thread may still be in its {@code ibv_dereg_mr}/{@code ibv_destroy_qp}, and {@code ibv_dealloc_pd} would then fail
 * with EBUSY); dependents are closed with {@link #closeAndAwait} for the same reason.
 */
abstract class NativeResource extends Resource {
    /** How long a close waits for another thread's close of a child or dependent before it gives up waiting. */
    private static final long AWAIT_SECONDS = 30;

    private final NativeResource nativeParent;
    /** Children constructed and not yet freed. */
    private final Set<NativeResource> live = ConcurrentHashMap.newKeySet();

    private final CountDownLatch gone = new CountDownLatch(1);

    NativeResource(Resource parent, String what) {
        super(parent, what); // adopts: throws ClosedException when the parent is closed
        nativeParent = parent instanceof NativeResource p ? p : null;
        if (nativeParent != null) nativeParent.live.add(this);
    }

    @Override
    protected final void destroy() {
        RuntimeException first = null;
        try {
            try {
                releaseDependents();
            } catch (RuntimeException e) {
                first = e;
            }
            // Resource.close closed the children, but one closed by another thread may still be freeing
            for (NativeResource c : new ArrayList<>(live)) c.awaitGone();
            exclusive().lock();
            try {
                free();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            } finally {
                exclusive().unlock();
            }
        } finally {
            gone.countDown();
            if (nativeParent != null) nativeParent.live.remove(this);
        }
        if (first != null) throw first;
    }

    /** Waits until this object's native free has run (bounded: a close never hangs for good on another thread's). */
    final void awaitGone() {
        try {
            gone.await(AWAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes this object and returns only once it is freed, also when another thread's close of it is in progress. */
    final void closeAndAwait() {
        try {
            close();
        } finally {
            awaitGone();
        }
    }

    /** What a control-path verb does in {@link #underUse}: its native call(s), with a confined arena. */
    @FunctionalInterface
    interface VerbCall<R> {
        /**
         * {@return what the verb gives back}
         *
         * @param arena     freed when the call returns
         * @param callState the call state that captures errno ({@link Ibv#callState})
         * @throws Throwable what {@code invokeExact} throws
         */
        R call(Arena arena, MemorySegment callState) throws Throwable;
    }

    /**
     * Runs a control-path verb on this object between {@link #enter} and {@link #exit}, with a confined arena and its
     * call state; what the native call throws comes out unchecked ({@link Ibv#rethrow}).
     */
    final <R> R underUse(String verb, VerbCall<R> call) {
        enter(verb);
        try (Arena arena = Arena.ofConfined()) {
            return call.call(arena, Ibv.callState(arena));
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            exit();
        }
    }

    /** Closes objects that depend on this one without being its children (outside this object's lock). */
    void releaseDependents() {}

    /** Frees the native object; no {@link #enter} is in flight and none can start. */
    protected abstract void free();
}
