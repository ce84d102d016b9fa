package dev.jrdma.connect;

import dev.jrdma.verbs.MemoryWindow;

/**
 * Access a peer was granted to part of a region through a memory window. Send {@link #remote()} to the peer;
 * {@link #close()} revokes it (without re-registering the region): afterwards the peer's access fails with
 * REM_ACCESS_ERR.
 */
public final class WindowGrant implements AutoCloseable {
    private final Endpoint endpoint;
    private final MemoryWindow mw;
    private final RemoteBuffer remote;
    private boolean revoked;

    WindowGrant(Endpoint endpoint, MemoryWindow mw, RemoteBuffer remote) {
        this.endpoint = endpoint;
        this.mw = mw;
        this.remote = remote;
    }

    /** The granted range as the peer names it (the window's rkey). */
    public RemoteBuffer remote() {
        return remote;
    }

    public MemoryWindow window() {
        return mw;
    }

    public synchronized boolean isRevoked() {
        return revoked;
    }

    /** Revokes the grant. Idempotent. */
    @Override
    public synchronized void close() {
        if (revoked) return;
        revoked = true;
        endpoint.revoke(mw, remote.rkey());
    }
}
