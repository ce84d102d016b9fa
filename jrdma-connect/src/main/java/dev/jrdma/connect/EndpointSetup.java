package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.QpAttr;
import java.net.Socket;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * How an {@link Endpoint} is set up and taken down: the hooks {@link TcpConnector} and {@link CmConnector} call (QP
 * transitions, the peer's parameters, the export's window), memory windows, the close (a command the group's owner
 * runs after what was queued before it, then takes further as completions and the peer's acknowledgement come), and
 * releasing the QP and buffers.
 */
abstract class EndpointSetup extends EndpointCompletions {
    EndpointSetup(EndpointGroup group, boolean ownsGroup, Socket socket) {
        super(group, ownsGroup, socket);
    }

    static Endpoint connect(
            String host, int port, EndpointConfig cfg, EndpointGroup group, RemoteBuffer export, boolean cm)
            throws RdmaConnectException {
        ExportedRange range = null;
        if (export != null) {
            if (group == null)
                throw new IllegalArgumentException(
                        "an export is a buffer of a group's pool: pass the group it was allocated from");
            range = ExportedRange.of(group.pool(), export, cfg.remoteAccess(), group.config());
        }
        if (cm) return CmConnector.connect(host, port, cfg, group, range);
        return TcpConnector.connect(host, port, cfg, group, range);
    }

    /** RESET -> INIT with only the remote rights the configuration asks for; posts the receive buffers. */
    void toInit(int pkeyIndex, int port) {
        QpSetup.toInit(qp, cfg.remoteAccess(), pkeyIndex, port);
        for (int i = 0; i < recvSlots; i++) postRecv(i);
    }

    /**
     * Reserves this connection's view of {@code range} before the handshake announces it: a type 2 window (its
     * key is chosen here, the bind follows in RTS), or a region registered over exactly the range. Null: no export.
     */
    RemoteBuffer reserveExport(ExportedRange range) {
        if (range == null) return null;
        exportRange = range;
        if (group.exportsWithWindows()) {
            exportWindow = group.pd().allocMemoryWindow(MwType.TYPE_2);
            exportRemote = new RemoteBuffer(range.address(), nextWindowKey(exportWindow), range.length());
        } else {
            MemoryRegion mr = registerExactly(range.region(), range.address(), range.length(), range.rights());
            exportRemote = new RemoteBuffer(range.address(), mr.rkey(), range.length());
            localExport = WindowGrant.region(mr, exportRemote);
        }
        return exportRemote;
    }

    /** Binds the reserved window on this QP (now in RTS): from here on the peer can use the export. */
    void bindExport() {
        if (exportWindow == null) return;
        bindWindow(
                exportWindow,
                exportRange.region(),
                exportRange.address(),
                exportRange.length(),
                exportRange.rights(),
                exportRemote.rkey());
        localExport = WindowGrant.window(self(), exportWindow, exportRemote);
        exportWindow = null;
    }

    /** RESET -> INIT with rdma_cm's port and P_Key index; posts the receive buffers. */
    void cmToInit(QpAttr fromCm) {
        toInit(fromCm.pkeyIndex(), fromCm.port());
    }

    RemoteBuffer cmReserveExport(ExportedRange range) {
        return reserveExport(range);
    }

    void cmBindExport() {
        bindExport();
    }

    void cmPeer(
            ConnParams localParams,
            ConnParams remoteParams,
            int peerCredits,
            int messageSize,
            byte[] priv,
            RemoteBuffer export) {
        local = localParams;
        applyPeer(remoteParams, peerCredits, messageSize, priv, export);
    }

    /**
     * What the peer announced in the handshake, whichever connection manager carried it: its QP and path, the
     * credits it grants, its receive buffers' size, its private data and what it exports to this side (or null).
     * Before the QP reaches RTR: no completion can touch the credits yet, and {@link #started} hands them to the owner.
     */
    void applyPeer(ConnParams params, int peerCredits, int messageSize, byte[] privateData, RemoteBuffer export) {
        remote = params;
        peerMessageSize = messageSize;
        peerPrivateData = privateData;
        peerExport = export;
        credits.open(peerCredits);
    }

    /** The set-up is done: {@code c} is the connection's control channel from now on, and operations may start. */
    void startWith(Control c) {
        goodbye.attach(c);
        started();
    }

    /** This side's connection parameters, as the set-up sends them to the peer. */
    void setLocalParams(ConnParams params) {
        local = params;
    }

    /** Whether the set-up put the QP in the authenticated mode. */
    void setPacketAuthenticated(boolean on) {
        packetAuthenticated = on;
    }

    /** Undoes a failed rdma_cm set-up. */
    void cmAbandon() {
        releaseResources();
        if (ownsGroup) group.close();
    }

    int rdAtomic() {
        return QpSetup.rdAtomic(group.deviceAttr());
    }

    /** The connection is up: the owner takes it (it may have messages to deliver and credits to return already). */
    void started() {
        onOwnerAndWait(() -> {
            state = State.CONNECTED;
            pump();
            maybeReturnCredits();
            runAfterUnlock();
            return null;
        });
        goodbye.control().start(self());
    }

    /** The registered memory of the receive slots (tests check that no peer can reach it). */
    RegisteredBuffer receiveSlots() {
        return recvBufs;
    }

    /** A type 2 window's next rkey: its index with a fresh random key byte. */
    static int nextWindowKey(MemoryWindow mw) {
        int current = mw.rkey() & 0xFF, next;
        do {
            next = KEYS.nextInt(256);
        } while (next == current);
        return (mw.rkey() & 0xFFFFFF00) | next;
    }

    /** Binds a type 2 window on this QP with {@code rkey} and waits for the bind; returns the rkey. */
    int bindWindow(MemoryWindow mw, MemoryRegion region, long address, long length, Set<Access> rights, int rkey) {
        Operation op = newOp(OperationKind.BIND);
        op.mw = mw;
        op.bindRegion = region;
        op.bindAddr = address;
        op.bindLen = length;
        op.bindAccess = EnumSet.copyOf(rights);
        op.newRkey = rkey;
        return ((Number) await(submit(op))).intValue();
    }

    /** A region over exactly {@code [address, address + length)} of {@code region}'s memory, for one peer. */
    MemoryRegion registerExactly(MemoryRegion region, long address, long length, Set<Access> rights) {
        EnumSet<Access> access = EnumSet.of(Access.LOCAL_WRITE);
        access.addAll(rights);
        return group.pd().registerMemory(region.segment().asSlice(address - region.address(), length), access);
    }

    void revoke(MemoryWindow mw, int rkey) {
        if (mw.type() == MwType.TYPE_2 && isConnected()) {
            Operation op = newOp(OperationKind.INVALIDATE);
            op.newRkey = rkey;
            CompletableFuture<Object> done = submit(op);
            try {
                await(done);
            } finally {
                mw.close();
            }
        } else {
            mw.close(); // deallocating a window revokes its binding
        }
    }

    void releaseResources() {
        group.unregister(self(), cqEntries);
        WindowGrant export = localExport;
        try {
            if (export != null) export.close();
            if (exportWindow != null) exportWindow.close(); // reserved, never bound
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "closing the export's window or region: " + e);
        }
        try {
            qp.close();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "closing QP: " + e);
        }
        if (!qp.isClosed()) {
            // the device may still write into them: kept (leaked) rather than handed to someone else
            LOG.log(
                    System.Logger.Level.WARNING,
                    this + ": the QP could not be destroyed; its receive buffers and " + heldBuffers()
                            + " buffers of given-up operations are kept out of the pool");
            return;
        }
        releaseHeld();
        boolean closeNow = lentOut == 0;
        recvBufsCloseDeferred = !closeNow; // lent messages still read their buffers: the last release closes them
        if (closeNow) recvBufs.close();
    }

    // ---- the close --------------------------------------------------------------------------------------------

    private enum ClosePhase {
        /** Waiting, up to the timeout, for what is in flight or pending: the goodbye follows it. */
        DRAIN,
        /** The goodbye is said: waiting for the peer's acknowledgement (at most {@link Goodbye#LINGER_MAX_NS}). */
        LINGER
    }

    private ClosePhase closePhase = ClosePhase.DRAIN;
    private long closeDeadline;
    /** Completes when the close is done (QP and buffers released); a closer on another thread waits for it. */
    final CompletableFuture<Void> closed = new CompletableFuture<>();
    /** A thread other than the owner closes and waits: it closes a group of the endpoint's own after. */
    volatile boolean closeAwaited;

    final Runnable beginClose = this::beginClose;

    /**
     * Refuses new work and starts the graceful close ({@link Goodbye}'s protocol): run by the owner, after the commands
     * (sends) queued before it. Owner only.
     */
    void beginClose() {
        if (closeStarted || state == State.CLOSED) return;
        closeStarted = true;
        if (state == State.CONNECTED) state = State.CLOSING;
        closePhase = ClosePhase.DRAIN;
        closeDeadline = group.clock().nanoTime() + cfg.timeout().toNanos();
        advanceClose();
    }

    /** Starts the close on the owner: at once there, else as a command (false: the group refused it). Any thread. */
    boolean startClose() {
        if (onOwner()) {
            beginClose();
            return true;
        }
        return group.isOpen() && toOwner(beginClose);
    }

    @Override
    void advanceClose() {
        if (!closeStarted || state == State.CLOSED) return;
        long now = group.clock().nanoTime();
        if (closePhase == ClosePhase.DRAIN) {
            boolean draining = (state == State.CLOSING || state == State.PEER_CLOSED)
                    && !(inFlight.isEmpty() && pending.isEmpty());
            if (draining && now - closeDeadline < 0) return; // a completion or the deadline brings it back
            if (goodbye.control() != null) {
                goodbye.sayBye();
                if (state == State.PEER_CLOSED) goodbye.acknowledge();
                if (state != State.BROKEN) {
                    closePhase = ClosePhase.LINGER;
                    closeDeadline = goodbye.lingerDeadline(now);
                }
            }
        }
        if (closePhase == ClosePhase.LINGER && !goodbye.isPeerAcknowledged() && now - closeDeadline < 0) return;
        finishClose(true);
    }

    /**
     * The end of the close: everything still outstanding fails, the control channel, the QP and the buffers go. Owner
     * only, or the group's closer once the owner stopped ({@code closeOwnGroup} false: the group is closing already).
     */
    void finishClose(boolean closeOwnGroup) {
        if (state == State.CLOSED) return;
        closeStarted = true;
        State before = state;
        state = State.CLOSED;
        RdmaException closedError = new RdmaException(RdmaException.Kind.CLOSED, "the endpoint was closed");
        if (failure == null) failure = closedError;
        failAll(before == State.CLOSING ? closedError : failure);
        runAfterUnlock();
        closedAt = group.clock().nanoTime();
        if (lentOut > 0 && lentSlots != null) group.watchAfterClose(self()); // its lent messages, once the grace passed
        Control control = goodbye.control();
        try {
            if (control != null) control.close();
            if (socket != null) Handshake.closeQuietly(socket);
            releaseResources();
        } finally {
            closed.complete(null);
        }
        if (closeOwnGroup && ownsGroup && !closeAwaited) group.close();
    }

    /**
     * A closer on another thread waits for the owner to finish the close: it drives the group meanwhile when the group
     * has a thread of its own, and stops when the group closes (its close ends the endpoint) or a bound passes (the
     * timeout, the linger and a margin: an owner that stalls longer is not waited for).
     */
    void awaitClosed() {
        long bound = cfg.timeout().toNanos() + Goodbye.LINGER_MAX_NS + java.util.concurrent.TimeUnit.SECONDS.toNanos(2);
        group.helpUntil(closed::isDone, group.clock().nanoTime() + bound);
        long end = System.nanoTime() + bound;
        while (!closed.isDone() && group.isOpen() && System.nanoTime() - end < 0) {
            try {
                closed.get(10, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
                // look again (the group may have closed)
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        if (!closed.isDone() && group.isOpen())
            LOG.log(System.Logger.Level.WARNING, this + ": the group's owner did not finish the close in time");
    }
}
