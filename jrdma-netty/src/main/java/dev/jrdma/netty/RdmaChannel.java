package dev.jrdma.netty;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.ConnectionManager;
import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.EndpointGroup;
import dev.jrdma.connect.LentMessage;
import dev.jrdma.connect.LentMessageHandler;
import dev.jrdma.connect.RdmaConnectException;
import dev.jrdma.connect.RdmaException;
import dev.jrdma.connect.RegisteredBuffer;
import dev.jrdma.connect.SendListener;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.FileRegion;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.SingleThreadEventLoop;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.UncheckedBooleanSupplier;
import io.netty.util.concurrent.Future;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

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
    /** Receive buffers an endpoint posts beyond its credits, for credit-only messages (jrdma-connect's). */
    private static final int RECEIVE_CONTROL_SLOTS = 4;
    /** Send-queue entries left to the endpoint for its credit-only messages. */
    private static final int CONTROL_SENDS = 2;
    /** Largest slot of the send ring (and so the largest message this side sends). */
    private static final int MAX_SLOT = 64 * 1024;
    /**
     * The least a registered buffer must hold to be sent from where it lies: a smaller one is cheaper to copy into a
     * gathered message than to send alone (each message takes a work request and one of the peer's credits).
     */
    static final int IN_PLACE_MIN = 1024;
    /** How long to wait before looking again when the peer has no free receive buffer. */
    private static final long CREDIT_RECHECK_US = 50;
    /**
     * The blocking part of a close (the endpoint waits for in-flight work and the peer's goodbye) runs here. Platform
     * threads: rdma_cm and verbs calls block in native code, which would pin a virtual thread's carrier.
     */
    static final Executor CLOSER =
            r -> Thread.ofPlatform().daemon().name("jrdma-netty-close").start(r);

    private final RdmaChannelConfig config;
    private volatile Endpoint endpoint;
    private volatile boolean open = true;
    private volatile boolean inputShutdown, outputShutdown;
    private volatile InetSocketAddress local, remote;
    private SendRing ring;
    /** Sends in flight, oldest first: a registered buffer sent in place (held until it completes), or null for a ring slot. */
    private ByteBuf[] inFlight;

    private int inFlightHead, inFlightCount;
    /** Bytes copied into the send ring, and bytes sent from the application's registered buffers (event loop). */
    private long bytesCopied, bytesSentInPlace;

    private IoRegistration registration;

    // reading (event loop), with the flag the completion thread sets
    private boolean readPending;
    /**
     * Messages the endpoint lent this channel, in order, not yet read: the endpoint's owner adds, the event loop takes.
     * Each holds its receive buffer and the peer's credit until the pipeline releases the buffer read over it.
     */
    private Queue<LentMessage> received;
    /** Why the endpoint's input ended (after the messages in {@link #received}), or null; and whether it was acted on. */
    private volatile RdmaException receiveEnd;

    private boolean receiveEndHandled;
    /** Set when the channel is registered: from then on a lent message schedules a read. */
    private volatile boolean readsScheduled;
    /** A message the pipeline has read only part of (reads are sized by the RecvByteBufAllocator), the rest readable. */
    private ByteBuf partial;
    /** The buffers over the receive slots, made on first use (event loop). */
    private ReceivedByteBuf[] slotBuffers = new ReceivedByteBuf[0];

    private final AtomicBoolean readScheduled = new AtomicBoolean();
    private final Runnable readTask = this::readNow;
    private final UncheckedBooleanSupplier moreReceived = () -> partial != null || !received.isEmpty();
    private final LentMessageHandler receiver = new LentMessageHandler() {
        @Override
        public void onMessage(LentMessage m) {
            if (!open) {
                m.release();
                return;
            }
            received.offer(m); // room for every receive buffer (and the copies queued before the channel took over)
            if (readsScheduled) scheduleRead();
        }

        @Override
        public void onEnd(RdmaException cause) {
            receiveEnd = cause;
            if (readsScheduled) scheduleRead();
        }
    };

    // writing: completions are counted on the completion thread, reclaimed on the event loop
    private final SlotChannel slotChannel = new SlotChannel();
    private boolean sendFailureHandled;
    private final AtomicInteger sendsCompleted = new AtomicInteger();
    private volatile RdmaException sendFailure;
    private final AtomicBoolean writeScheduled = new AtomicBoolean();
    private final Runnable writeTask = this::afterSends;
    private final SendListener onSent = this::sent;
    private final Gather gather = new Gather();
    private boolean creditRecheckScheduled;
    private final Runnable creditRecheck = () -> {
        creditRecheckScheduled = false;
        ((RdmaUnsafe) unsafe()).flushNow();
    };
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
        int slotSize = Math.min(ep.maxMessageSize(), MAX_SLOT);
        int slots = Math.max(1, cfg.sendQueueDepth() - CONTROL_SENDS);
        this.ring = new SendRing(ep.pool(), slots, slotSize);
        this.inFlight = new ByteBuf[slots];
        if (config.getAllocator() instanceof RegisteredByteBufAllocator a) a.attach(ep.pool());
        if (ep.remoteAddress() instanceof InetSocketAddress r) this.remote = r;
        // the address and port of the connection's set-up (its TCP exchange or rdma_cm id), as a socket's
        if (ep.localAddress() instanceof InetSocketAddress l) {
            local = l;
        } else if (local == null) {
            InetAddress a = cfg.localAddress();
            local = new InetSocketAddress(a != null ? a : InetAddress.getLoopbackAddress(), 0);
        }
        // every receive buffer of the endpoint can be lent at once, and as many copies queued before this channel
        this.received = PlatformDependent.newFixedMpscQueue(2 * (cfg.recvQueueDepth() + RECEIVE_CONTROL_SLOTS));
        this.endpoint = ep;
        ep.onReceiveLent(receiver);
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
        return loop instanceof SingleThreadEventLoop
                || (loop instanceof IoEventLoop io && io.isCompatible(RdmaUnsafe.class));
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new RdmaUnsafe();
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        registerWith(eventLoop(), (RdmaUnsafe) unsafe(), promise, r -> registration = r);
        readsScheduled = true;
        if (endpoint != null) scheduleRead(); // an accepted connection: watch for the end of its input from the start
    }

    /** Registers with an RDMA I/O handler when the loop has one; any other single-threaded loop needs nothing. */
    static void registerWith(
            EventLoop loop,
            RdmaIoHandle handle,
            ChannelPromise promise,
            java.util.function.Consumer<IoRegistration> keep) {
        if (loop instanceof IoEventLoop io && io.isCompatible(handle.getClass())) {
            io.register(handle).addListener(f -> {
                if (f.isSuccess()) {
                    keep.accept((IoRegistration) f.getNow());
                    promise.setSuccess();
                } else {
                    promise.setFailure(f.cause());
                }
            });
        } else {
            promise.setSuccess();
        }
    }

    @Override
    protected void doDeregister() {
        IoRegistration r = registration;
        registration = null;
        if (r != null) r.cancel();
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
            if (ep != null) ep.close();
        } finally {
            if (ep != null) releaseUnread();
            if (ring != null) ring.close();
            RdmaServerChannel parent = parent();
            if (parent != null && ep != null) parent.childClosed();
        }
    }

    // ---- reading --------------------------------------------------------------------------------------------

    /** A read asked for before the channel is connected stays pending: it is done once it is. */
    @Override
    protected void doBeginRead() {
        if (inputShutdown) return;
        readPending = true;
        if (endpoint != null) scheduleRead();
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

    private void scheduleRead() {
        if (readScheduled.compareAndSet(false, true)) {
            if (runInline(readTask)) return;
            try {
                eventLoop().execute(readTask);
            } catch (RejectedExecutionException e) {
                readScheduled.set(false); // the loop is shutting down: nothing more to read
            }
        }
    }

    /**
     * Runs a completion's read or write handling on the spot when the completion is dispatched by this channel's own
     * event loop while it drives its groups ({@link RdmaIoHandler#runInline}): no task, no second pass of the loop.
     */
    private boolean runInline(Runnable work) {
        if (!isRegistered()) return false;
        RdmaIoHandler h = RdmaIoHandler.current();
        return h != null && eventLoop().inEventLoop() && h.runInline(work);
    }

    /**
     * One read operation, as a socket channel's: reads of at most the RecvByteBufAllocator's guess each (a message
     * is cut into such pieces without a copy), while its handle says to go on (auto-read still on, fewer reads than
     * its maximum, more already received), then channelReadComplete. Whether or not a read is pending, the end of
     * the peer's output (its shutdown or close) is noticed once everything before it was read, as epoll notices
     * RDHUP.
     */
    private void readNow() {
        readScheduled.set(false);
        Endpoint ep = endpoint;
        if (!open || ep == null || inputShutdown) return;
        if (!readPending) {
            watchInputEnd();
            return;
        }
        RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
        handle.reset(config);
        boolean delivered = false;
        do {
            if (partial == null && !takeMessage()) {
                if (delivered) {
                    handle.readComplete();
                    pipeline().fireChannelReadComplete();
                }
                if (open && !inputShutdown) takeInputEnd();
                return;
            }
            int guess = Math.max(1, handle.guess());
            int n = Math.min(partial.readableBytes(), guess);
            ByteBuf buf;
            if (n == partial.readableBytes()) { // the rest of the message: the buffer over its receive slot itself
                buf = partial;
                partial = null;
            } else {
                buf = partial.readRetainedSlice(n);
            }
            handle.attemptedBytesRead(guess);
            handle.lastBytesRead(n);
            handle.incMessagesRead(1);
            readPending = false;
            delivered = true;
            pipeline().fireChannelRead(buf);
            if (!open || inputShutdown) break;
        } while (continueReading(handle));
        handle.readComplete();
        pipeline().fireChannelReadComplete();
        if (open && !inputShutdown && !readPending) watchInputEnd();
    }

    private boolean continueReading(RecvByteBufAllocator.Handle handle) {
        if (handle instanceof RecvByteBufAllocator.ExtendedHandle extended) {
            return extended.continueReading(moreReceived);
        }
        return handle.continueReading();
    }

    /**
     * Makes the next message with data the {@link #partial} one; false when none has arrived yet (the endpoint's
     * handler reads again when one does) or the input ended (the message that ends it stays next, for
     * {@link #takeInputEnd}).
     */
    private boolean takeMessage() {
        LentMessage m;
        while ((m = received.peek()) != null) {
            if (m.length() == 0) {
                if (!m.isWriteWithImmediate()) return false; // the peer's end of output
                received.poll(); // a write with immediate carries nothing for Netty
                m.release();
                continue;
            }
            received.poll();
            partial = bufferOver(m);
            return true;
        }
        return false;
    }

    /** The pipeline's buffer over a lent message: the one over its receive slot (a copy for one queued earlier). */
    private ByteBuf bufferOver(LentMessage m) {
        int slot = m.slot();
        if (slot < 0) { // received before this channel took the endpoint's messages: a copy already
            ByteBuf copy = Unpooled.wrappedBuffer(m.bytes());
            m.release();
            return copy;
        }
        if (slot >= slotBuffers.length) slotBuffers = Arrays.copyOf(slotBuffers, slot + 1);
        ReceivedByteBuf b = slotBuffers[slot];
        if (b == null) {
            b = new ReceivedByteBuf(alloc(), m.slotMemory().asByteBuffer());
            slotBuffers[slot] = b;
        }
        return b.lend(m);
    }

    /** Without a read pending: acts on the end of the peer's output when nothing is left before it. */
    private void watchInputEnd() {
        if (partial == null) takeInputEnd();
    }

    /** Acts on the next message if it ends the input: the peer's end-of-output message, its close, or a failure. */
    private void takeInputEnd() {
        RdmaException end = receiveEnd; // read before the queue: the endpoint queues every message before it ends
        LentMessage m = received.peek();
        if (m != null) {
            if (m.length() == 0 && !m.isWriteWithImmediate()) {
                received.poll();
                m.release();
                inputEnded();
            }
            return;
        }
        if (end != null && !receiveEndHandled) {
            receiveEndHandled = true;
            receiveFailed(end);
        }
    }

    /** The channel closed: messages it did not read go back to the endpoint (event loop, or after it stopped). */
    private void releaseUnread() {
        EventLoop loop = isRegistered() ? eventLoop() : null;
        if (loop != null && !loop.inEventLoop()) {
            try {
                loop.execute(this::releaseUnread);
                return;
            } catch (RejectedExecutionException e) {
                // the loop is gone: nobody reads any more, release here
            }
        }
        ByteBuf p = partial;
        partial = null;
        if (p != null) p.release();
        LentMessage m;
        while ((m = received.poll()) != null) m.release();
    }

    private void receiveFailed(Throwable cause) {
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
    private void inputEnded() {
        if (config.isAllowHalfClosure()) {
            inputShutdown = true;
            pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        } else {
            closeNow();
        }
    }

    /** Reports a failure once and closes the channel. */
    private void fail(Throwable cause) {
        if (failed) return;
        failed = true;
        pipeline().fireExceptionCaught(cause);
        closeNow();
    }

    /** Closes through the unsafe (a void promise may not pass through the pipeline). */
    private void closeNow() {
        unsafe().close(unsafe().voidPromise());
    }

    // ---- writing --------------------------------------------------------------------------------------------

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
        Endpoint ep = endpoint;
        reclaimSends();
        while (true) {
            if (!skipEmpty(in)) return;
            if (inFlightCount == inFlight.length) return; // a send completion flushes again
            if (ep.sendCredits() <= 0) { // the peer has no free receive buffer: look again shortly
                if (!ep.isConnected()) throw writeRefused(ep);
                awaitCredits();
                return;
            }
            Object head = in.current();
            if (head instanceof FileRegion region) {
                sendFileRegion(ep, in, region);
                continue;
            }
            int sent = sendInPlace(ep, (ByteBuf) head);
            if (sent == 0) sent = sendCopy(ep, in);
            // only now, with the send posted, do the writes' promises complete: a listener that closes the channel
            // (HTTP's Connection: close) starts the endpoint's close on the closer thread, which then waits for this
            // send
            in.removeBytes(sent);
        }
    }

    /**
     * Reads the next part of a file region (at most a slot) into the send ring and sends it: the region's file is
     * read once, into registered memory, and the adapter sends from there.
     */
    private void sendFileRegion(Endpoint ep, ChannelOutboundBuffer in, FileRegion region) throws IOException {
        int slot = ring.take();
        long read;
        try {
            slotChannel.begin(ring.view(slot, ring.slotSize()));
            read = region.transferTo(slotChannel, region.transferred());
        } catch (IOException | RuntimeException e) {
            ring.untake();
            throw e;
        }
        if (read <= 0) {
            ring.untake();
            throw new IOException(
                    "file region " + region + " gave no bytes at " + region.transferred() + " of " + region.count());
        }
        if (!ep.send(ring.memory(), ring.offset(slot), (int) read, onSent)) {
            ring.untake();
            throw writeRefused(ep);
        }
        pushInFlight(null);
        bytesCopied += read;
        in.progress(read);
        if (region.transferred() >= region.count()) in.remove();
    }

    /** A send the endpoint refused at once, as the IOException a socket's write to a closed peer throws. */
    private IOException writeRefused(Endpoint ep) {
        Throwable cause = ep != null ? ep.refusal() : null;
        sendFailureHandled = true; // this failure is the write's: the send's completion reports nothing more
        return new IOException(
                "cannot send on " + this + ": " + (cause != null ? cause.getMessage() : "the connection is closed"),
                cause);
    }

    /**
     * Sends the head of the outbound buffer from its own registered memory, up to one message, holding the buffer
     * until the send completes. Returns the bytes sent, or 0 when the head is not such a buffer (it is copied
     * instead); throws when the endpoint refused the send (the peer closed, or the connection broke).
     */
    private int sendInPlace(Endpoint ep, ByteBuf head) throws IOException {
        int n = Math.min(head.readableBytes(), ring.slotSize());
        if (n < IN_PLACE_MIN) return 0;
        RegisteredBuffer memory = registeredMemory(head, ep.pool());
        if (memory == null) return 0;
        long offset = offsetIn(memory, head, n);
        if (offset < 0 || offset + n > memory.length()) return 0; // not inside that memory (cannot happen for a view)
        if (!ep.send(memory, offset, n, onSent)) throw writeRefused(ep);
        pushInFlight(head.retain()); // the outbound buffer releases its reference when the bytes leave it
        bytesSentInPlace += n;
        return n;
    }

    /**
     * Where {@code buf}'s readable bytes start in {@code memory}: its reader index for the buffer itself (nothing
     * allocated), else (a slice or other view of it) found from the address of the view's memory.
     */
    private static long offsetIn(RegisteredBuffer memory, ByteBuf buf, int n) {
        if (buf instanceof RegisteredByteBuf) return buf.readerIndex();
        return MemorySegment.ofBuffer(buf.nioBuffer(buf.readerIndex(), n)).address()
                - memory.segment().address();
    }

    /** The registered memory of {@code pool} under {@code buf} (a {@link RegisteredByteBuf} or a view of one), or null. */
    private static RegisteredBuffer registeredMemory(ByteBuf buf, BufferPool pool) {
        for (ByteBuf b = buf; b != null; b = b.unwrap()) {
            if (b instanceof RegisteredByteBuf r) return r.registeredIn(pool);
        }
        return null;
    }

    /**
     * Gathers as many flushed buffers as fit into one ring slot (headers, body and trailers of a response travel
     * as one RDMA send, as a socket's gathering write would send them) and sends it; throws as {@link #sendInPlace}.
     */
    private int sendCopy(Endpoint ep, ChannelOutboundBuffer in) throws IOException {
        int slot = ring.take();
        gather.begin(ring.view(slot, ring.slotSize()), ep.pool());
        try {
            in.forEachFlushedMessage(gather);
        } catch (Exception e) {
            throw new IllegalStateException(e); // the processor throws nothing
        }
        int filled = gather.filled();
        if (!ep.send(ring.memory(), ring.offset(slot), filled, onSent)) {
            ring.untake();
            throw writeRefused(ep);
        }
        pushInFlight(null);
        bytesCopied += filled;
        return filled;
    }

    private void pushInFlight(ByteBuf held) {
        int at = inFlightHead + inFlightCount;
        inFlight[at >= inFlight.length ? at - inFlight.length : at] = held;
        inFlightCount++;
    }

    /** The oldest {@code n} sends completed: their ring slots are free again and their held buffers released. */
    private void completeInFlight(int n) {
        int slots = 0;
        for (int i = 0; i < n && inFlightCount > 0; i++) {
            ByteBuf held = inFlight[inFlightHead];
            inFlight[inFlightHead] = null;
            inFlightHead = inFlightHead + 1 == inFlight.length ? 0 : inFlightHead + 1;
            inFlightCount--;
            if (held != null) held.release();
            else slots++;
        }
        ring.release(slots);
    }

    /** Bytes copied into the send ring so far (tests; event loop). */
    long bytesCopied() {
        return bytesCopied;
    }

    /** Bytes sent from the application's registered buffers without a copy so far (tests; event loop). */
    long bytesSentInPlace() {
        return bytesSentInPlace;
    }

    /**
     * Copies flushed buffers into a send slot without taking them from the outbound buffer; it stops before a
     * registered buffer that will be sent in place.
     */
    private static final class Gather implements ChannelOutboundBuffer.MessageProcessor {
        private ByteBuffer view;
        private int filled;
        private BufferPool pool;

        void begin(ByteBuffer slot, BufferPool connectionPool) {
            view = slot;
            filled = 0;
            pool = connectionPool;
        }

        int filled() {
            return filled;
        }

        @Override
        public boolean processMessage(Object msg) {
            if (!(msg instanceof ByteBuf buf)) return false; // a FileRegion goes alone
            if (filled > 0 && buf.readableBytes() >= IN_PLACE_MIN && registeredMemory(buf, pool) != null) return false;
            int n = Math.min(buf.readableBytes(), view.capacity() - filled);
            if (n > 0) {
                view.limit(filled + n).position(filled);
                copy(buf, n, view);
                filled += n;
            }
            return filled < view.capacity();
        }
    }

    /**
     * Copies {@code n} readable bytes of {@code buf} into {@code view} without the ByteBuffer a direct buffer's
     * {@code getBytes(int, ByteBuffer)} makes per call (the JFR profile of netty-bench's rate phase: one per message):
     * a heap buffer from its array, a single-buffer direct one through its reused internal NIO buffer.
     */
    private static void copy(ByteBuf buf, int n, ByteBuffer view) {
        int at = buf.readerIndex();
        if (buf.hasArray()) {
            view.put(buf.array(), buf.arrayOffset() + at, n);
        } else if (buf.nioBufferCount() == 1) {
            view.put(buf.internalNioBuffer(at, n));
        } else {
            buf.getBytes(at, view);
        }
    }

    /** Drops empty buffers and regions at the head of the outbound buffer; false when nothing is left to write. */
    private static boolean skipEmpty(ChannelOutboundBuffer in) {
        Object msg;
        while ((msg = in.current()) != null) {
            if (msg instanceof ByteBuf buf
                    ? buf.isReadable()
                    : ((FileRegion) msg).transferred() < ((FileRegion) msg).count()) return true;
            in.remove();
        }
        return false;
    }

    /** What a file region transfers into: the send slot being filled (the region's file is read straight into it). */
    private static final class SlotChannel implements WritableByteChannel {
        private ByteBuffer slot;

        void begin(ByteBuffer view) {
            slot = view;
        }

        @Override
        public int write(ByteBuffer src) {
            int n = Math.min(src.remaining(), slot.remaining());
            if (n == 0) return 0;
            int limit = src.limit();
            src.limit(src.position() + n);
            slot.put(src);
            src.limit(limit);
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {}
    }

    private void awaitCredits() {
        if (creditRecheckScheduled) return;
        creditRecheckScheduled = true;
        eventLoop().schedule(creditRecheck, CREDIT_RECHECK_US, TimeUnit.MICROSECONDS);
    }

    /** A send completed (the endpoint's owner thread). */
    private void sent(RdmaException failure) {
        if (failure != null && sendFailure == null) sendFailure = failure;
        sendsCompleted.incrementAndGet();
        if (writeScheduled.compareAndSet(false, true)) {
            if (runInline(writeTask)) return;
            try {
                eventLoop().execute(writeTask);
            } catch (RejectedExecutionException e) {
                writeScheduled.set(false);
            }
        }
    }

    private void reclaimSends() {
        int done = sendsCompleted.getAndSet(0);
        if (done > 0) completeInFlight(done);
    }

    private void afterSends() {
        writeScheduled.set(false);
        if (inFlight != null) reclaimSends(); // held buffers go back even after the close
        if (!open) return;
        RdmaException f = sendFailure;
        if (f != null) {
            if (sendFailureHandled) return;
            sendFailureHandled = true;
            if (f.kind() == RdmaException.Kind.PEER_CLOSED || f.kind() == RdmaException.Kind.CLOSED) {
                // the peer closed with our sends in flight: as a socket's write to a closed peer
                ((RdmaUnsafe) unsafe())
                        .writeFailed(new IOException("the peer of " + this + " closed: " + f.getMessage(), f));
            } else {
                fail(new RdmaChannelException("send on " + this, f));
            }
            return;
        }
        ((RdmaUnsafe) unsafe()).flushNow();
    }

    /** Sends still in flight on the adapter (for tests and diagnostics; event loop). */
    int sendsInFlight() {
        return inFlightCount - sendsCompleted.get();
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
            scheduleRead(); // a read asked for while connecting, or the end of input to watch for
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
            // the endpoint's graceful close waits for the peer: not on the event loop
            return endpoint != null ? CLOSER : null;
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
