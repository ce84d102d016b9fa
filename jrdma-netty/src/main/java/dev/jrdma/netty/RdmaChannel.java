package dev.jrdma.netty;

import dev.jrdma.connect.ConnectionManager;
import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.EndpointGroup;
import dev.jrdma.connect.RdmaConnectException;
import dev.jrdma.connect.RdmaException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.FileRegion;
import io.netty.channel.IoEvent;
import io.netty.channel.IoRegistration;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A Netty channel over a jrdma connection: the RDMA counterpart of {@code NioSocketChannel} /
 * {@code EpollSocketChannel}. Swap the channel class and keep the pipeline:
 * <pre>{@code
 * new Bootstrap().group(group).channel(RdmaChannel.class).handler(...).connect("127.0.0.1", port);
 * }</pre>
 *
 * <p><b>Set-up</b> is jrdma-connect's: the TCP exchange, or rdma_cm when the {@link RdmaChannelOption#ENDPOINT_CONFIG}
 * selects it (or the device is native and the connection manager is AUTO). It blocks, so it runs on a thread of
 * its own; {@code CONNECT_TIMEOUT_MILLIS} fails the promise with a {@link ConnectTimeoutException}, and cancelling
 * the promise closes the channel.
 *
 * <p><b>Writes</b> are cut into messages of at most the peer's message size. A buffer from the channel's own
 * allocator ({@code ctx.alloc()}, {@code channel.alloc()}: direct buffers over the connection's registered memory)
 * is sent from where it lies, without a copy, and held until its send completes; any other buffer (heap, composite,
 * another allocator's) is copied once into this channel's registered send ring and sent from there, several small
 * ones gathered into one message. At most as many sends are in flight as the ring has slots, and only while the
 * peer has credits (free receive buffers): the rest waits in the outbound buffer, so Netty's write water marks turn
 * the channel unwritable when the peer or the link falls behind. A {@link FileRegion} is read into the send ring.
 * A send refused because the peer closed fails the write with an {@link IOException}, as a socket's does.
 *
 * <p><b>Reads</b> are a socket channel's: pieces of received messages of at most the RecvByteBufAllocator's guess,
 * while the pipeline wants to read (auto-read or {@code read()}) and the allocator's handle says to go on: a
 * message not taken holds the peer's credit, so a reader that stops reading stops its writer.
 *
 * <p><b>Half-close</b>: {@code shutdownOutput()} sends an empty message (Netty never sends one as data); the
 * peer's input ends there, or at its close ({@code ChannelInputShutdownEvent} with {@code ALLOW_HALF_CLOSURE},
 * else the channel closes).
 * <b>Close</b> is the endpoint's graceful close, on a closer thread (it waits for sends in flight and the peer's
 * goodbye). <b>Errors</b> reach {@code exceptionCaught} as {@link RdmaChannelException} with the completion status.
 */
public class RdmaChannel extends AbstractChannel implements SocketChannel {
    /** At most 16 reads before channelReadComplete, unless the RecvByteBufAllocator says otherwise. */
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private static final byte[] END_OF_OUTPUT = new byte[0];
    /**
     * The least a registered buffer must hold to be sent from where it lies: a smaller one is cheaper to copy into a
     * gathered message than to send alone (each message takes a work request and one of the peer's credits).
     */
    static final int IN_PLACE_MIN = 1024;
    /**
     * The blocking part of a close (the endpoint waits for in-flight work and the peer's goodbye) runs here. Platform
     * threads: rdma_cm and verbs calls block in native code, which would pin a virtual thread's carrier.
     */
    static final Executor CLOSER =
            r -> Thread.ofPlatform().daemon().name("jrdma-netty-close").start(r);

    private final RdmaChannelConfig config;
    private final ChannelSends sends = new ChannelSends(this);
    private final ChannelReads reads = new ChannelReads(this);
    private volatile Endpoint endpoint;
    private volatile boolean open = true;
    volatile boolean inputShutdown;
    private volatile boolean outputShutdown;
    private volatile InetSocketAddress local, remote;

    private final LoopRegistration registration = new LoopRegistration();

    // reading (event loop), with the flag the completion thread sets
    boolean readPending;

    private boolean failed;

    // connecting (event loop)
    private ChannelPromise connectPromise;
    private Future<?> connectTimeout;

    /** A client channel (what {@code Bootstrap.channel(RdmaChannel.class)} creates). */
    public RdmaChannel() {
        super(null);
        this.config = newConfig();
    }

    /** A connection accepted by {@code parent}. */
    RdmaChannel(RdmaServerChannel parent, Endpoint ep) {
        super(parent);
        this.config = newConfig();
        config.setEndpointConfig(parent.config().getEndpointConfig());
        attach(ep);
    }

    /** Netty's settings, with an allocator whose direct buffers are this connection's registered memory. */
    private RdmaChannelConfig newConfig() {
        RdmaChannelConfig c = new RdmaChannelConfig(this);
        c.setAllocator(new RegisteredByteBufAllocator());
        return c;
    }

    private void attach(Endpoint ep) {
        EndpointConfig cfg = config.getEndpointConfig();
        sends.attach(ep, cfg);
        if (config.getAllocator() instanceof RegisteredByteBufAllocator a) a.attach(ep.pool());
        if (ep.remoteAddress() instanceof InetSocketAddress r) this.remote = r;
        // the address and port of the connection's set-up (its TCP exchange or rdma_cm id), as a socket's
        if (ep.localAddress() instanceof InetSocketAddress l) {
            local = l;
        } else if (local == null) {
            InetAddress a = cfg.localAddress();
            local = new InetSocketAddress(a != null ? a : InetAddress.getLoopbackAddress(), 0);
        }
        this.endpoint = ep;
        // Netty's leak detection cannot see received buffers (reused, never collected): the endpoint's leak watch
        // reports them, with where they were lent and last touched at Netty's ADVANCED and PARANOID levels
        if (ResourceLeakDetector.getLevel().ordinal() >= ResourceLeakDetector.Level.ADVANCED.ordinal())
            ep.group().recordLentSites(true);
        reads.attach(ep, cfg);
    }

    /** {@return the jrdma endpoint under this channel, or null before it is connected} */
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    public RdmaServerChannel parent() {
        return (RdmaServerChannel) super.parent();
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public RdmaChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && endpoint != null;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) super.remoteAddress();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return LoopRegistration.isCompatible(loop, RdmaUnsafe.class);
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new RdmaUnsafe();
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        registration.register(eventLoop(), (RdmaUnsafe) unsafe(), promise);
        reads.registered();
        if (endpoint != null) reads.schedule(); // an accepted connection: watch for the end of its input from the start
    }

    @Override
    protected void doDeregister() {
        registration.cancel();
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        // a client's local address is given with connect (it picks the device); accepted channels have their server's
        if (localAddress instanceof InetSocketAddress a) local = a;
    }

    @Override
    protected void doDisconnect() throws Exception {
        doClose();
    }

    @Override
    protected void doClose() {
        open = false;
        ChannelPromise p = connectPromise;
        if (p != null) p.tryFailure(new ClosedChannelException());
        Endpoint ep = endpoint;
        try {
            // messages the pipeline never read go back first: only those its handlers hold are left lent at the close
            // (and reported as leaks when still held a grace after it)
            if (ep != null) reads.releaseUnreadAndWait();
            if (ep != null) ep.close();
        } finally {
            if (ep != null) reads.releaseUnread();
            sends.close();
            if (config.getAllocator() instanceof RegisteredByteBufAllocator a) a.stopRecycling();
            RdmaServerChannel parent = parent();
            if (parent != null && ep != null) parent.childClosed();
        }
    }

    // ---- reading (ChannelReads) -----------------------------------------------------------------------------

    /** A read asked for before the channel is connected stays pending: it is done once it is. */
    @Override
    protected void doBeginRead() {
        if (inputShutdown) return;
        readPending = true;
        if (endpoint != null) reads.schedule();
    }

    /** Auto-read was turned off: a read it had asked for is no longer wanted (as NIO's {@code clearReadPending}). */
    void clearReadPending() {
        if (!isRegistered()) {
            readPending = false;
            return;
        }
        EventLoop loop = eventLoop();
        if (loop.inEventLoop()) readPending = false;
        else loop.execute(() -> readPending = false);
    }

    /**
     * Runs a completion's read or write handling on the spot when the completion is dispatched by this channel's own
     * event loop while it drives its groups ({@link RdmaIoHandler#runInline}): no task, no second pass of the loop.
     */
    boolean runInline(Runnable work) {
        if (!isRegistered()) return false;
        RdmaIoHandler h = RdmaIoHandler.current();
        return h != null && eventLoop().inEventLoop() && h.runInline(work);
    }

    void receiveFailed(Throwable cause) {
        if (cause instanceof RdmaException e) {
            switch (e.kind()) {
                case PEER_CLOSED -> {
                    inputEnded();
                    return;
                } // end of stream
                case CLOSED -> {
                    return;
                } // our own close
                default -> {}
            }
            fail(new RdmaChannelException("receive on " + this, e));
        } else {
            fail(cause);
        }
    }

    /**
     * The peer shut its output down or closed: with {@code ALLOW_HALF_CLOSURE} our input ends ({@code
     * ChannelInputShutdownEvent}, then {@code ChannelInputShutdownReadComplete}: everything before it was read), and
     * the channel stays open for writing (a write to a peer that closed fails as a socket's does); else it closes.
     */
    void inputEnded() {
        if (config.isAllowHalfClosure()) {
            inputShutdown = true;
            pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        } else {
            closeNow();
        }
    }

    /** Reports a failure once and closes the channel. */
    void fail(Throwable cause) {
        if (failed) return;
        failed = true;
        pipeline().fireExceptionCaught(cause);
        closeNow();
    }

    /** Closes through the unsafe (a void promise may not pass through the pipeline). */
    private void closeNow() {
        unsafe().close(unsafe().voidPromise());
    }

    // ---- writing (ChannelSends) -----------------------------------------------------------------------------

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf || msg instanceof FileRegion) return msg;
        throw new UnsupportedOperationException("a jrdma channel writes ByteBufs and FileRegions, not "
                + msg.getClass().getName());
    }

    /**
     * Sends what was flushed while the ring has slots and the peer credits. A send the endpoint refuses (the peer
     * closed, or the connection broke) fails the write with an {@link IOException}, as a socket's write to a closed
     * peer does: Netty then closes the channel, or with {@code AUTO_CLOSE} off only shuts its output down.
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws IOException {
        sends.write(endpoint, in);
    }

    /** Bytes copied into the send ring so far (tests; event loop). */
    long bytesCopied() {
        return sends.bytesCopied();
    }

    /** Bytes sent from the application's registered buffers without a copy so far (tests; event loop). */
    long bytesSentInPlace() {
        return sends.bytesSentInPlace();
    }

    /** Sends still in flight on the adapter (for tests and diagnostics; event loop). */
    int sendsInFlight() {
        return sends.sendsInFlight();
    }

    /** Messages received and not yet read (for tests; any thread). */
    int messagesWaiting() {
        return reads.messagesWaiting();
    }

    // ---- half-close -----------------------------------------------------------------------------------------

    @Override
    protected void doShutdownOutput() throws NotYetConnectedException {
        Endpoint ep = endpoint;
        if (ep == null) throw new NotYetConnectedException();
        outputShutdown = true;
        ep.send(END_OF_OUTPUT);
    }

    @Override
    public boolean isInputShutdown() {
        return inputShutdown || !isActive();
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public boolean isShutdown() {
        return (inputShutdown && outputShutdown) || !isActive();
    }

    @Override
    public ChannelFuture shutdownOutput() {
        return shutdownOutput(newPromise());
    }

    @Override
    public ChannelFuture shutdownOutput(ChannelPromise promise) {
        EventLoop loop = eventLoop();
        if (loop.inEventLoop()) ((AbstractUnsafe) unsafe()).shutdownOutput(promise);
        else loop.execute(() -> ((AbstractUnsafe) unsafe()).shutdownOutput(promise));
        return promise;
    }

    @Override
    public ChannelFuture shutdownInput() {
        return shutdownInput(newPromise());
    }

    /** Stops reading: messages the peer sends from now on are not taken (and hold its credits). */
    @Override
    public ChannelFuture shutdownInput(ChannelPromise promise) {
        EventLoop loop = eventLoop();
        Runnable r = () -> {
            if (!open) {
                promise.setFailure(new ClosedChannelException());
            } else if (endpoint == null) {
                promise.setFailure(new NotYetConnectedException());
            } else {
                inputShutdown = true;
                promise.setSuccess();
            }
        };
        if (loop.inEventLoop()) r.run();
        else loop.execute(r);
        return promise;
    }

    @Override
    public ChannelFuture shutdown() {
        return shutdown(newPromise());
    }

    @Override
    public ChannelFuture shutdown(ChannelPromise promise) {
        shutdownOutput()
                .addListener(f -> shutdownInput().addListener(g -> {
                    Throwable cause = f.cause() != null ? f.cause() : g.cause();
                    if (cause != null) promise.setFailure(cause);
                    else promise.setSuccess();
                }));
        return promise;
    }

    @Override
    public String toString() {
        return "RdmaChannel[" + (remote != null ? remote : "unconnected")
                + (endpoint != null ? ", QP 0x" + Integer.toHexString(endpoint.qpNum()) : "") + "]";
    }

    // ---- what only the event loop does ----------------------------------------------------------------------

    final class RdmaUnsafe extends AbstractUnsafe implements RdmaIoHandle {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            if (promise.isDone() || !ensureOpen(promise)) return;
            if (endpoint != null) {
                promise.setFailure(new AlreadyConnectedException());
                return;
            }
            if (connectPromise != null) {
                promise.setFailure(new ConnectionPendingException());
                return;
            }
            if (!(remoteAddress instanceof InetSocketAddress r)) {
                promise.setFailure(new UnsupportedAddressTypeException());
                return;
            }
            EndpointConfig cfg = config.getEndpointConfig();
            if (localAddress instanceof InetSocketAddress l && !l.getAddress().isAnyLocalAddress()) {
                cfg = cfg.toBuilder().localAddress(l.getAddress()).build();
            }
            connectPromise = promise;
            remote = r;
            // a cancelled connect closes the channel; the set-up thread's endpoint, if it still comes, is closed then
            promise.addListener(f -> {
                if (f.isCancelled()) {
                    if (connectTimeout != null) connectTimeout.cancel(false);
                    connectPromise = null;
                    close(voidPromise());
                }
            });
            int ms = config.getConnectTimeoutMillis();
            if (ms > 0) {
                connectTimeout = eventLoop()
                        .schedule(
                                () -> {
                                    ChannelPromise p = connectPromise;
                                    if (p != null
                                            && p.tryFailure(new ConnectTimeoutException(
                                                    "connection timed out after " + ms + " ms: " + r))) {
                                        connectPromise = null;
                                        close(voidPromise());
                                    }
                                },
                                ms,
                                TimeUnit.MILLISECONDS);
            }
            String host = r.isUnresolved() ? r.getHostString() : r.getAddress().getHostAddress();
            EndpointConfig c = cfg;
            // on an RDMA event loop the connection joins the loop's group for its local address: the loop drives it
            EndpointGroup shared = loopGroup(r, cfg);
            java.util.concurrent.Semaphore turns = shared == null ? null : RdmaIoHandler.handshakeTurns(sharedLocal);
            // jrdma's set-up blocks (TCP exchange, or rdma_cm events in native code): not on the event loop
            Thread.ofPlatform().daemon().name("jrdma-netty-connect").start(() -> {
                Endpoint ep = null;
                Throwable failure = null;
                try {
                    if (shared == null) {
                        ep = Endpoint.connect(host, r.getPort(), c);
                    } else {
                        if (turns != null) turns.acquireUninterruptibly();
                        try {
                            ep = Endpoint.connect(host, r.getPort(), c, shared, null);
                        } finally {
                            if (turns != null) turns.release();
                        }
                    }
                } catch (RdmaConnectException | RuntimeException e) {
                    failure = e;
                }
                Endpoint done = ep;
                Throwable why = failure;
                try {
                    eventLoop().execute(() -> finishConnect(done, why));
                } catch (RejectedExecutionException e) {
                    if (done != null) done.close();
                }
            });
        }

        /** The local address of the loop group {@link #loopGroup} last chose (the connect's handshake turns). */
        private InetAddress sharedLocal;

        /**
         * The group of the loop's RDMA handler for this connection's local address (the given one, else the one the
         * route to {@code remote} leaves from), or null on another kind of event loop (the endpoint gets a group and
         * thread of its own then) or when that address cannot be told.
         */
        private EndpointGroup loopGroup(InetSocketAddress remote, EndpointConfig cfg) {
            RdmaIoHandler loop = RdmaIoHandler.current();
            if (loop == null || remote.isUnresolved() || cfg.connectionManager() == ConnectionManager.RDMA_CM)
                return null;
            InetAddress local = cfg.localAddress();
            try {
                if (local == null) {
                    try (java.net.DatagramSocket probe = new java.net.DatagramSocket()) {
                        probe.connect(remote); // no packet: the kernel only picks the route and its source address
                        local = probe.getLocalAddress();
                    }
                }
                if (local == null || local.isAnyLocalAddress()) return null;
                sharedLocal = local;
                return loop.clientGroup(local, cfg);
            } catch (java.io.IOException | RuntimeException e) {
                return null; // the endpoint's own group reports what is wrong with the device
            }
        }

        private void finishConnect(Endpoint ep, Throwable failure) {
            ChannelPromise p = connectPromise;
            connectPromise = null;
            if (connectTimeout != null) connectTimeout.cancel(false);
            if (failure != null) {
                if (p != null) p.tryFailure(connectFailure(failure));
                close(voidPromise());
                return;
            }
            if (p == null || p.isDone() || !open) {
                CLOSER.execute(ep::close); // timed out or closed meanwhile
                return;
            }
            attach(ep);
            boolean promiseSet = p.trySuccess();
            pipeline().fireChannelActive();
            if (!promiseSet) {
                close(voidPromise());
                return;
            }
            reads.schedule(); // a read asked for while connecting, or the end of input to watch for
        }

        private Throwable connectFailure(Throwable t) {
            String where = " (" + remote + ")";
            if (t instanceof RdmaConnectException e && e.reason() == RdmaConnectException.Reason.TIMEOUT) {
                ConnectTimeoutException c = new ConnectTimeoutException(e.getMessage() + where);
                c.initCause(e);
                return c;
            }
            ConnectException c = new ConnectException(t.getMessage() + where);
            c.initCause(t);
            return c;
        }

        @Override
        protected Executor prepareToClose() {
            // the endpoint's graceful close waits for the peer: not on the event loop (an RDMA loop counts it, so
            // that it does not end before the close hands it the channel's last events)
            if (endpoint == null) return null;
            RdmaIoHandler loop = RdmaIoHandler.current();
            return loop != null ? loop.closer() : CLOSER;
        }

        void flushNow() {
            flush0();
        }

        /** A write failed after it was posted: closes the channel, or with {@code AUTO_CLOSE} off shuts its output. */
        void writeFailed(IOException cause) {
            handleWriteError(cause);
        }

        @Override
        public void handle(IoRegistration registration, IoEvent ioEvent) {
            // completions come from the loop's own duty cycle (RdmaIoHandler.run) or as tasks, never as I/O events
        }

        @Override
        public void closeNow() {
            close(voidPromise());
        }

        @Override
        public void close() {
            close(voidPromise());
        }
    }
}
