package dev.jrdma.connect;

import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WrOpcode;
import java.net.Socket;
import java.net.SocketAddress;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The state of an {@link Endpoint} and its outgoing data path: the queue pair and receive buffers, the credits, the
 * operations in flight and waiting, posting, the hand-off of other threads' calls to the group's owner, and the
 * callbacks deferred to the end of each step. The owner thread alone runs the data path, with no lock
 * ({@link #onOwner}, {@link #toOwner}). The roles above it:
 * {@link EndpointCompletions} (completions, receives, timeouts, failures, the peer's goodbye), {@link EndpointSetup}
 * (the set-up's hooks, memory windows, releasing resources), {@link Endpoint} (the public API and the close).
 */
abstract class EndpointCore {
    /** {@return this endpoint, as the group and the events know it} */
    final Endpoint self() {
        return (Endpoint) this;
    }

    // what the roles above this one provide

    /** Hands lent messages to the handler ({@link EndpointCompletions}). */
    abstract void drainLent();

    /** Fails an operation ({@link EndpointCompletions}). Owner only. */
    abstract void failOp(Operation op, RdmaException e);

    /** Takes the close a step further when what it waits for came ({@link EndpointSetup}). Owner only. */
    abstract void advanceClose();

    /** {@return whether operations can be started ({@link Endpoint#isConnected()})} */
    public abstract boolean isConnected();

    /** {@return the peer's address ({@link Endpoint#remoteAddress()})} */
    public abstract SocketAddress remoteAddress();

    /**
     * Waits for an operation's future ({@link Endpoint#await}).
     *
     * @param <T> the operation's result type
     * @param f   the operation's future
     * @return the operation's result
     */
    public abstract <T> T await(CompletableFuture<T> f);

    static final int HANDSHAKE_MAGIC = 0x4A52444D; // "JRDM"

    /** The handshake version this side speaks (2: with the offer of packet authentication), and the oldest it still reads. */
    static final int HANDSHAKE_VERSION = 2, HANDSHAKE_MIN_VERSION = 1;

    static final int VERDICT_ACCEPT = 0, VERDICT_REJECT = 1, VERDICT_VERSION = 2;
    static final int READY = 'R', BYE = 'B', BYE_ACK = 'A';

    /** Receives posted beyond the data credits, for credit-only messages. */
    static final int CTRL_EXTRA = 4;

    static final int TYPE_DATA = 0, TYPE_CREDIT = 1;

    static final long RECV_TAG = 1L << 62;

    static final System.Logger LOG = System.getLogger(Endpoint.class.getName());

    static final SecureRandom KEYS = new SecureRandom();

    enum State {
        CONNECTING,
        CONNECTED,
        CLOSING,
        PEER_CLOSED,
        BROKEN,
        CLOSED
    }

    final EndpointGroup group;

    final boolean ownsGroup;

    final EndpointConfig cfg;

    final QueuePair qp;

    final Socket socket;

    final RegisteredBuffer recvBufs;

    final int recvSlots;

    final int sqDepth;

    final int inlineLimit;

    final int cqEntries;

    final SendWorkRequest swr = new SendWorkRequest(1);

    final RecvWorkRequest rwr = new RecvWorkRequest(1);

    ConnParams local, remote;

    /** Whether the handshake put this connection's QP in the authenticated mode ({@link Endpoint#packetAuthenticated()}). */
    volatile boolean packetAuthenticated;

    int peerMessageSize;

    byte[] peerPrivateData = new byte[0];

    RemoteBuffer peerExport;

    // what this side exports to this peer: a window reserved before the handshake and bound once the QP is in RTS
    ExportedRange exportRange;

    MemoryWindow exportWindow;

    RemoteBuffer exportRemote;

    volatile WindowGrant localExport;

    /** Set by the control channel's thread when the peer said goodbye or went away: new operations fail at once. */
    volatile RdmaException peerEnded;

    /*
     * All below is the group's owner's alone (the thread that runs its duty cycle: ProgressCore): the data path takes
     * no lock. Another thread acts through a command on the owner's queue (toOwner). The state and the failure are
     * also read by other threads (isConnected, refusal): volatile, written by the owner (and by set-up before it).
     */
    volatile State state = State.CONNECTING;

    volatile RdmaException failure;

    final CreditWindow credits;

    final Goodbye goodbye;

    final InFlight<Operation> inFlight;

    // WRs at the device (completions not yet seen), given-up operations' included; and the buffers of given-up
    // operations, kept until no WR is at the device: a late READ response or atomic result must not land in a
    // buffer that someone else holds by then
    int postedWrs;

    final List<RegisteredBuffer> heldUntilRetired = new ArrayList<>();

    final ArrayDeque<Operation> pending = new ArrayDeque<>();

    final ArrayDeque<Message> inbox = new ArrayDeque<>();

    final ArrayDeque<CompletableFuture<Message>> waiters = new ArrayDeque<>();

    Consumer<Message> handler;

    /** Takes the messages in their receive buffers ({@link Endpoint#onReceiveLent}), or null. */
    LentMessageHandler lentHandler;

    /** One lent view per receive buffer (made with {@link Endpoint#onReceiveLent}). */
    LentMessage[] lentSlots;

    /** Messages lent and not yet released; whether the lent handler was told the input ended. */
    int lentOut;

    boolean lentEndTold;

    /**
     * Lent messages (and then the end) in arrival order, for the one thread at a time that hands them to the handler
     * ({@link EndpointCompletions#drainLent}): a release inside the handler that lends more leaves them to the loop running, so the handler sees them in order.
     */
    final ArrayDeque<LentMessage> lentReady = new ArrayDeque<>();

    RdmaException lentEnd;

    boolean lentDraining, lentDrainQueued;

    final Runnable drainLentTask = this::drainLent;

    /** Lent messages reported as held too long, or still held after the close ({@link Endpoint#lentLeaks()}). */
    final java.util.concurrent.atomic.AtomicLong lentLeaks = new java.util.concurrent.atomic.AtomicLong();

    /** When the owner next looks for lent messages held too long; when the endpoint closed (for its grace). */
    long nextLentScan, closedAt;

    /** The close began ({@link EndpointSetup#beginClose}): completions and acknowledgements take it further. */
    boolean closeStarted;

    /** The endpoint was released while messages were lent: the receive buffers go back with the last of them. */
    boolean recvBufsCloseDeferred;

    /**
     * Callbacks (futures, listeners, handlers) a step of the owner left for its end, when the endpoint's state is
     * consistent again: a callback that sends or closes must not run in the middle of, say, failing the pending list.
     */
    final List<Runnable> afterUnlock = new ArrayList<>();

    /**
     * Ops whose completion has run, for the next operations: the owner gives them back, any sending thread takes one
     * (lock-free).
     */
    final BoundedQueue<Operation> spareOps;

    /**
     * Each thread's lists of the callbacks it runs at the end of a step, one per nesting level (a handler that sends
     * runs a batch inside a batch): reused, so nothing is allocated per completion.
     */
    static final ThreadLocal<AfterUnlockBatches> AFTER_UNLOCK_BATCHES =
            ThreadLocal.withInitial(AfterUnlockBatches::new);

    static final class AfterUnlockBatches {
        final ArrayList<ArrayList<Runnable>> lists = new ArrayList<>();
        int depth;

        ArrayList<Runnable> enter() {
            if (lists.size() == depth) lists.add(new ArrayList<>());
            return lists.get(depth++);
        }
    }

    EndpointCore(EndpointGroup group, boolean ownsGroup, Socket socket) {
        this.group = group;
        this.ownsGroup = ownsGroup;
        this.cfg = group.config();
        this.socket = socket;
        this.recvSlots = cfg.recvQueueDepth() + CTRL_EXTRA;
        this.sqDepth = cfg.sendQueueDepth();
        this.cqEntries = sqDepth + recvSlots;
        this.credits = new CreditWindow(cfg.recvQueueDepth());
        this.inFlight = new InFlight<>(sqDepth);
        this.spareOps = new BoundedQueue<>(sqDepth);
        this.goodbye = new Goodbye(cfg.timeout());
        var cq = group.reserve(self(), cqEntries); // the connection cap and a CQ with room, before anything is made
        QueuePair q = null;
        RegisteredBuffer rb = null;
        try {
            q = group.pd()
                    .createQueuePair(QpInitAttr.builder(cq)
                            .maxSendWr(sqDepth)
                            .maxRecvWr(recvSlots)
                            .maxInlineData(cfg.inlineSize())
                            .build());
            rb = group.messagePool().allocate((long) recvSlots * cfg.messageSize());
        } catch (RuntimeException e) {
            if (q != null) q.close();
            group.unregister(self(), cqEntries);
            throw e;
        }
        this.qp = q;
        this.recvBufs = rb;
        this.inlineLimit = Math.min(cfg.inlineSize(), qp.cap().maxInlineData());
        // completions can arrive as soon as the QP is in RTR, before the handshake has finished
        group.register(self());
    }

    /** A failed future when the endpoint cannot take operations any more, else null. Any thread. */
    <T> CompletableFuture<T> ifDown(String what) {
        if (state == State.CONNECTED) return null;
        return CompletableFuture.failedFuture(stateError(what));
    }

    // ---- the owner and the other threads ----------------------------------------------------------------------

    /** Whether the caller is the group's owner now: the data path acts at once; other threads hand it commands. */
    final boolean onOwner() {
        return group.isCompletionThread();
    }

    /**
     * Hands {@code command} to the group's owner (after what it has queued before). False when it was refused: the
     * group is closed, or its queue stayed full until the endpoint's timeout (the owner is stalled): back-pressure,
     * never a hang.
     */
    final boolean toOwner(Runnable command) {
        return group.submit(command, cfg.timeout().toNanos());
    }

    /**
     * Hands a data-path command (a send, a receive) to the owner as {@link #toOwner} does, or runs it right here as the
     * owner when the group's own thread does not drive now and no command waits ({@link EndpointGroup#runIfFree}): the
     * caller posts without a hand-off to that thread and without waking it. Not for commands that must follow the
     * completions in the CQ (a peer's goodbye, a close): those go through {@link #toOwner}.
     */
    final boolean dataToOwner(Runnable command) {
        return group.runIfFree(command) || toOwner(command);
    }

    /**
     * Runs {@code work} on the owner and waits for its result: at once on the owner (or when nobody drives the group
     * any more: its owner is gone), else as a command. For what is not the data path: set-up, changing a receive
     * handler, tests' looks at the state. What {@code work} throws is thrown here.
     */
    final <T> T onOwnerAndWait(java.util.function.Supplier<T> work) {
        if (onOwner() || !group.isOpen()) return work.get();
        CompletableFuture<T> done = new CompletableFuture<>();
        boolean queued = toOwner(() -> {
            try {
                done.complete(work.get());
            } catch (RuntimeException | Error e) {
                done.completeExceptionally(e);
            }
        });
        if (!queued) {
            if (!group.isOpen()) return work.get(); // closed meanwhile: nobody drives it
            throw new RdmaException(
                    RdmaException.Kind.TIMEOUT,
                    "the owner of " + this + "'s group took no command within "
                            + cfg.timeout().toMillis() + " ms");
        }
        try {
            return waitFor(group, done, cfg.timeout().toNanos() + TimeUnit.SECONDS.toNanos(2));
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error r) throw r;
            throw unwrap(e.getCause());
        } catch (TimeoutException e) {
            throw new RdmaException(
                    RdmaException.Kind.TIMEOUT,
                    "the owner of " + this + "'s group did not run a command within "
                            + cfg.timeout().toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException(RdmaException.Kind.CLOSED, "interrupted");
        }
    }

    void checkMessage(long len) {
        if (peerMessageSize > 0 && len > peerMessageSize) {
            throw new IllegalArgumentException(
                    "a message of " + len + " bytes is larger than the peer's receive buffers (" + peerMessageSize
                            + " bytes): raise messageSize on the peer, or use write");
        }
    }

    CompletableFuture<Void> sendBuffer(RegisteredBuffer b, long offset, int length, boolean owned) {
        Operation op = newOp(OperationKind.SEND);
        op.laddr = b.address() + offset;
        op.llen = length;
        op.lkey = b.lkey();
        if (owned) op.tmp = b;
        op.inline = length <= inlineLimit;
        return submit(op);
    }

    /** {@code name}: the operation's name in the messages of the range checks (a constant: nothing built per call). */
    Operation oneSided(
            OperationKind kind,
            String name,
            RegisteredBuffer local,
            long localOffset,
            RemoteBuffer remote,
            long remoteOffset,
            int length) {
        local.checkRange(localOffset, length, name);
        remote.check(remoteOffset, length, name);
        Operation op = newOp(kind);
        op.remote = remote;
        op.remoteOffset = remoteOffset;
        op.laddr = local.address() + localOffset;
        op.llen = length;
        op.lkey = local.lkey();
        op.raddr = remote.address() + remoteOffset;
        op.rkey = remote.rkey();
        return op;
    }

    Operation atomic(OperationKind kind, String name, RemoteBuffer remote, long offset) {
        remote.check(offset, 8, name);
        if (((remote.address() + offset) & 7) != 0) {
            throw new IllegalArgumentException(
                    name + " at " + remote + "+" + offset + ": the remote word must be 8-byte aligned");
        }
        Operation op = newOp(kind);
        op.remote = remote;
        op.remoteOffset = offset;
        if (!isConnected()) return op; // submit fails it without touching the pool
        op.tmp = group.messagePool().allocate(8);
        op.laddr = op.tmp.address();
        op.llen = 8;
        op.lkey = op.tmp.lkey();
        op.raddr = remote.address() + offset;
        op.rkey = remote.rkey();
        return op;
    }

    // ---- posting --------------------------------------------------------------------------------------------

    /**
     * An operation of the application, with its future and deadline: a spare op when there is one, so that the
     * steady state allocates only the future the public method returns.
     */
    Operation newOp(OperationKind kind) {
        Operation op = spareOp(
                kind,
                new CompletableFuture<>(),
                group.clock().nanoTime() + cfg.timeout().toNanos());
        op.recorded = JfrEvents.sampleOperation();
        return op;
    }

    /** A spare op made a new operation (any thread). */
    Operation spareOp(OperationKind kind, CompletableFuture<Object> future, long deadline) {
        Operation op = spareOps.poll();
        return (op != null ? op : new Operation(this)).reset(kind, future, deadline);
    }

    /**
     * An op is done with (its completion ran, or it had none, or it was refused before anyone else saw it): it serves
     * a later operation. Any thread that holds the op alone.
     */
    void recycle(Operation op) {
        op.future = null;
        op.listener = null;
        op.result = null;
        op.error = null;
        op.remote = null;
        op.mw = null;
        op.bindRegion = null;
        op.bindAccess = null;
        spareOps.offer(op); // dropped when enough are spare
    }

    /** Commits a sampled operation's flight-recorder event (once). */
    void recordEnd(Operation op, RdmaException failure) {
        JfrEvents.OperationEvent e = op.recorded;
        if (e == null) return;
        op.recorded = null;
        JfrEvents.endOperation(
                e, op.kind.name(), op.kind == OperationKind.BIND ? op.bindLen : op.llen, qp.qpNum(), failure);
    }

    /**
     * Posts or queues {@code op}: at once on the owner, else through a command on the owner's queue (after what this
     * thread submitted before). Returns its future (read first: once submitted, the op may complete and be reused);
     * an op the owner's queue refused fails with that refusal.
     */
    @SuppressWarnings("unchecked")
    <T> CompletableFuture<T> submit(Operation op) {
        CompletableFuture<T> future = (CompletableFuture<T>) (CompletableFuture<?>) op.future;
        if (onOwner()) {
            submitQueued(op);
        } else if (!dataToOwner(op.submitOnOwner)) {
            op.error = group.isOpen()
                    ? new RdmaException(
                            RdmaException.Kind.TIMEOUT,
                            op.what() + " refused: the group's owner took no command for "
                                    + cfg.timeout().toMillis() + " ms (its queue is full)")
                    : new RdmaException(RdmaException.Kind.CLOSED, op.what() + " failed: the group is closed");
            op.run(); // its future fails (or its listener is told) here: the owner never saw it
        }
        return future;
    }

    /** Posts or queues {@code op}, then runs the callbacks its step left. Owner only. */
    void submitQueued(Operation op) {
        // set-up binds the export's window before the connection is up
        boolean setUp =
                state == State.CONNECTING && (op.kind == OperationKind.BIND || op.kind == OperationKind.INVALIDATE);
        if (state != State.CONNECTED && !setUp) {
            failOp(op, stateError(op.what()));
        } else if (peerEnded != null && !setUp) {
            // the control channel heard the peer's goodbye; its owner has not acted on it yet
            failOp(op, derived(op, peerEnded));
        } else if (!pending.isEmpty() || !canPost(op)) {
            pending.add(op);
        } else {
            doPost(op);
        }
        runAfterUnlock();
    }

    boolean canPost(Operation op) {
        return postedWrs < sqDepth && (!op.needsCredit() || credits.canSend());
    }

    /** Posts op (owner only; the caller checked canPost). */
    void doPost(Operation op) {
        swr.next(null);
        swr.flags.clear();
        swr.flags.add(SendFlag.SIGNALED);
        swr.immData = 0;
        int piggy = 0;
        switch (op.kind) {
            case SEND -> {
                piggy = credits.toPiggyback();
                swr.opcode(WrOpcode.SEND_WITH_IMM).immData((TYPE_DATA << 24) | piggy);
                setSge(op);
            }
            case CREDIT -> {
                piggy = credits.toPiggyback();
                swr.opcode(WrOpcode.SEND_WITH_IMM)
                        .immData((TYPE_CREDIT << 24) | piggy)
                        .noBuffer();
            }
            case WRITE -> {
                swr.opcode(WrOpcode.RDMA_WRITE).remote(op.raddr, op.rkey);
                setSge(op);
            }
            case WRITE_IMM -> {
                swr.opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                        .remote(op.raddr, op.rkey)
                        .immData(op.imm);
                setSge(op);
            }
            case READ -> {
                swr.opcode(WrOpcode.RDMA_READ).remote(op.raddr, op.rkey);
                setSge(op);
            }
            case CAS -> {
                swr.opcode(WrOpcode.ATOMIC_CMP_AND_SWP).atomic(op.raddr, op.rkey, op.compare, op.swap);
                swr.numSge(1).sge(0).set(op.laddr, 8, op.lkey);
            }
            case FAA -> {
                swr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).atomic(op.raddr, op.rkey, op.compare, 0);
                swr.numSge(1).sge(0).set(op.laddr, 8, op.lkey);
            }
            case BIND -> {
                swr.opcode(WrOpcode.BIND_MW).noBuffer();
                swr.bindMw = op.mw;
                swr.bindRkey = op.newRkey;
                swr.bindMr = op.bindRegion;
                swr.bindAddr = op.bindAddr;
                swr.bindLength = op.bindLen;
                swr.bindAccess.clear();
                swr.bindAccess.addAll(op.bindAccess);
            }
            case INVALIDATE -> {
                swr.opcode(WrOpcode.LOCAL_INV).noBuffer();
                swr.invalidateRkey = op.newRkey;
            }
        }
        if (op.inline && op.llen > 0) swr.flags.add(SendFlag.INLINE);
        op.wrId = inFlight.add(op);
        swr.wrId(op.wrId);
        try {
            qp.postSend(swr);
        } catch (VerbsException e) {
            inFlight.remove(op.wrId);
            failOp(op, new RdmaException(RdmaException.Kind.POST_ERROR, op.what() + ": " + e.getMessage(), null, e));
            return;
        } finally {
            swr.bindMw = null;
            swr.bindMr = null;
        }
        op.posted = true;
        postedWrs++;
        if (op.kind == OperationKind.SEND || op.kind == OperationKind.CREDIT) credits.gaveBack(piggy);
        if (op.needsCredit()) credits.used();
        if (op.inline && op.tmp != null && op.kind == OperationKind.SEND) {
            // the payload was copied into the work request: the buffer is free again
            op.tmp.close();
            op.tmp = null;
        }
    }

    void setSge(Operation op) {
        if (op.llen == 0) {
            swr.noBuffer();
        } else {
            swr.numSge(1).sge(0).set(op.laddr, op.llen, op.lkey);
        }
    }

    void pump() {
        while (!pending.isEmpty() && (state == State.CONNECTED || state == State.CLOSING) && canPost(pending.peek()))
            doPost(pending.poll());
    }

    /** Returns credits on a message of its own when none can ride on a send soon. Owner only. */
    void maybeReturnCredits() {
        if ((state != State.CONNECTED && state != State.CLOSING) || postedWrs >= sqDepth) return;
        boolean sendSoon = !pending.isEmpty() && pending.peek().kind == OperationKind.SEND && credits.canSend();
        if (credits.needsUpdate(sendSoon)) doPost(spareOp(OperationKind.CREDIT, null, Long.MAX_VALUE));
    }

    void postRecv(int slot) {
        rwr.next(null).wrId(RECV_TAG | slot);
        rwr.numSge(1)
                .sge(0)
                .set(recvBufs.address() + (long) slot * cfg.messageSize(), cfg.messageSize(), recvBufs.lkey());
        qp.postRecv(rwr);
    }

    static RdmaException derived(Operation op, RdmaException cause) {
        String what = op == null ? "receive" : op.what();
        if (cause.getMessage() != null && cause.getMessage().startsWith(what)) return cause;
        return new RdmaException(cause.kind(), what + " failed: " + cause.getMessage(), cause.status(), cause);
    }

    RdmaException stateError(String what) {
        if (failure != null)
            return new RdmaException(
                    failure.kind(), what + " failed: " + failure.getMessage(), failure.status(), failure);
        return new RdmaException(
                RdmaException.Kind.CLOSED,
                what + " failed: the endpoint is " + (state == State.CLOSED ? "closed" : "closing"));
    }

    /**
     * Runs the callbacks a step of the owner left for its end (futures to complete, handlers to call), then keeps
     * their ops for reuse. The batch list is the thread's own, reused; a call from inside one of those callbacks (a
     * future's callback that sends again) takes a list of its own. Owner only.
     */
    void runAfterUnlock() {
        AfterUnlockBatches batches = AFTER_UNLOCK_BATCHES.get();
        ArrayList<Runnable> todo = batches.enter();
        for (int i = 0; i < afterUnlock.size(); i++) todo.add(afterUnlock.get(i)); // addAll would copy to an array
        afterUnlock.clear();
        if (todo.isEmpty()) {
            batches.depth--;
            return;
        }
        boolean ops = false;
        try {
            for (int i = 0; i < todo.size(); i++) {
                Runnable r = todo.get(i);
                r.run();
                ops |= r instanceof Operation;
            }
        } finally {
            if (ops) {
                for (int i = 0; i < todo.size(); i++) if (todo.get(i) instanceof Operation op) recycle(op);
            }
            todo.clear();
            batches.depth--;
        }
    }

    /**
     * Waits for a future without running other tasks meanwhile: {@code CompletableFuture.get} on a ForkJoinPool
     * worker may run other queued tasks inside the wait (a lock holder could end up stuck under a lock waiter). It drives
     * the group on this thread first, for the group's busy-poll budget ({@link EndpointGroup#helpUntil}): a reply is
     * then dispatched here, not handed over from the group's thread.
     */
    static <T> T waitFor(EndpointGroup group, CompletableFuture<T> f, long nanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        // first the caller drives the group itself for a while: the answer is polled and delivered on this thread
        if (!f.isDone()) group.helpUntil(f::isDone, group.clock().nanoTime() + nanos);
        if (!f.isDone()) {
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
            f.whenComplete((r, e) -> done.countDown());
            if (!done.await(nanos, TimeUnit.NANOSECONDS)) throw new TimeoutException();
        }
        try {
            return f.join();
        } catch (java.util.concurrent.CompletionException e) {
            throw new ExecutionException(e.getCause());
        } catch (java.util.concurrent.CancellationException e) {
            throw new ExecutionException(e);
        }
    }

    static RuntimeException unwrap(Throwable t) {
        if (t instanceof RdmaException r) {
            // a fresh exception so the stack trace shows the caller, with the original as cause
            return new RdmaException(r.kind(), r.getMessage(), r.status(), r);
        }
        if (t instanceof RuntimeException r) return r;
        return new RdmaException(RdmaException.Kind.COMPLETION_ERROR, String.valueOf(t), null, t);
    }
}
