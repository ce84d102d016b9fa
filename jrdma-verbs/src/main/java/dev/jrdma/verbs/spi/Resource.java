package dev.jrdma.verbs.spi;

import dev.jrdma.verbs.ClosedException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Base of every provider object: tracks children, closes them (newest first) before itself, turns use after
 * close into {@link ClosedException}, and makes close idempotent. pyverbs' rule, shared by both providers.
 *
 * <p>{@link #checkOpen} alone is check-then-act: a close on another thread could tear the object down between the
 * check and the use. Operations that must not overlap a close (and every creation of a child) run between
 * {@link #enter} and {@link #exit}: a read lock with the closed check under it. {@link #close()} first marks the
 * object closed, then waits for the uses in flight ({@link #quiesce}), so a child adopted by a creation in flight
 * is fully built before the parent closes it. A thread inside {@link #enter} must not close the same object.
 */
public abstract class Resource implements AutoCloseable {
    private final Resource parent;
    private final LinkedHashSet<Resource> children = new LinkedHashSet<>();
    private volatile boolean closed;
    private final String what;
    private final ReentrantReadWriteLock use = new ReentrantReadWriteLock();

    /**
     * Creates the object and makes it a child of {@code parent}, which closes it first when it closes.
     *
     * @param parent the object it was created from, or null for a root (a context)
     * @param what   a short description for error messages, e.g. "QP 0x11"
     * @throws ClosedException when the parent is closed
     */
    protected Resource(Resource parent, String what) {
        this.parent = parent;
        this.what = what;
        if (parent != null) parent.adopt(this);
    }

    private void adopt(Resource child) {
        synchronized (children) {
            checkOpen("create " + child.what);
            children.add(child);
        }
    }

    /**
     * Throws {@link ClosedException} naming the verb when this object (or a parent) was closed.
     *
     * @param verb the verb being called, e.g. {@code ibv_post_send}
     * @throws ClosedException when closed
     */
    public final void checkOpen(String verb) {
        if (closed) throw new ClosedException(verb, what);
    }

    /**
     * Starts a use that a close must wait for; end it with {@link #exit()} in a {@code finally}.
     *
     * @param verb the verb being called, named in the exception
     * @throws ClosedException when closed
     */
    public final void enter(String verb) {
        use.readLock().lock();
        if (closed) {
            use.readLock().unlock();
            throw new ClosedException(verb, what);
        }
    }

    /**
     * Like {@link #enter} but never waits (for callers that hold a lock a close also takes).
     *
     * @return true when the use started (end it with {@link #exit()}); false when closed or a close is under way
     */
    public final boolean tryEnter() {
        if (!use.readLock().tryLock()) return false;
        if (closed) {
            use.readLock().unlock();
            return false;
        }
        return true;
    }

    /** Ends a use started by {@link #enter} or a successful {@link #tryEnter}. */
    public final void exit() {
        use.readLock().unlock();
    }

    /** {@return the lock a provider holds while it frees this object: no use is in flight then and none can start} */
    public final Lock exclusive() {
        return use.writeLock();
    }

    /** {@return whether {@link #close()} was called on this object or a parent} */
    public final boolean isClosed() {
        return closed;
    }

    /** {@return a short description used in error messages, e.g. "QP 0x11"} */
    public final String what() {
        return what;
    }

    /**
     * Marks the object closed, waits for the uses in flight, closes the children (newest first), then calls
     * {@link #destroy()}. Idempotent.
     * The first exception of a child's close or of destroy is rethrown after everything was closed, with the others
     * suppressed in it.
     */
    @Override
    public final void close() {
        List<Resource> kids;
        synchronized (children) {
            if (closed) return;
            closed = true; // from here on no child can be adopted
        }
        quiesce();
        synchronized (children) {
            kids = new ArrayList<>(children);
            children.clear();
        }
        RuntimeException first = null;
        for (int i = kids.size() - 1; i >= 0; i--) {
            try {
                kids.get(i).close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        try {
            destroy();
        } catch (RuntimeException e) {
            if (first == null) first = e;
            else first.addSuppressed(e);
        } finally {
            if (parent != null) parent.forget(this);
        }
        if (first != null) throw first;
    }

    private void forget(Resource child) {
        synchronized (children) {
            children.remove(child);
        }
    }

    /** Waits for every use in flight ({@link #enter}), child creations included; called once by close. */
    private void quiesce() {
        use.writeLock().lock();
        use.writeLock().unlock();
    }

    /** Releases this object's own resources; its children are already closed. Called once. */
    protected abstract void destroy();
}
