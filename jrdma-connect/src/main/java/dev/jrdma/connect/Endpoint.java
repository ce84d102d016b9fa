package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.WcStatus;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
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
 *
 * <p>Threads: the endpoint's data path belongs to its group's owner thread ({@link EndpointGroup}), which completes
 * futures, tells listeners and runs handlers; no lock is taken on it. Any thread may call any method: on the owner a
 * call acts at once, from another thread it is handed to the owner as a command, in the order that thread made its
 * calls (a {@link #close} comes after the sends made before it).
 */
public final class Endpoint extends EndpointSetup implements AutoCloseable {
    private Endpoint(EndpointGroup group, boolean ownsGroup, Socket socket) {
        super(group, ownsGroup, socket);
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

    /** An endpoint for the TCP exchange of {@link TcpConnector} on {@code socket} (its control channel after). */
    static Endpoint createForTcp(EndpointGroup group, boolean ownsGroup, Socket socket) {
        return new Endpoint(group, ownsGroup, socket);
    }

    // ---- hooks for the rdma_cm connector -------------------------------------------------------------------

    static Endpoint createForCm(EndpointGroup group, boolean ownsGroup) {
        return new Endpoint(group, ownsGroup, null);
    }

    // ---- accessors ------------------------------------------------------------------------------------------

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
    @Override
    public boolean isConnected() {
        return state == State.CONNECTED;
    }

    /**
     * {@return how many of this endpoint's lent messages were reported as held past the group's
     * {@link EndpointGroup#lentHoldLimit()}, or still held a second after the close (each logged once)}
     */
    public long lentLeaks() {
        return lentLeaks.get();
    }

    /**
     * {@return the send credits left: receive buffers the peer has free for this side's messages (exact on the group's
     * owner thread, a recent value on another)}
     */
    public int sendCredits() {
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
        Operation op = spareOp(
                OperationKind.SEND,
                null,
                group.clock().nanoTime() + cfg.timeout().toNanos());
        op.recorded = JfrEvents.sampleOperation();
        op.listener = listener;
        op.laddr = buf.address() + offset;
        op.llen = length;
        op.lkey = buf.lkey();
        op.inline = length <= inlineLimit;
        // on the owner this is the state the post acts on; on another thread a send that the state refuses by the
        // time its command runs is failed to the listener
        if (state != State.CONNECTED || peerEnded != null) {
            op.recorded = null;
            recycle(op);
            return false;
        }
        if (onOwner()) {
            submitQueued(op);
            return true;
        }
        if (dataToOwner(op.submitOnOwner)) return true;
        op.recorded = null;
        recycle(op); // the group closed, or its owner stalled: refused at once
        return false;
    }

    /**
     * {@return why this endpoint refuses operations now (its failure, the peer's goodbye, or its close), or null while
     * it takes them}
     */
    public RdmaException refusal() {
        RdmaException ended = peerEnded;
        if (state == State.CONNECTED) return ended;
        RdmaException f = failure;
        return f != null ? f : stateError("send");
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

    /**
     * Delivers every message (queued ones first) to {@code handler} on the completion thread. The handler must
     * not block. Null goes back to queueing.
     *
     * @param h the handler, or null; a RuntimeException it throws is logged, an {@link Error} ends the endpoint
     *          ({@link RdmaException.Kind#HANDLER_ERROR})
     */
    public void onReceive(Consumer<Message> h) {
        onOwnerAndWait(() -> {
            if (lentHandler != null)
                throw new IllegalStateException("the messages go to the lent receive handler (onReceiveLent)");
            handler = h;
            List<Message> drained = new ArrayList<>();
            if (h != null) {
                while (!inbox.isEmpty()) {
                    drained.add(inbox.poll());
                    credits.consumed();
                }
                maybeReturnCredits();
            }
            for (Message m : drained) runHandler(h, m);
            runAfterUnlock();
            return null;
        });
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
        if (onOwner()) {
            receiveOnOwner(f);
        } else if (!dataToOwner(() -> receiveOnOwner(f))) {
            f.completeExceptionally(stateError("receive"));
        }
        return f;
    }

    private void receiveOnOwner(CompletableFuture<Message> f) {
        if (lentHandler != null) {
            f.completeExceptionally(
                    new IllegalStateException("the messages go to the lent receive handler (onReceiveLent)"));
        } else if (!inbox.isEmpty()) {
            Message m = inbox.poll();
            credits.consumed();
            maybeReturnCredits();
            afterUnlock.add(() -> f.complete(m));
        } else if (state != State.CONNECTED && state != State.CLOSING) {
            f.completeExceptionally(stateError("receive"));
        } else {
            waiters.add(f);
        }
        runAfterUnlock();
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
            if (onOwnerAndWait(() -> waiters.remove(f))) {
                throw new RdmaException(RdmaException.Kind.TIMEOUT, "no message within " + timeout.toMillis() + " ms");
            }
            return f.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (!toOwner(() -> waiters.remove(f))) LOG.log(System.Logger.Level.DEBUG, "a waiter stays: group closed");
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
        onOwnerAndWait(() -> {
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
                LentMessage copy = new LentMessage(self(), -1, MemorySegment.ofArray(m.bytes()));
                lentOut++;
                boolean imm = m.isWriteWithImmediate();
                lentReady.add(copy.lend(m.length(), imm, imm ? m.immediate() : 0));
                queueLentDrain();
            }
            if (state != State.CONNECTING && state != State.CONNECTED && state != State.CLOSING)
                endLent(failure != null ? failure : stateError("receive"));
            runAfterUnlock();
            return null;
        });
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
        Operation op = oneSided(OperationKind.WRITE, "RDMA write", local, localOffset, remote, remoteOffset, length);
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
        Operation op = oneSided(
                OperationKind.WRITE_IMM, "RDMA write with immediate", local, localOffset, remote, remoteOffset, length);
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
        Operation op = oneSided(OperationKind.READ, "RDMA read", local, localOffset, remote, remoteOffset, length);
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
        Operation op = atomic(OperationKind.CAS, "compare-and-swap", remote, offset);
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
        Operation op = atomic(OperationKind.FAA, "fetch-and-add", remote, offset);
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
        if (state != State.CONNECTED) throw stateError("grant");
        long address = buf.address() + offset;
        if (!group.exportsWithWindows()) {
            MemoryRegion mr = registerExactly(buf.region(), address, length, checked);
            return WindowGrant.region(mr, new RemoteBuffer(address, mr.rkey(), length));
        }
        MemoryWindow mw = group.pd().allocMemoryWindow(MwType.TYPE_2);
        try {
            int rkey = bindWindow(mw, buf.region(), address, length, checked, nextWindowKey(mw));
            return WindowGrant.window(self(), mw, new RemoteBuffer(address, rkey, length));
        } catch (RuntimeException e) {
            mw.close();
            throw e;
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

    // ---- close ----------------------------------------------------------------------------------------------

    /**
     * Graceful close: new operations are refused, outstanding ones get up to the timeout to complete, the peer is
     * told (its outstanding operations fail with PEER_CLOSED), then the QP and buffers are released. Idempotent.
     *
     * <p>The close is a command the group's owner runs after the operations queued before it (a send made just
     * before the close is sent before the goodbye). On another thread this waits until the close is done; on the
     * owner thread (a handler, a listener, a Netty event loop) it starts the close and returns: the owner finishes it
     * as the last completions and the peer's acknowledgement come.
     */
    @Override
    public void close() {
        if (closed.isDone()) return;
        if (onOwner()) {
            beginClose();
            return;
        }
        closeAwaited = true;
        if (startClose()) awaitClosed();
        if (ownsGroup) group.close(); // ends the endpoint too when its owner did not
    }

    @Override
    public String toString() {
        return "Endpoint[QP 0x" + Integer.toHexString(qp.qpNum()) + " <-> " + remoteAddress() + ", " + state + "]";
    }
}
