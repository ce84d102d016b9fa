package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Socket;
import java.net.SocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * One end of a reliable RDMA connection (an RC queue pair), made by {@link #connect} or {@link ServerEndpoint#accept}.
 *
 * <p>Two-sided: {@link #send} a byte array, segment or registered buffer; receive with a callback
 * ({@link #onReceive}), a future ({@link #receive()}) or a blocking call ({@link #receive(Duration)}). Receive buffers
 * are pre-posted from registered memory, and credits (piggybacked on messages, or sent alone) keep a sender from
 * ever sending into an empty receive queue: a send waits for a credit instead of causing an RNR.
 *
 * <p>One-sided: {@link #write}, {@link #writeWithImmediate}, {@link #read}, {@link #compareAndSwap},
 * {@link #fetchAndAdd} between a {@link RegisteredBuffer} and a {@link RemoteBuffer}. Memory windows:
 * {@link #grant}.
 *
 * <p>Every operation returns a {@link CompletableFuture}; the {@code ...Sync} methods wait for it. A failed
 * completion fails the future with an {@link RdmaException} carrying the {@link WcStatus} and its explanation
 * and remedy; an operation without completion within the timeout fails with a TIMEOUT; a peer that closes or
 * disappears fails everything outstanding. After a failed completion the QP is in the error state and the
 * endpoint is broken: later operations fail at once with the first error.
 */
public final class Endpoint implements AutoCloseable {
    static final int HANDSHAKE_MAGIC = 0x4A52444D; // "JRDM"
    /** The handshake version this side speaks (2: with the offer of packet authentication), and the oldest it still reads. */
    static final int HANDSHAKE_VERSION = 2, HANDSHAKE_MIN_VERSION = 1;

    static final int VERDICT_ACCEPT = 0, VERDICT_REJECT = 1, VERDICT_VERSION = 2;
    static final int READY = 'R', BYE = 'B', BYE_ACK = 'A';
    /** Receives posted beyond the data credits, for credit-only messages. */
    static final int CTRL_EXTRA = 4;

    static final int TYPE_DATA = 0, TYPE_CREDIT = 1;
    private static final long RECV_TAG = 1L << 62;
    private static final System.Logger LOG = System.getLogger(Endpoint.class.getName());
    private static final SecureRandom KEYS = new SecureRandom();

    private enum State {
        CONNECTING,
        CONNECTED,
        CLOSING,
        PEER_CLOSED,
        BROKEN,
        CLOSED
    }

    private enum Kind {
        SEND,
        WRITE,
        WRITE_IMM,
        READ,
        CAS,
        FAA,
        BIND,
        INVALIDATE,
        CREDIT
    }

    /**
     * One operation, from submission to completion. Ops are reused (see {@link #newOp}): nothing may keep one after
     * its completion has run ({@link #run}). Its description is built only when a failure needs it ({@link #what}).
     */
    private static final class Op implements Runnable {
        Kind kind;
        CompletableFuture<Object> future; // null for the endpoint's own credit messages and listened sends
        SendListener listener; // a send of send(buf, offset, length, listener): told instead of a future
        long deadline;
        RemoteBuffer remote; // the peer's memory of a one-sided or atomic operation (for its description)
        long remoteOffset;
        Object result; // what the future completes with, or
        RdmaException error; // what it fails with
        RegisteredBuffer tmp; // pool buffer to give back on completion
        long laddr;
        int llen, lkey;
        long raddr, compare, swap;
        int rkey, imm;
        boolean inline;
        MemoryWindow mw;
        int newRkey;
        long bindAddr, bindLen;
        MemoryRegion bindRegion;
        Set<Access> bindAccess;
        long wrId;
        boolean posted; // handed to the device: it may use tmp until the WR's completion
        JfrEvents.OperationEvent recorded; // a sampled operation's flight-recorder event, else null

        /** Makes a spare op a new operation: every field as a new one would have it. */
        Op reset(Kind newKind, CompletableFuture<Object> newFuture, long newDeadline) {
            kind = newKind;
            future = newFuture;
            listener = null;
            deadline = newDeadline;
            remote = null;
            remoteOffset = 0;
            result = null;
            error = null;
            tmp = null;
            laddr = 0;
            llen = lkey = 0;
            raddr = compare = swap = 0;
            rkey = imm = 0;
            inline = false;
            mw = null;
            newRkey = 0;
            bindAddr = bindLen = 0;
            bindRegion = null;
            bindAccess = null;
            wrId = 0;
            posted = false;
            recorded = null;
            return this;
        }

        /** What the operation is, for the messages of its failures (built only then: nothing per operation). */
        String what() {
            return switch (kind) {
                case SEND -> "send of " + llen + " bytes";
                case WRITE -> "RDMA write of " + llen + " bytes to " + remote;
                case WRITE_IMM -> "RDMA write with immediate of " + llen + " bytes to " + remote;
                case READ -> "RDMA read of " + llen + " bytes from " + remote;
                case CAS -> "compare-and-swap at " + remote + "+" + remoteOffset;
                case FAA -> "fetch-and-add at " + remote + "+" + remoteOffset;
                case BIND -> "bind of a memory window over " + bindLen + " bytes";
                case INVALIDATE -> "invalidation of memory window rkey 0x" + Integer.toHexString(newRkey);
                case CREDIT -> "credit update";
            };
        }

        /** Completes the future (or tells the listener), after the endpoint's lock is released. */
        @Override
        public void run() {
            if (listener != null) {
                try {
                    listener.sent(error);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "a send listener threw " + e, e);
                }
            } else if (error != null) {
                future.completeExceptionally(error);
            } else {
                future.complete(result);
            }
        }

        /** Whether someone waits for this operation's end (a future or a listener): else it is the endpoint's own. */
        boolean awaited() {
            return future != null || listener != null;
        }

        boolean needsCredit() {
            return kind == Kind.SEND || kind == Kind.WRITE_IMM;
        }
    }

    private final EndpointGroup group;
    private final boolean ownsGroup;
    private final EndpointConfig cfg;
    private final QueuePair qp;
    private final Socket socket;
    private final RegisteredBuffer recvBufs;
    private final int recvSlots;
    private final int sqDepth;
    private final int inlineLimit;
    private final int cqEntries;
    private final SendWorkRequest swr = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);

    private ConnParams local, remote;
    /** Whether the handshake put this connection's QP in the authenticated mode ({@link #packetAuthenticated()}). */
    private volatile boolean packetAuthenticated;

    private int peerMessageSize;
    private byte[] peerPrivateData = new byte[0];
    private RemoteBuffer peerExport;
    // what this side exports to this peer: a window reserved before the handshake and bound once the QP is in RTS
    private ExportedRange exportRange;
    private MemoryWindow exportWindow;
    private RemoteBuffer exportRemote;
    private volatile WindowGrant localExport;

    /** Set by the control channel's thread when the peer said goodbye or went away: new operations fail at once. */
    private volatile RdmaException peerEnded;

    // all below guarded by this
    private State state = State.CONNECTING;
    private RdmaException failure;
    private final CreditWindow credits;
    private final Goodbye goodbye;
    private final InFlight<Op> inFlight;
    // WRs at the device (completions not yet seen), given-up operations' included; and the buffers of given-up
    // operations, kept until no WR is at the device: a late READ response or atomic result must not land in a
    // buffer that someone else holds by then
    private int postedWrs;
    private final List<RegisteredBuffer> heldUntilRetired = new ArrayList<>();
    private final ArrayDeque<Op> pending = new ArrayDeque<>();
    private final ArrayDeque<Message> inbox = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Message>> waiters = new ArrayDeque<>();
    private Consumer<Message> handler;
    /** Takes the messages in their receive buffers ({@link #onReceiveLent}), or null. */
    private LentMessageHandler lentHandler;
    /** One lent view per receive buffer (made with {@link #onReceiveLent}). */
    private LentMessage[] lentSlots;
    /** Messages lent and not yet released; whether the lent handler was told the input ended. */
    private int lentOut;

    private boolean lentEndTold;
    /**
     * Lent messages (and then the end) in arrival order, for the one thread at a time that hands them to the handler
     * ({@link #drainLent}): whichever thread runs the work left after the lock, the handler sees them in order.
     */
    private final ArrayDeque<LentMessage> lentReady = new ArrayDeque<>();

    private RdmaException lentEnd;
    private boolean lentDraining, lentDrainQueued;
    private final Runnable drainLentTask = this::drainLent;
    /** The endpoint was released while messages were lent: the receive buffers go back with the last of them. */
    private boolean recvBufsCloseDeferred;

    private final List<Runnable> afterUnlock = new ArrayList<>();
    /** Ops whose completion has run, for the next operations (guarded by this). */
    private final ArrayDeque<Op> spareOps = new ArrayDeque<>();
    /**
     * Each thread's lists of the work it runs after the lock, one per nesting level (a handler that sends runs a
     * batch inside a batch): reused, so nothing is allocated per completion.
     */
    private static final ThreadLocal<AfterUnlockBatches> AFTER_UNLOCK_BATCHES =
            ThreadLocal.withInitial(AfterUnlockBatches::new);

    private static final class AfterUnlockBatches {
        final ArrayList<ArrayList<Runnable>> lists = new ArrayList<>();
        int depth;

        ArrayList<Runnable> enter() {
            if (lists.size() == depth) lists.add(new ArrayList<>());
            return lists.get(depth++);
        }
    }

    private Endpoint(EndpointGroup group, boolean ownsGroup, Socket socket) {
        this.group = group;
        this.ownsGroup = ownsGroup;
        this.cfg = group.config();
        this.socket = socket;
        this.recvSlots = cfg.recvQueueDepth() + CTRL_EXTRA;
        this.sqDepth = cfg.sendQueueDepth();
        this.cqEntries = sqDepth + recvSlots;
        this.credits = new CreditWindow(cfg.recvQueueDepth());
        this.inFlight = new InFlight<>(sqDepth);
        this.goodbye = new Goodbye(cfg.timeout());
        var cq = group.reserve(this, cqEntries); // the connection cap and a CQ with room, before anything is made
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
            group.unregister(this, cqEntries);
            throw e;
        }
        this.qp = q;
        this.recvBufs = rb;
        this.inlineLimit = Math.min(cfg.inlineSize(), qp.cap().maxInlineData());
        // completions can arrive as soon as the QP is in RTR, before the handshake has finished
        group.register(this);
    }

    // ---- connection set-up ----------------------------------------------------------------------------------

    /**
     * Connects to a server endpoint with the default settings ({@link EndpointConfig#defaults()}).
     *
     * @param host the server's host name or address
     * @param port the server's TCP port (or rdma_cm port when rdma_cm is used)
     * @return the connected endpoint, on a group of its own (closed with it)
     * @throws RdmaConnectException with its {@link RdmaConnectException.Reason}: NOTHING_LISTENING, TIMEOUT (nothing
     *                              within {@link EndpointConfig#timeout()}), ADDRESS_ERROR (the host cannot be
     *                              resolved or reached, or the port is outside 1..65535), REJECTED (the server's
     *                              filter or caps), VERSION_MISMATCH, PROTOCOL_ERROR (the peer is not a jrdma
     *                              endpoint), PEER_GONE, DEVICE_ERROR (no RDMA device, or the QP could not be set up)
     */
    public static Endpoint connect(String host, int port) throws RdmaConnectException {
        return connect(host, port, EndpointConfig.defaults());
    }

    /**
     * Connects to a server endpoint: TCP to {@code host:port}, the handshake (connection parameters both ways),
     * both QPs to RTS. Fails within {@link EndpointConfig#timeout()} with a {@link RdmaConnectException} that says why.
     * With rdma_cm ({@link EndpointConfig#connectionManager()}) the same is done by address and route resolution
     * and the CM's connect.
     *
     * @param host the server's host name or address
     * @param port the server's port
     * @param cfg  the settings of this endpoint (and of its group)
     * @return the connected endpoint, on a group of its own (closed with it)
     * @throws RdmaConnectException with its {@link RdmaConnectException.Reason}: NOTHING_LISTENING, TIMEOUT (nothing
     *                              within {@link EndpointConfig#timeout()}), ADDRESS_ERROR (the host cannot be
     *                              resolved or reached, or the port is outside 1..65535), REJECTED (the server's
     *                              filter or caps), VERSION_MISMATCH, PROTOCOL_ERROR (the peer is not a jrdma
     *                              endpoint), PEER_GONE, DEVICE_ERROR (no RDMA device, or the QP could not be set up)
     */
    public static Endpoint connect(String host, int port, EndpointConfig cfg) throws RdmaConnectException {
        return connect(host, port, cfg, null, null);
    }

    /**
     * Connects using a shared group (null: a group of its own, closed with the endpoint) and offering
     * {@code export} (or null) to the server in the handshake.
     *
     * @param host   the server's host name or address
     * @param port   the server's port
     * @param cfg    the settings of this endpoint
     * @param group  the group to create the endpoint in (its device must reach the server), or null for one of its own
     * @param export a buffer of {@code group}'s pool the server may access with the rights of
     *               {@link EndpointConfig#remoteAccess()} ({@link #peerExport()} on its side), or null
     * @return the connected endpoint
     * @throws RdmaConnectException with its {@link RdmaConnectException.Reason}: NOTHING_LISTENING, TIMEOUT (nothing
     *                              within {@link EndpointConfig#timeout()}), ADDRESS_ERROR (the host cannot be
     *                              resolved or reached, or the port is outside 1..65535), REJECTED (the server's
     *                              filter or caps), VERSION_MISMATCH, PROTOCOL_ERROR (the peer is not a jrdma
     *                              endpoint), PEER_GONE, DEVICE_ERROR (no RDMA device, or the QP could not be set up)
     * @throws IllegalArgumentException when {@code export} is given without a group, is empty, is not memory of the
     *                                  group's pool, or {@link EndpointConfig#remoteAccess()} is empty
     */
    public static Endpoint connect(String host, int port, EndpointConfig cfg, EndpointGroup group, RemoteBuffer export)
            throws RdmaConnectException {
        boolean cm = CmConnector.useCm(cfg);
        return JfrEvents.recordSetup(
                "client", cm, host + ":" + port, () -> connect(host, port, cfg, group, export, cm));
    }

    private static Endpoint connect(
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

    /** An endpoint for the TCP exchange of {@link TcpConnector} on {@code socket} (its control channel after). */
    static Endpoint createForTcp(EndpointGroup group, boolean ownsGroup, Socket socket) {
        return new Endpoint(group, ownsGroup, socket);
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
        localExport = WindowGrant.window(this, exportWindow, exportRemote);
        exportWindow = null;
    }

    // ---- hooks for the rdma_cm connector -------------------------------------------------------------------

    static Endpoint createForCm(EndpointGroup group, boolean ownsGroup) {
        return new Endpoint(group, ownsGroup, null);
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

    void cmModify(QpAttr attr) {
        qp.modify(attr);
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
     */
    void applyPeer(ConnParams params, int peerCredits, int messageSize, byte[] privateData, RemoteBuffer export) {
        remote = params;
        peerMessageSize = messageSize;
        peerPrivateData = privateData;
        peerExport = export;
        synchronized (this) {
            credits.open(peerCredits);
        }
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

    void started() {
        synchronized (this) {
            state = State.CONNECTED;
            pump();
            maybeReturnCredits();
        }
        runAfterUnlock();
        goodbye.control().start(this);
    }

    /**
     * The peer said goodbye (from the control channel). New sends fail at once (the peer takes nothing more); what
     * came before the goodbye is still delivered first, by the group's owner.
     */
    void peerBye() {
        if (peerEnded == null) peerEnded = peerClosedError(true);
        group.submit(() -> onPeerClosed(true));
    }

    /** The peer went away without a goodbye. */
    void peerLost() {
        if (peerEnded == null) peerEnded = peerClosedError(false);
        group.submit(() -> onPeerClosed(false));
    }

    private RdmaException peerClosedError(boolean graceful) {
        return graceful
                ? new RdmaException(
                        RdmaException.Kind.PEER_CLOSED, "the peer at " + remoteAddress() + " closed the connection")
                : new RdmaException(
                        RdmaException.Kind.PEER_GONE,
                        "the peer at " + remoteAddress()
                                + " is gone: its connection ended without a goodbye (process exited or crashed, or the network failed)");
    }

    /** The peer sent what its control channel does not carry (it is disconnected): the endpoint ends with PROTOCOL_ERROR. */
    void controlViolation(String what) {
        group.submit(() -> {
            synchronized (this) {
                breakWith(new RdmaException(RdmaException.Kind.PROTOCOL_ERROR, what));
                notifyAll();
            }
            runAfterUnlock();
        });
    }

    /** The peer acknowledged our goodbye (or can no longer). */
    void peerAcked() {
        markPeerAcked();
    }

    private synchronized void markPeerAcked() {
        goodbye.peerAcknowledged();
        notifyAll();
    }

    // ---- accessors ------------------------------------------------------------------------------------------

    /** The registered memory of the receive slots (tests check that no peer can reach it). */
    RegisteredBuffer receiveSlots() {
        return recvBufs;
    }

    /** {@return this side's QP number (24 bits)} */
    public int qpNum() {
        return qp.qpNum();
    }

    /** {@return the RC queue pair under the endpoint (for diagnostics; posting on it directly bypasses the credits)} */
    public QueuePair queuePair() {
        return qp;
    }

    /** {@return the group the endpoint belongs to: its device, buffer pool and completion thread} */
    public EndpointGroup group() {
        return group;
    }

    /** {@return this side's connection parameters, as sent to the peer} */
    public ConnParams localParams() {
        return local;
    }

    /**
     * {@return whether this connection runs in the authenticated mode: every packet of its QP carries a MAC under a key
     * the two sides agreed in the TCP handshake (X25519), and a packet without the right one is dropped by the device
     * ({@code rx_bad_mac}). On when both sides' devices support it ({@code Context.supportsPacketAuth()}, the software
     * device) and both configs allow it ({@link EndpointConfig#packetAuth()}); plain RoCEv2 otherwise, and always over
     * rdma_cm}
     */
    public boolean packetAuthenticated() {
        return packetAuthenticated;
    }

    /** {@return the peer's connection parameters, as it sent them} */
    public ConnParams remoteParams() {
        return remote;
    }

    /** {@return a copy of the private data the peer sent with connect or accept (empty when none)} */
    public byte[] peerPrivateData() {
        return peerPrivateData.clone();
    }

    /**
     * {@return what this side exported to this peer (a window bound on this connection's QP, or a region of its own
     * over exactly the exported range), or null} Closing it revokes this peer's access only.
     */
    public WindowGrant localExport() {
        return localExport;
    }

    /** {@return the buffer the peer offered in the handshake (its {@code export}), or null when it offered none} */
    public RemoteBuffer peerExport() {
        return peerExport;
    }

    /** {@return the largest message the peer accepts, in bytes: its {@link EndpointConfig#messageSize()}} */
    public int maxMessageSize() {
        return peerMessageSize;
    }

    /** {@return the peer's address (of the TCP exchange or the rdma_cm id), or null when unknown} */
    public SocketAddress remoteAddress() {
        Control control = goodbye.control();
        return control != null ? control.remoteAddress() : socket != null ? socket.getRemoteSocketAddress() : null;
    }

    /** {@return this side's address (of the TCP exchange or the rdma_cm id), or null when unknown} */
    public SocketAddress localAddress() {
        Control control = goodbye.control();
        return control != null ? control.localAddress() : socket != null ? socket.getLocalSocketAddress() : null;
    }

    /** {@return the registered memory of this endpoint's group, for buffers of zero-copy and one-sided operations} */
    public BufferPool pool() {
        return group.pool();
    }

    /** {@return whether operations can be started: the connection is up and neither side closed or broke it} */
    public synchronized boolean isConnected() {
        return state == State.CONNECTED;
    }

    /** {@return the send credits left: receive buffers the peer has free for this side's messages} */
    public synchronized int sendCredits() {
        return credits.sendCredits();
    }

    // ---- two-sided ------------------------------------------------------------------------------------------

    /**
     * Sends a copy of {@code data} (an RC send). It waits for a send credit when the peer has no free receive
     * buffer; {@code data} may be changed as soon as this returns.
     *
     * @param data at most {@link #maxMessageSize()} bytes
     * @return completes when the peer's adapter acknowledged the message; fails with an {@link RdmaException} when the
     *         endpoint is not connected, no credit came within the timeout, or the send failed
     * @throws IllegalArgumentException when {@code data} is larger than {@link #maxMessageSize()}
     */
    public CompletableFuture<Void> send(byte[] data) {
        checkMessage(data.length);
        CompletableFuture<Void> down = ifDown("send");
        if (down != null) return down;
        RegisteredBuffer b = group.messagePool().allocate(data);
        return sendBuffer(b, 0, data.length, true);
    }

    /**
     * Sends a copy of the segment's bytes, as {@link #send(byte[])}.
     *
     * @param data at most {@link #maxMessageSize()} bytes (heap or native memory)
     * @return completes when the peer's adapter acknowledged the message; fails with an {@link RdmaException} as
     *         {@link #send(byte[])}'s does
     * @throws IllegalArgumentException when {@code data} is larger than {@link #maxMessageSize()}
     */
    public CompletableFuture<Void> send(MemorySegment data) {
        checkMessage(data.byteSize());
        CompletableFuture<Void> down = ifDown("send");
        if (down != null) return down;
        RegisteredBuffer b = group.messagePool().allocate(Math.max(1, data.byteSize()));
        MemorySegment.copy(data, 0, b.segment(), 0, data.byteSize());
        return sendBuffer(b, 0, (int) data.byteSize(), true);
    }

    /**
     * Sends part of a registered buffer without copying; do not change it until the future completes. In the steady
     * state this allocates only the future it returns (operations are reused, and their descriptions are built only
     * for a failure).
     *
     * @param buf    a buffer of this endpoint's group ({@link #pool()})
     * @param offset where the message starts in {@code buf}, in bytes
     * @param length at most {@link #maxMessageSize()} bytes
     * @return completes when the peer's adapter acknowledged the message; fails with an {@link RdmaException} as
     *         {@link #send(byte[])}'s does
     * @throws IllegalArgumentException  when {@code length} is larger than {@link #maxMessageSize()}
     * @throws IndexOutOfBoundsException when the range is outside {@code buf}
     * @throws IllegalStateException     when {@code buf} was given back to its pool
     */
    public CompletableFuture<Void> send(RegisteredBuffer buf, long offset, int length) {
        checkMessage(length);
        buf.checkRange(offset, length, "send");
        return sendBuffer(buf, offset, length, false);
    }

    /**
     * Sends part of a registered buffer without copying and without a future: {@code listener} is told when the send
     * is done. Nothing is allocated per send in the steady state (operations are reused), so this is the data path of
     * a transport (jrdma-netty's channel). Do not change the range until the listener was told.
     *
     * @param buf      a buffer of this endpoint's group ({@link #pool()})
     * @param offset   where the message starts in {@code buf}, in bytes
     * @param length   at most {@link #maxMessageSize()} bytes
     * @param listener told once, on the group's owner thread, when the send completed or failed
     * @return true when the send was taken (posted, or queued for a credit or a send queue entry); false when the
     *         endpoint refused it at once (not connected, closed, broken or the peer gone: {@link #refusal()} says
     *         why), and then the listener is not told
     * @throws IllegalArgumentException  when {@code length} is larger than {@link #maxMessageSize()}
     * @throws IndexOutOfBoundsException when the range is outside {@code buf}
     * @throws IllegalStateException     when {@code buf} was given back to its pool
     */
    public boolean send(RegisteredBuffer buf, long offset, int length, SendListener listener) {
        checkMessage(length);
        buf.checkRange(offset, length, "send");
        if (listener == null) throw new NullPointerException("listener");
        Op op = spareOp(Kind.SEND, null, System.nanoTime() + cfg.timeout().toNanos());
        op.recorded = JfrEvents.sampleOperation();
        op.listener = listener;
        op.laddr = buf.address() + offset;
        op.llen = length;
        op.lkey = buf.lkey();
        op.inline = length <= inlineLimit;
        boolean taken;
        synchronized (this) {
            taken = state == State.CONNECTED && peerEnded == null;
            if (!taken) {
                op.recorded = null;
                recycle(op);
            } else if (!pending.isEmpty() || !canPost(op)) {
                pending.add(op);
            } else {
                doPost(op);
            }
        }
        runAfterUnlock();
        return taken;
    }

    /**
     * {@return why this endpoint refuses operations now (its failure, the peer's goodbye, or its close), or null while
     * it takes them}
     */
    public RdmaException refusal() {
        RdmaException ended = peerEnded;
        synchronized (this) {
            if (state == State.CONNECTED) return ended;
            return failure != null ? failure : stateError("send");
        }
    }

    /**
     * Sends a copy of {@code data} and waits until the peer's adapter has it, as {@link #send(byte[])}.
     *
     * @param data at most {@link #maxMessageSize()} bytes
     * @throws IllegalArgumentException when {@code data} is larger than {@link #maxMessageSize()}
     * @throws RdmaException            when the send fails, or does not complete within the timeout
     */
    public void sendSync(byte[] data) {
        await(send(data));
    }

    /** A failed future when the endpoint cannot take operations any more, else null. */
    private <T> CompletableFuture<T> ifDown(String what) {
        synchronized (this) {
            if (state == State.CONNECTED) return null;
            return CompletableFuture.failedFuture(stateError(what));
        }
    }

    private void checkMessage(long len) {
        if (peerMessageSize > 0 && len > peerMessageSize) {
            throw new IllegalArgumentException(
                    "a message of " + len + " bytes is larger than the peer's receive buffers (" + peerMessageSize
                            + " bytes): raise messageSize on the peer, or use write");
        }
    }

    private CompletableFuture<Void> sendBuffer(RegisteredBuffer b, long offset, int length, boolean owned) {
        Op op = newOp(Kind.SEND);
        op.laddr = b.address() + offset;
        op.llen = length;
        op.lkey = b.lkey();
        if (owned) op.tmp = b;
        op.inline = length <= inlineLimit;
        return submit(op);
    }

    /**
     * Delivers every message (queued ones first) to {@code handler} on the completion thread. The handler must
     * not block. Null goes back to queueing.
     *
     * @param h the handler, or null; a RuntimeException it throws is logged, an {@link Error} ends the endpoint
     *          ({@link RdmaException.Kind#HANDLER_ERROR})
     */
    public void onReceive(Consumer<Message> h) {
        List<Message> drained = new ArrayList<>();
        synchronized (this) {
            if (lentHandler != null)
                throw new IllegalStateException("the messages go to the lent receive handler (onReceiveLent)");
            handler = h;
            if (h != null) {
                while (!inbox.isEmpty()) {
                    drained.add(inbox.poll());
                    credits.consumed();
                }
                maybeReturnCredits();
            }
        }
        for (Message m : drained) h.accept(m);
        runAfterUnlock();
    }

    /**
     * The next message, taken from the queue or the next to arrive (not while a {@link #onReceive} handler is set:
     * it gets them all).
     *
     * @return completes with the message (on the completion thread when it had to wait); fails with an {@link RdmaException}
     *         when the endpoint is closed or broken, or the peer goes away with nothing left to receive
     */
    public CompletableFuture<Message> receive() {
        CompletableFuture<Message> f = new CompletableFuture<>();
        synchronized (this) {
            if (lentHandler != null) {
                f.completeExceptionally(
                        new IllegalStateException("the messages go to the lent receive handler (onReceiveLent)"));
            } else if (!inbox.isEmpty()) {
                f.complete(inbox.poll());
                credits.consumed();
                maybeReturnCredits();
            } else if (state != State.CONNECTED && state != State.CLOSING) {
                f.completeExceptionally(stateError("receive"));
            } else {
                waiters.add(f);
            }
        }
        runAfterUnlock();
        return f;
    }

    /**
     * The next message, waiting at most {@code timeout}.
     *
     * @param timeout how long to wait
     * @return the message
     * @throws RdmaException TIMEOUT when none came in time, CLOSED when the thread was interrupted, else the failure
     *                       of the endpoint (closed, broken, the peer gone)
     */
    public Message receive(Duration timeout) {
        CompletableFuture<Message> f = receive();
        try {
            return waitFor(group, f, timeout.toNanos());
        } catch (TimeoutException e) {
            synchronized (this) {
                if (waiters.remove(f)) {
                    throw new RdmaException(
                            RdmaException.Kind.TIMEOUT, "no message within " + timeout.toMillis() + " ms");
                }
            }
            return f.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            synchronized (this) {
                waiters.remove(f);
            }
            throw new RdmaException(RdmaException.Kind.CLOSED, "interrupted while waiting for a message");
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    /**
     * The next message, waiting at most the configured timeout ({@link EndpointConfig#timeout()}).
     *
     * @return the message
     * @throws RdmaException as {@link #receive(Duration)}
     */
    public Message receiveSync() {
        return receive(cfg.timeout());
    }

    /**
     * Hands every message to {@code h} without a copy, lent in the registered receive buffer it landed in (queued
     * ones first, those as copies): nothing is allocated per message. Each {@link LentMessage} must be released; until
     * then its buffer, and the peer's credit for it, stay taken (a handler that holds messages slows its peer, nothing
     * is lost). Once set it stays: {@link #onReceive} and {@link #receive()} are refused afterwards.
     *
     * @param h the handler, called on the group's owner thread; it must not block. A RuntimeException it throws is
     *          logged (the message stays lent), an {@link Error} ends the endpoint
     *          ({@link RdmaException.Kind#HANDLER_ERROR})
     * @throws IllegalStateException when a handler ({@link #onReceive} or lent) is set already
     */
    public void onReceiveLent(LentMessageHandler h) {
        if (h == null) throw new NullPointerException("handler");
        synchronized (this) {
            if (handler != null || lentHandler != null)
                throw new IllegalStateException("this endpoint's receive handler is set already");
            if (lentSlots == null) {
                lentSlots = new LentMessage[recvSlots];
                for (int i = 0; i < recvSlots; i++) {
                    lentSlots[i] = new LentMessage(
                            this, i, recvBufs.segment().asSlice((long) i * cfg.messageSize(), cfg.messageSize()));
                }
            }
            lentHandler = h;
            Message m;
            while ((m = inbox.poll()) != null) {
                LentMessage copy = new LentMessage(this, -1, MemorySegment.ofArray(m.bytes()));
                lentOut++;
                boolean imm = m.isWriteWithImmediate();
                lentReady.add(copy.lend(m.length(), imm, imm ? m.immediate() : 0));
                queueLentDrain();
            }
            if (state != State.CONNECTING && state != State.CONNECTED && state != State.CLOSING)
                endLent(failure != null ? failure : stateError("receive"));
        }
        runAfterUnlock();
    }

    /** Lends a received message in its slot to the lent handler (not reposted until released). Caller holds the lock. */
    private void lend(int slot, int length, boolean hasImmediate, int immediate) {
        lentOut++;
        lentReady.add(lentSlots[slot].lend(length, hasImmediate, immediate));
        queueLentDrain();
    }

    /** A lent message's release: its slot is posted again and the peer gets the credit back. */
    void release(LentMessage m) {
        boolean closeBuffers;
        synchronized (this) {
            if (!m.lent) throw new IllegalStateException(m + " was released already");
            m.lent = false;
            lentOut--;
            if (m.slot() >= 0) repost(m.slot());
            credits.consumed();
            if (state == State.CONNECTED || state == State.CLOSING) {
                pump();
                maybeReturnCredits();
            }
            closeBuffers = recvBufsCloseDeferred && lentOut == 0;
            if (closeBuffers) recvBufsCloseDeferred = false;
        }
        runAfterUnlock();
        if (closeBuffers) recvBufs.close();
    }

    /** Runs the lent handler: a RuntimeException is logged, an Error ends this endpoint (logged too). */
    void runLentHandler(LentMessageHandler h, LentMessage m) {
        try {
            h.onMessage(m);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": the lent receive handler threw " + e, e);
        } catch (Error e) {
            failOnCompletionThread("the lent receive handler threw " + e, e);
        }
    }

    // ---- one-sided ------------------------------------------------------------------------------------------

    /**
     * RDMA WRITE ({@code IBV_WR_RDMA_WRITE}) of {@code length} bytes from {@code local[localOffset..]} to
     * {@code remote[remoteOffset..]}. The peer's CPU does not take part and is not told.
     *
     * @param local        a registered buffer of this side
     * @param localOffset  where in {@code local} the data starts, in bytes
     * @param remote       the peer's memory, as it sent it ({@link RegisteredBuffer#remote()}, an export or a grant)
     * @param remoteOffset where in {@code remote} the data starts, in bytes
     * @param length       bytes, 0..2^31-1; at most the device's {@code max_msg_sz}
     * @return completes when the peer's adapter acknowledged the write; fails with an {@link RdmaException}: a
     *         COMPLETION_ERROR with the status (REM_ACCESS_ERR: the rkey, range or rights do not allow it), TIMEOUT,
     *         or the endpoint's failure
     * @throws IndexOutOfBoundsException when a range is outside its buffer
     * @throws IllegalStateException     when {@code local} was given back to its pool
     */
    public CompletableFuture<Void> write(
            RegisteredBuffer local, long localOffset, RemoteBuffer remote, long remoteOffset, int length) {
        Op op = oneSided(Kind.WRITE, "RDMA write", local, localOffset, remote, remoteOffset, length);
        op.inline = length <= inlineLimit;
        return submit(op);
    }

    /**
     * RDMA WRITE with immediate ({@code IBV_WR_RDMA_WRITE_WITH_IMM}): writes as {@link #write} and hands the peer
     * {@code immediate} as a {@link Message} ({@link Message#isWriteWithImmediate()}). It uses one of the peer's
     * receive buffers, so it waits for a send credit like a send.
     *
     * @param local        a registered buffer of this side
     * @param localOffset  where in {@code local} the data starts, in bytes
     * @param remote       the peer's memory, as it sent it ({@link RegisteredBuffer#remote()}, an export or a grant)
     * @param remoteOffset where in {@code remote} the data starts, in bytes
     * @param length       bytes, 0..2^31-1; at most the device's {@code max_msg_sz}
     * @param immediate    the 32 bits the peer's message carries
     * @return completes when the peer's adapter acknowledged the write; fails with an {@link RdmaException} as
     *         {@link #write}'s does, or TIMEOUT when no credit came in time
     * @throws IndexOutOfBoundsException when a range is outside its buffer
     * @throws IllegalStateException     when {@code local} was given back to its pool
     */
    public CompletableFuture<Void> writeWithImmediate(
            RegisteredBuffer local,
            long localOffset,
            RemoteBuffer remote,
            long remoteOffset,
            int length,
            int immediate) {
        Op op = oneSided(Kind.WRITE_IMM, "RDMA write with immediate", local, localOffset, remote, remoteOffset, length);
        op.imm = immediate;
        op.inline = length <= inlineLimit;
        return submit(op);
    }

    /**
     * RDMA READ ({@code IBV_WR_RDMA_READ}) of {@code length} bytes from {@code remote[remoteOffset..]} into
     * {@code local[localOffset..]}; do not use {@code local}'s range until the future completes.
     *
     * @param local        a registered buffer of this side
     * @param localOffset  where in {@code local} the data lands, in bytes
     * @param remote       the peer's memory, as it sent it ({@link RegisteredBuffer#remote()}, an export or a grant)
     * @param remoteOffset where in {@code remote} the data starts, in bytes
     * @param length       bytes, 0..2^31-1; at most the device's {@code max_msg_sz}
     * @return completes when the data is in {@code local}; fails with an {@link RdmaException} as {@link #write}'s does
     * @throws IndexOutOfBoundsException when a range is outside its buffer
     * @throws IllegalStateException     when {@code local} was given back to its pool
     */
    public CompletableFuture<Void> read(
            RegisteredBuffer local, long localOffset, RemoteBuffer remote, long remoteOffset, int length) {
        Op op = oneSided(Kind.READ, "RDMA read", local, localOffset, remote, remoteOffset, length);
        return submit(op);
    }

    /**
     * Atomic compare-and-swap ({@code IBV_WR_ATOMIC_CMP_AND_SWP}) on the 8-byte word at {@code remote[offset]}: it
     * becomes {@code swap} when it holds {@code expect}. Needs REMOTE_ATOMIC rights on the peer's side.
     *
     * @param remote the peer's memory
     * @param offset where the word is in {@code remote}, in bytes; the word's address must be 8-byte aligned
     * @param expect the value to compare with
     * @param swap   the value to store when they are equal
     * @return completes with the value the word held before (equal to {@code expect} when the swap happened);
     *         fails with an {@link RdmaException} as {@link #write}'s does
     * @throws IndexOutOfBoundsException when the word is not inside {@code remote}
     * @throws IllegalArgumentException  when the word's address is not 8-byte aligned
     */
    public CompletableFuture<Long> compareAndSwap(RemoteBuffer remote, long offset, long expect, long swap) {
        Op op = atomic(Kind.CAS, "compare-and-swap", remote, offset);
        op.compare = expect;
        op.swap = swap;
        return submit(op);
    }

    /**
     * Atomic fetch-and-add ({@code IBV_WR_ATOMIC_FETCH_AND_ADD}) on the 8-byte word at {@code remote[offset]}.
     * Needs REMOTE_ATOMIC rights on the peer's side.
     *
     * @param remote the peer's memory
     * @param offset where the word is in {@code remote}, in bytes; the word's address must be 8-byte aligned
     * @param add    what to add (wrapping modulo 2^64)
     * @return completes with the value the word held before the addition; fails with an {@link RdmaException} as
     *         {@link #write}'s does
     * @throws IndexOutOfBoundsException when the word is not inside {@code remote}
     * @throws IllegalArgumentException  when the word's address is not 8-byte aligned
     */
    public CompletableFuture<Long> fetchAndAdd(RemoteBuffer remote, long offset, long add) {
        Op op = atomic(Kind.FAA, "fetch-and-add", remote, offset);
        op.compare = add;
        return submit(op);
    }

    /**
     * {@link #write} and wait for it.
     *
     * @param local        a registered buffer of this side
     * @param localOffset  where in {@code local} the data starts, in bytes
     * @param remote       the peer's memory, as it sent it ({@link RegisteredBuffer#remote()}, an export or a grant)
     * @param remoteOffset where in {@code remote} the data starts, in bytes
     * @param length       bytes, 0..2^31-1; at most the device's {@code max_msg_sz}
     * @throws IndexOutOfBoundsException when a range is outside its buffer
     * @throws IllegalStateException     when {@code local} was given back to its pool
     * @throws RdmaException             when the write fails or does not complete within the timeout
     */
    public void writeSync(
            RegisteredBuffer local, long localOffset, RemoteBuffer remote, long remoteOffset, int length) {
        await(write(local, localOffset, remote, remoteOffset, length));
    }

    /**
     * {@link #read} and wait for it.
     *
     * @param local        a registered buffer of this side
     * @param localOffset  where in {@code local} the data lands, in bytes
     * @param remote       the peer's memory, as it sent it ({@link RegisteredBuffer#remote()}, an export or a grant)
     * @param remoteOffset where in {@code remote} the data starts, in bytes
     * @param length       bytes, 0..2^31-1; at most the device's {@code max_msg_sz}
     * @throws IndexOutOfBoundsException when a range is outside its buffer
     * @throws IllegalStateException     when {@code local} was given back to its pool
     * @throws RdmaException             when the read fails or does not complete within the timeout
     */
    public void readSync(RegisteredBuffer local, long localOffset, RemoteBuffer remote, long remoteOffset, int length) {
        await(read(local, localOffset, remote, remoteOffset, length));
    }

    /**
     * {@link #compareAndSwap} and wait for it.
     *
     * @param remote the peer's memory
     * @param offset where the 8-byte aligned word is in {@code remote}, in bytes
     * @param expect the value to compare with
     * @param swap   the value to store when they are equal
     * @return the value the word held before
     * @throws IndexOutOfBoundsException when the word is not inside {@code remote}
     * @throws IllegalArgumentException  when the word's address is not 8-byte aligned
     * @throws RdmaException             when the operation fails or does not complete within the timeout
     */
    public long compareAndSwapSync(RemoteBuffer remote, long offset, long expect, long swap) {
        return await(compareAndSwap(remote, offset, expect, swap));
    }

    /**
     * {@link #fetchAndAdd} and wait for it.
     *
     * @param remote the peer's memory
     * @param offset where the 8-byte aligned word is in {@code remote}, in bytes
     * @param add    what to add
     * @return the value the word held before the addition
     * @throws IndexOutOfBoundsException when the word is not inside {@code remote}
     * @throws IllegalArgumentException  when the word's address is not 8-byte aligned
     * @throws RdmaException             when the operation fails or does not complete within the timeout
     */
    public long fetchAndAddSync(RemoteBuffer remote, long offset, long add) {
        return await(fetchAndAdd(remote, offset, add));
    }

    /** {@code name}: the operation's name in the messages of the range checks (a constant: nothing built per call). */
    private Op oneSided(
            Kind kind,
            String name,
            RegisteredBuffer local,
            long localOffset,
            RemoteBuffer remote,
            long remoteOffset,
            int length) {
        local.checkRange(localOffset, length, name);
        remote.check(remoteOffset, length, name);
        Op op = newOp(kind);
        op.remote = remote;
        op.remoteOffset = remoteOffset;
        op.laddr = local.address() + localOffset;
        op.llen = length;
        op.lkey = local.lkey();
        op.raddr = remote.address() + remoteOffset;
        op.rkey = remote.rkey();
        return op;
    }

    private Op atomic(Kind kind, String name, RemoteBuffer remote, long offset) {
        remote.check(offset, 8, name);
        if (((remote.address() + offset) & 7) != 0) {
            throw new IllegalArgumentException(
                    name + " at " + remote + "+" + offset + ": the remote word must be 8-byte aligned");
        }
        Op op = newOp(kind);
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

    // ---- memory windows -------------------------------------------------------------------------------------

    /**
     * Grants this peer, and only it, {@code rights} on {@code buf[offset, offset+length)}: a type 2 memory window
     * bound on this connection's QP, or on a device without one a region registered over exactly that range.
     * The rights must be among {@link EndpointConfig#remoteAccess()}. Revoke with {@link WindowGrant#close()};
     * afterwards the peer's access through it completes with REM_ACCESS_ERR.
     *
     * @param buf    a buffer of this endpoint's group ({@link #pool()})
     * @param offset where the range starts in {@code buf}, in bytes
     * @param length the range's length in bytes, at least 1
     * @param rights REMOTE_READ, REMOTE_WRITE and/or REMOTE_ATOMIC, among {@link EndpointConfig#remoteAccess()}
     * @return the grant: send its {@link WindowGrant#remote()} to the peer
     * @throws IndexOutOfBoundsException when the range is outside {@code buf}
     * @throws IllegalArgumentException  when the range is empty, or {@code rights} is empty or holds a right the
     *                                   configuration does not allow
     * @throws RdmaException             when the endpoint is not connected, or binding the window fails
     * @throws dev.jrdma.verbs.VerbsException when the window or region cannot be created
     */
    public WindowGrant grant(RegisteredBuffer buf, long offset, long length, Set<Access> rights) {
        buf.checkRange(offset, length, "grant");
        if (length == 0) throw new IllegalArgumentException("grant: the range is empty");
        Set<Access> checked = ExportedRange.checkRights(rights, cfg, "grant");
        synchronized (this) {
            if (state != State.CONNECTED) throw stateError("grant");
        }
        long address = buf.address() + offset;
        if (!group.exportsWithWindows()) {
            MemoryRegion mr = registerExactly(buf.region(), address, length, checked);
            return WindowGrant.region(mr, new RemoteBuffer(address, mr.rkey(), length));
        }
        MemoryWindow mw = group.pd().allocMemoryWindow(MwType.TYPE_2);
        try {
            int rkey = bindWindow(mw, buf.region(), address, length, checked, nextWindowKey(mw));
            return WindowGrant.window(this, mw, new RemoteBuffer(address, rkey, length));
        } catch (RuntimeException e) {
            mw.close();
            throw e;
        }
    }

    /** A type 2 window's next rkey: its index with a fresh random key byte. */
    private static int nextWindowKey(MemoryWindow mw) {
        int current = mw.rkey() & 0xFF, next;
        do {
            next = KEYS.nextInt(256);
        } while (next == current);
        return (mw.rkey() & 0xFFFFFF00) | next;
    }

    /** Binds a type 2 window on this QP with {@code rkey} and waits for the bind; returns the rkey. */
    private int bindWindow(
            MemoryWindow mw, MemoryRegion region, long address, long length, Set<Access> rights, int rkey) {
        Op op = newOp(Kind.BIND);
        op.mw = mw;
        op.bindRegion = region;
        op.bindAddr = address;
        op.bindLen = length;
        op.bindAccess = EnumSet.copyOf(rights);
        op.newRkey = rkey;
        return ((Number) await(submit(op))).intValue();
    }

    /** A region over exactly {@code [address, address + length)} of {@code region}'s memory, for one peer. */
    private MemoryRegion registerExactly(MemoryRegion region, long address, long length, Set<Access> rights) {
        EnumSet<Access> access = EnumSet.of(Access.LOCAL_WRITE);
        access.addAll(rights);
        return group.pd().registerMemory(region.segment().asSlice(address - region.address(), length), access);
    }

    void revoke(MemoryWindow mw, int rkey) {
        if (mw.type() == MwType.TYPE_2 && isConnected()) {
            Op op = newOp(Kind.INVALIDATE);
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

    // ---- posting --------------------------------------------------------------------------------------------

    /**
     * An operation of the application, with its future and deadline: a spare op when there is one, so that the
     * steady state allocates only the future the public method returns.
     */
    private Op newOp(Kind kind) {
        Op op = spareOp(
                kind,
                new CompletableFuture<>(),
                System.nanoTime() + cfg.timeout().toNanos());
        op.recorded = JfrEvents.sampleOperation();
        return op;
    }

    private Op spareOp(Kind kind, CompletableFuture<Object> future, long deadline) {
        Op op;
        synchronized (this) {
            op = spareOps.poll();
        }
        return (op != null ? op : new Op()).reset(kind, future, deadline);
    }

    /** An op of the endpoint's own (no future, no deadline). Caller holds the lock. */
    private Op spareOpLocked(Kind kind) {
        Op op = spareOps.poll();
        return (op != null ? op : new Op()).reset(kind, null, Long.MAX_VALUE);
    }

    /** An op is done with (its completion ran, or it had none): it serves a later operation. Caller holds the lock. */
    private void recycle(Op op) {
        op.future = null;
        op.listener = null;
        op.result = null;
        op.error = null;
        op.remote = null;
        op.mw = null;
        op.bindRegion = null;
        op.bindAccess = null;
        if (spareOps.size() < sqDepth) spareOps.push(op);
    }

    /** Commits a sampled operation's flight-recorder event (once). */
    private void recordEnd(Op op, RdmaException failure) {
        JfrEvents.OperationEvent e = op.recorded;
        if (e == null) return;
        op.recorded = null;
        JfrEvents.endOperation(e, op.kind.name(), op.kind == Kind.BIND ? op.bindLen : op.llen, qp.qpNum(), failure);
    }

    /** Posts or queues {@code op}; returns its future (read first: once submitted, the op may complete and be reused). */
    @SuppressWarnings("unchecked")
    private <T> CompletableFuture<T> submit(Op op) {
        CompletableFuture<T> future = (CompletableFuture<T>) (CompletableFuture<?>) op.future;
        synchronized (this) {
            // set-up binds the export's window before the connection is up
            boolean setUp = state == State.CONNECTING && (op.kind == Kind.BIND || op.kind == Kind.INVALIDATE);
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
        }
        runAfterUnlock();
        return future;
    }

    private boolean canPost(Op op) {
        return postedWrs < sqDepth && (!op.needsCredit() || credits.canSend());
    }

    /** Posts op (caller holds the lock and checked canPost). */
    private void doPost(Op op) {
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
        if (op.kind == Kind.SEND || op.kind == Kind.CREDIT) credits.gaveBack(piggy);
        if (op.needsCredit()) credits.used();
        if (op.inline && op.tmp != null && op.kind == Kind.SEND) {
            // the payload was copied into the work request: the buffer is free again
            op.tmp.close();
            op.tmp = null;
        }
    }

    private void setSge(Op op) {
        if (op.llen == 0) {
            swr.noBuffer();
        } else {
            swr.numSge(1).sge(0).set(op.laddr, op.llen, op.lkey);
        }
    }

    private void pump() {
        while (!pending.isEmpty() && (state == State.CONNECTED || state == State.CLOSING) && canPost(pending.peek()))
            doPost(pending.poll());
    }

    /** Returns credits on a message of its own when none can ride on a send soon. Caller holds the lock. */
    private void maybeReturnCredits() {
        if ((state != State.CONNECTED && state != State.CLOSING) || postedWrs >= sqDepth) return;
        boolean sendSoon = !pending.isEmpty() && pending.peek().kind == Kind.SEND && credits.canSend();
        if (credits.needsUpdate(sendSoon)) doPost(spareOpLocked(Kind.CREDIT));
    }

    private void postRecv(int slot) {
        rwr.next(null).wrId(RECV_TAG | slot);
        rwr.numSge(1)
                .sge(0)
                .set(recvBufs.address() + (long) slot * cfg.messageSize(), cfg.messageSize(), recvBufs.lkey());
        qp.postRecv(rwr);
    }

    // ---- completions ----------------------------------------------------------------------------------------

    void onCompletion(WorkCompletion wc) {
        synchronized (this) {
            if ((wc.wrId & RECV_TAG) != 0) onRecv(wc);
            else onSendCompletion(wc);
            if (state == State.CONNECTED || state == State.CLOSING) {
                pump();
                maybeReturnCredits();
            }
            notifyAll();
        }
        runAfterUnlock();
    }

    private void onRecv(WorkCompletion wc) {
        int slot = (int) (wc.wrId & ~RECV_TAG);
        if (!wc.isSuccess()) {
            if (wc.status != WcStatus.WR_FLUSH_ERR || state == State.CONNECTED) {
                breakWith(new RdmaException(
                        RdmaException.Kind.COMPLETION_ERROR, "receive failed: " + wc.explain(), wc.status, null));
            }
            return;
        }
        if (wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
            if (!takePeerCredit()) return;
            if (lentHandler != null) {
                lend(slot, 0, true, wc.immData);
                return;
            }
            repost(slot);
            deliver(new Message(new byte[0], true, wc.immData));
            return;
        }
        int type = wc.hasImm() ? wc.immData >>> 24 : TYPE_DATA;
        int returned = wc.hasImm() ? wc.immData & CreditWindow.MAX_RETURN : 0;
        credits.returned(returned);
        if (type == TYPE_CREDIT) {
            repost(slot);
            return;
        }
        if (!takePeerCredit()) return;
        if (lentHandler != null) {
            lend(slot, wc.byteLen, false, 0);
            return;
        }
        byte[] data = new byte[wc.byteLen];
        MemorySegment.copy(
                recvBufs.segment(), ValueLayout.JAVA_BYTE, (long) slot * cfg.messageSize(), data, 0, wc.byteLen);
        repost(slot);
        deliver(new Message(data, false, 0));
    }

    /**
     * A data message used one of the credits the peer was given. A peer that sends without one ignores flow
     * control: it breaks its own endpoint, so what we hold for it never exceeds the credits granted (the inbox
     * holds at most recvQueueDepth messages). Caller holds the lock.
     */
    private boolean takePeerCredit() {
        if (credits.arrived()) return true;
        breakWith(new RdmaException(
                RdmaException.Kind.PROTOCOL_ERROR,
                "the peer at " + remoteAddress()
                        + " sent a message without a credit (it had used all " + cfg.recvQueueDepth()
                        + " it was given): it ignores flow control;"
                        + " the connection is ended so that it cannot make this side hold more"));
        return false;
    }

    /** Messages received and not yet taken by the application (tests: never more than the credits granted). */
    synchronized int inboxSize() {
        return inbox.size();
    }

    private void repost(int slot) {
        if (state == State.CLOSED || qp.isClosed()) return;
        try {
            postRecv(slot);
        } catch (VerbsException e) {
            if (state == State.CONNECTED) {
                breakWith(new RdmaException(
                        RdmaException.Kind.POST_ERROR,
                        "reposting a receive buffer failed: " + e.getMessage(),
                        null,
                        e));
            }
        }
    }

    private void deliver(Message m) {
        Consumer<Message> h = handler;
        if (h != null) {
            credits.consumed();
            afterUnlock.add(() -> runHandler(h, m));
            return;
        }
        CompletableFuture<Message> w;
        while ((w = waiters.poll()) != null) {
            if (!w.isDone()) {
                credits.consumed();
                CompletableFuture<Message> target = w;
                afterUnlock.add(() -> target.complete(m));
                return;
            }
        }
        inbox.add(m);
    }

    /** Runs the application's receive handler: a RuntimeException is logged, an Error ends this endpoint (logged too). */
    private void runHandler(Consumer<Message> h, Message m) {
        try {
            h.accept(m);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": the receive handler threw " + e, e);
        } catch (Error e) {
            failOnCompletionThread("the receive handler threw " + e, e);
        }
    }

    /**
     * Something was thrown on the completion thread while it served this endpoint (an Error from the application,
     * or a bug): logged, and this endpoint ends (its operations and receives fail with HANDLER_ERROR, its QP goes to
     * ERR); the group's other endpoints are served on.
     */
    void failOnCompletionThread(String what, Throwable t) {
        LOG.log(System.Logger.Level.ERROR, this + ": " + what + "; the endpoint is ended", t);
        synchronized (this) {
            breakWith(new RdmaException(RdmaException.Kind.HANDLER_ERROR, what + "; the endpoint was ended", null, t));
            notifyAll();
        }
        runAfterUnlock();
    }

    private void onSendCompletion(WorkCompletion wc) {
        if (--postedWrs == 0) releaseHeld();
        Op op = inFlight.remove(wc.wrId);
        if (op == null) return; // already failed (flushed after an error, or timed out)
        if (state == State.PEER_CLOSED && inFlight.isEmpty()) {
            goodbye.endDrain();
            goodbye.acknowledge();
        }
        if (!wc.isSuccess()) {
            RdmaException e = new RdmaException(
                    RdmaException.Kind.COMPLETION_ERROR, op.what() + " failed: " + wc.explain(), wc.status, null);
            if ((wc.status == WcStatus.WR_FLUSH_ERR && failure != null) || state == State.PEER_CLOSED) {
                failOp(op, derived(op, failure));
            } else {
                failOp(op, e);
                breakWith(e);
            }
            return;
        }
        recordEnd(op, null);
        Object result = null;
        switch (op.kind) {
            case CAS, FAA -> result = op.tmp.segment().get(ValueLayout.JAVA_LONG, 0);
            case BIND -> result = op.newRkey;
            default -> {}
        }
        if (op.tmp != null) {
            op.tmp.close();
            op.tmp = null;
        }
        if (op.awaited()) {
            op.result = result;
            afterUnlock.add(op);
        } else {
            recycle(op);
        }
    }

    /** Called by the group thread every few milliseconds. */
    void checkTimeouts(long now) {
        synchronized (this) {
            if (inFlight.isEmpty() && pending.isEmpty()) return;
            if (state == State.PEER_CLOSED && goodbye.drainExpired(now)) {
                goodbye.endDrain();
                failAll(failure);
                toError();
                goodbye.acknowledge();
                notifyAll();
            }
            for (Iterator<Op> it = pending.iterator(); it.hasNext(); ) {
                Op op = it.next();
                if (now - op.deadline > 0) {
                    it.remove();
                    String why = op.needsCredit() && !credits.canSend()
                            ? "the peer has not freed a receive buffer for "
                                    + cfg.timeout().toMillis() + " ms (it is not consuming messages: flow control)"
                            : "it could not be posted within " + cfg.timeout().toMillis() + " ms (send queue full)";
                    failOp(op, new RdmaException(RdmaException.Kind.TIMEOUT, op.what() + " timed out: " + why));
                }
            }
            Op expired = null;
            for (int slot = 0; slot < inFlight.capacity() && expired == null; slot++) {
                Op op = inFlight.at(slot);
                if (op != null && op.deadline != Long.MAX_VALUE && now - op.deadline > 0) expired = op;
            }
            if (expired != null) {
                inFlight.remove(expired.wrId);
                RdmaException e = new RdmaException(
                        RdmaException.Kind.TIMEOUT,
                        expired.what() + " timed out: no completion within "
                                + cfg.timeout().toMillis()
                                + " ms; the peer is unreachable or not responding (process gone, host down, or path broken)");
                failOp(expired, e);
                breakWith(e);
            }
            notifyAll();
        }
        runAfterUnlock();
    }

    private void onPeerClosed(boolean graceful) {
        synchronized (this) {
            if (state != State.CONNECTED && state != State.CLOSING) return;
            RdmaException e = peerEnded != null ? peerEnded : peerClosedError(graceful);
            failure = e;
            state = State.PEER_CLOSED;
            if (!graceful) JfrEvents.error(this, e);
            // nothing more will be posted; what is in flight may still complete (its ACK can trail the goodbye)
            for (Op op : pending) failOp(op, derived(op, e));
            pending.clear();
            CompletableFuture<Message> w;
            while ((w = waiters.poll()) != null) {
                CompletableFuture<Message> target = w;
                RdmaException we = derived(null, e);
                afterUnlock.add(() -> target.completeExceptionally(we));
            }
            endLent(e);
            if (inFlight.isEmpty()) {
                toError();
                goodbye.acknowledge();
            } else {
                goodbye.startDrain(System.nanoTime());
            }
            notifyAll();
        }
        runAfterUnlock();
    }

    private void toError() {
        try {
            qp.modify(new QpAttr().state(QpState.ERR));
        } catch (RuntimeException ignored) {
            // already in error or closed
        }
    }

    /** The connection can no longer be used: fail everything with {@code cause}. Caller holds the lock. */
    private void breakWith(RdmaException cause) {
        if (state != State.CONNECTED && state != State.CLOSING) return;
        failure = cause;
        state = State.BROKEN;
        JfrEvents.error(this, cause);
        failAll(cause);
        try {
            qp.modify(new QpAttr().state(QpState.ERR));
        } catch (RuntimeException ignored) {
            // already in error or closed
        }
    }

    private void failAll(RdmaException cause) {
        inFlight.drain(op -> failOp(op, derived(op, cause)));
        for (Op op : pending) failOp(op, derived(op, cause));
        pending.clear();
        CompletableFuture<Message> w;
        while ((w = waiters.poll()) != null) {
            CompletableFuture<Message> target = w;
            RdmaException e = derived(null, cause);
            afterUnlock.add(() -> target.completeExceptionally(e));
        }
        endLent(cause);
    }

    /** Tells the lent handler, once, that no message comes any more. Caller holds the lock. */
    private void endLent(RdmaException cause) {
        if (lentHandler == null || lentEnd != null) return;
        lentEnd = derived(null, cause);
        queueLentDrain();
    }

    /** Has the lent messages and the end handed to the handler after the lock. Caller holds the lock. */
    private void queueLentDrain() {
        if (lentDrainQueued) return;
        lentDrainQueued = true;
        afterUnlock.add(drainLentTask);
    }

    /**
     * Hands the lent messages, then the end, to the handler in order; one thread at a time (another that finds it
     * busy leaves what it would take to it).
     */
    private void drainLent() {
        synchronized (this) {
            lentDrainQueued = false;
            if (lentDraining) return;
            lentDraining = true;
        }
        while (true) {
            LentMessage m;
            RdmaException end = null;
            synchronized (this) {
                m = lentReady.poll();
                if (m == null) {
                    if (lentEnd != null && !lentEndTold) {
                        lentEndTold = true;
                        end = lentEnd;
                    } else {
                        lentDraining = false;
                        return;
                    }
                }
            }
            if (m != null) {
                runLentHandler(lentHandler, m);
            } else {
                try {
                    lentHandler.onEnd(end);
                } catch (RuntimeException thrown) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            this + ": the lent receive handler's onEnd threw " + thrown,
                            thrown);
                }
            }
        }
    }

    private static RdmaException derived(Op op, RdmaException cause) {
        String what = op == null ? "receive" : op.what();
        if (cause.getMessage() != null && cause.getMessage().startsWith(what)) return cause;
        return new RdmaException(cause.kind(), what + " failed: " + cause.getMessage(), cause.status(), cause);
    }

    private void failOp(Op op, RdmaException e) {
        recordEnd(op, e);
        if (op.tmp != null) {
            RegisteredBuffer t = op.tmp;
            op.tmp = null;
            // a WR given up (timed out, failed with the endpoint) may still be at the device: its buffer waits
            if (op.posted && postedWrs > 0) heldUntilRetired.add(t);
            else t.close();
        }
        if (op.awaited()) {
            op.error = e;
            afterUnlock.add(op);
        } else {
            recycle(op);
        }
    }

    /** No WR is at the device any more (or the QP is gone): the given-up operations' buffers go back. Caller holds the lock. */
    private void releaseHeld() {
        for (int i = 0; i < heldUntilRetired.size(); i++)
            heldUntilRetired.get(i).close();
        heldUntilRetired.clear();
    }

    /** Buffers of given-up operations still kept from the pool (tests). */
    synchronized int heldBuffers() {
        return heldUntilRetired.size();
    }

    private RdmaException stateError(String what) {
        if (failure != null)
            return new RdmaException(
                    failure.kind(), what + " failed: " + failure.getMessage(), failure.status(), failure);
        return new RdmaException(
                RdmaException.Kind.CLOSED,
                what + " failed: the endpoint is " + (state == State.CLOSED ? "closed" : "closing"));
    }

    /**
     * Runs what completions left for after the lock (futures to complete, handlers to call), then keeps their ops
     * for reuse. The batch list is the thread's own, reused; a call from inside one of those tasks (a future's
     * callback that sends again) takes a list of its own.
     */
    private void runAfterUnlock() {
        AfterUnlockBatches batches = AFTER_UNLOCK_BATCHES.get();
        ArrayList<Runnable> todo = batches.enter();
        synchronized (this) {
            for (int i = 0; i < afterUnlock.size(); i++) todo.add(afterUnlock.get(i)); // addAll would copy to an array
            afterUnlock.clear();
        }
        if (todo.isEmpty()) {
            batches.depth--;
            return;
        }
        boolean ops = false;
        try {
            for (int i = 0; i < todo.size(); i++) {
                Runnable r = todo.get(i);
                r.run();
                ops |= r instanceof Op;
            }
        } finally {
            if (ops) {
                synchronized (this) {
                    for (int i = 0; i < todo.size(); i++) if (todo.get(i) instanceof Op op) recycle(op);
                }
            }
            todo.clear();
            batches.depth--;
        }
    }

    /**
     * Waits for an operation's future within the timeout (and a margin) and unwraps its failure. Not on the
     * completion thread, which completes the future.
     *
     * @param <T> the future's result type
     * @param f   a future of this endpoint's operations
     * @return its result
     * @throws RdmaException the operation's failure (a fresh one with the caller's stack, the original as cause);
     *                       TIMEOUT when nothing completed it in time; CLOSED when the thread was interrupted
     */
    public <T> T await(CompletableFuture<T> f) {
        try {
            // the completion thread fails the operation at its deadline; the margin only guards against a dead group
            return waitFor(group, f, TimeUnit.MILLISECONDS.toNanos(cfg.timeout().toMillis() + 2000));
        } catch (TimeoutException e) {
            throw new RdmaException(
                    RdmaException.Kind.TIMEOUT,
                    "no result within " + cfg.timeout().toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException(RdmaException.Kind.CLOSED, "interrupted");
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    /**
     * Waits for a future without running other tasks meanwhile: {@code CompletableFuture.get} on a ForkJoinPool
     * worker may run other queued tasks inside the wait (a lock holder could end up stuck under a lock waiter). It drives
     * the group on this thread first, for the group's busy-poll budget ({@link EndpointGroup#helpUntil}): a reply is
     * then dispatched here, not handed over from the group's thread.
     */
    private static <T> T waitFor(EndpointGroup group, CompletableFuture<T> f, long nanos)
            throws InterruptedException, ExecutionException, TimeoutException {
        // first the caller drives the group itself for a while: the answer is polled and delivered on this thread
        if (!f.isDone()) group.helpUntil(f::isDone, System.nanoTime() + nanos);
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

    private static RuntimeException unwrap(Throwable t) {
        if (t instanceof RdmaException r) {
            // a fresh exception so the stack trace shows the caller, with the original as cause
            return new RdmaException(r.kind(), r.getMessage(), r.status(), r);
        }
        if (t instanceof RuntimeException r) return r;
        return new RdmaException(RdmaException.Kind.COMPLETION_ERROR, String.valueOf(t), null, t);
    }

    // ---- close ----------------------------------------------------------------------------------------------

    /**
     * Graceful close: new operations are refused, outstanding ones get up to the timeout to complete, the peer is
     * told (its outstanding operations fail with PEER_CLOSED), then the QP and buffers are released. Idempotent.
     */
    @Override
    public void close() {
        Control control;
        synchronized (this) {
            if (state == State.CLOSED) return;
            if (state == State.CONNECTED) state = State.CLOSING;
            // the completion thread cannot wait for completions it would itself deliver
            boolean mayWait = !group.isCompletionThread();
            if (mayWait) {
                Goodbye.await(
                        this,
                        System.nanoTime() + cfg.timeout().toNanos(),
                        () -> !(state == State.CLOSING || state == State.PEER_CLOSED)
                                || (inFlight.isEmpty() && pending.isEmpty()));
            }
            control = goodbye.control();
            if (control != null) {
                goodbye.sayBye();
                if (state == State.PEER_CLOSED) goodbye.acknowledge();
                if (mayWait && state != State.BROKEN) {
                    Goodbye.await(this, goodbye.lingerDeadline(System.nanoTime()), goodbye::isPeerAcknowledged);
                }
            }
            State before = state;
            state = State.CLOSED;
            RdmaException closed = new RdmaException(RdmaException.Kind.CLOSED, "the endpoint was closed");
            if (failure == null) failure = closed;
            failAll(before == State.CLOSING ? closed : failure);
        }
        runAfterUnlock();
        if (control != null) control.close();
        if (socket != null) Handshake.closeQuietly(socket);
        releaseResources();
        if (ownsGroup) group.close();
    }

    void releaseResources() {
        group.unregister(this, cqEntries);
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
        boolean closeNow;
        synchronized (this) {
            releaseHeld();
            closeNow = lentOut == 0;
            recvBufsCloseDeferred = !closeNow; // lent messages still read their buffers: the last release closes them
        }
        if (closeNow) recvBufs.close();
    }

    @Override
    public String toString() {
        return "Endpoint[QP 0x" + Integer.toHexString(qp.qpNum()) + " <-> " + remoteAddress() + ", " + state + "]";
    }
}
