package dev.jrdma.verbs.spi;

import dev.jrdma.verbs.ClosedException;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * Base of every provider object: tracks children, closes them (newest first) before itself, turns use after
 * close into {@link ClosedException}, and makes close idempotent. pyverbs' rule, shared by both providers.
 */
public abstract class Resource implements AutoCloseable {
    private final Resource parent;
    private final LinkedHashSet<Resource> children = new LinkedHashSet<>();
    private volatile boolean closed;
    private final String what;

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

    /** Throws {@link ClosedException} naming the verb when this object (or a parent) was closed. */
    public final void checkOpen(String verb) {
        if (closed) throw new ClosedException(verb, what);
    }

    public final boolean isClosed() {
        return closed;
    }

    /** A short description used in error messages, e.g. "QP 0x11". */
    public final String what() {
        return what;
    }

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
                if (first == null) first = e; else first.addSuppressed(e);
            }
        }
        try {
            destroy();
        } catch (RuntimeException e) {
            if (first == null) first = e; else first.addSuppressed(e);
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

    /**
     * Called once by {@link #close()} after this object is marked closed and before its children are closed: a
     * provider waits here for operations in flight on this object. That includes the creation of a child, whose
     * constructor has adopted it here before its own fields were set, so without this wait the child could be
     * closed half built. Runs without any lock of this class held.
     */
    protected void quiesce() {
    }

    /** Releases this object's own resources; its children are already closed. Called once. */
    protected abstract void destroy();
}
