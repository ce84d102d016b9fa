package dev.jrdma.connect;

import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;

/**
 * Access one peer was granted to one range: a type 2 memory window bound on that connection's queue pair (the
 * device refuses it to every other QP), or, on a device without type 2 windows, a memory region registered over
 * exactly that range. Either way the device enforces the bounds and the rights. Send {@link #remote()} to the
 * peer; {@link #close()} revokes it, and only it: afterwards the peer's access completes with REM_ACCESS_ERR.
 */
public final class WindowGrant implements AutoCloseable {
    private final Endpoint endpoint;
    private final MemoryWindow mw; // or
    private final MemoryRegion region; // a region of its own (devices without type 2 windows)
    private final RemoteBuffer remote;
    private boolean revoked;

    private WindowGrant(Endpoint endpoint, MemoryWindow mw, MemoryRegion region, RemoteBuffer remote) {
        this.endpoint = endpoint;
        this.mw = mw;
        this.region = region;
        this.remote = remote;
    }

    static WindowGrant window(Endpoint endpoint, MemoryWindow mw, RemoteBuffer remote) {
        return new WindowGrant(endpoint, mw, null, remote);
    }

    static WindowGrant region(MemoryRegion region, RemoteBuffer remote) {
        return new WindowGrant(null, null, region, remote);
    }

    /** {@return the granted range as the peer names it (the window's or the region's rkey): send it to the peer} */
    public RemoteBuffer remote() {
        return remote;
    }

    /** {@return the type 2 memory window, or null when the grant is a region of its own} */
    public MemoryWindow window() {
        return mw;
    }

    /** {@return whether {@link #close} revoked the grant} */
    public synchronized boolean isRevoked() {
        return revoked;
    }

    /**
     * Revokes the grant: a window is invalidated on the connection's QP ({@code IBV_WR_LOCAL_INV}, waited for within
     * the endpoint's timeout) and deallocated, or the region of its own is deregistered. Idempotent.
     *
     * @throws RdmaException when the invalidation fails or times out (the window is deallocated anyway, which also
     *                       revokes it)
     */
    @Override
    public synchronized void close() {
        if (revoked) return;
        revoked = true;
        if (mw != null) endpoint.revoke(mw, remote.rkey());
        else region.close();
    }
}
