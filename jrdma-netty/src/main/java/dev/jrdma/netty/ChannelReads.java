package dev.jrdma.netty;

import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.LentMessage;
import dev.jrdma.connect.LentMessageHandler;
import dev.jrdma.connect.RdmaException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.netty.util.internal.PlatformDependent;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The receive side of an {@link RdmaChannel}: the endpoint lends it each message in the registered receive buffer it
 * landed in ({@link Endpoint#onReceiveLent}), and the pipeline reads a {@link ReceivedByteBuf} over that buffer (no
 * copy, nothing allocated); releasing it gives the buffer and the peer's credit back. Reads run on the event loop,
 * sized and continued by the channel's {@code RecvByteBufAllocator} handle, as a socket channel's.
 */
final class ChannelReads {
    /** Receive buffers an endpoint posts beyond its credits, for credit-only messages (jrdma-connect's). */
    private static final int RECEIVE_CONTROL_SLOTS = 4;
    /**
     * Whether a read hands the loop's tasks their turn: a read operation ends after the piece during which the pipeline
     * gave its loop a task (gRPC's {@code WriteQueue} schedules its flush so), and goes on after the tasks (auto-read
     * asks again; the read is queued behind them). The answers to the first requests of a large message then leave
     * while the rest are read, so that the peer can work on them meanwhile: two gRPC processes otherwise play a
     * ping-pong of whole batches (32 calls a message), each idle while the other works. On by default since session 18
     * ({@code -Djrdma.netty.readYield=off} reads on): alone (session 15) it cost CPU per call on two loaded cores, a
     * message per call; with the chunks of {@link #yieldAfterBytes} (session 17) and the adaptive spin it met gRPC's
     * rate target on a quiet machine (1.31-1.48x epoll's calls per second, the fixed budget without it 0.92-0.95x), and
     * beside busy loops it did no worse than without (jrdma-netty's README, session 18). Tests set it
     * (package-private).
     */
    static volatile boolean yieldToTasks = !"off".equals(System.getProperty("jrdma.netty.readYield", "on"));
    /**
     * With {@link #yieldToTasks}, once a read of this channel gave its loop a task, the first piece of each read
     * operation holds at most this many bytes (the rest follows in pieces of the allocator's guess when that piece
     * gave the loop no task): small enough that a batch of requests is answered in several parts
     * ({@code -Djrdma.netty.firstReadBytes}). A pipeline that gives no task reads pieces of the guess, as before.
     */
    static final int FIRST_READ_BYTES = Integer.getInteger("jrdma.netty.firstReadBytes", 1024);
    /**
     * With {@link #yieldToTasks}: a read operation that gave its loop a task goes on over the messages already received
     * until it has read this many bytes, then yields ({@code -Djrdma.netty.readYieldBytes}, 1024 by default; 0: at the
     * first piece that gave a task, as session 15 built it). Once two gRPC processes overlap, each flush carries the
     * answers to a few calls; reading them one message at a time made every call a message of its own each way (the
     * timeline in jrdma-netty's README, session 17: CPU per call 1.44x epoll's); with 1024 the reads and flushes come
     * in chunks of about ten calls. Tests set it (package-private).
     */
    static volatile int yieldAfterBytes = Integer.getInteger("jrdma.netty.readYieldBytes", 1024);

    private final RdmaChannel channel;
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
    /** A read of this channel gave the loop a task (the pipeline answers through tasks): first pieces are small. */
    private boolean readsGiveTasks;
    /** The buffers over the receive slots, made on first use (event loop). */
    private ReceivedByteBuf[] slotBuffers = new ReceivedByteBuf[0];

    private final AtomicBoolean readScheduled = new AtomicBoolean();
    private final Runnable readTask = this::readNow;
    private final UncheckedBooleanSupplier moreReceived = () -> partial != null || !received.isEmpty();
    private final LentMessageHandler receiver = new LentMessageHandler() {
        @Override
        public void onMessage(LentMessage m) {
            if (!channel.isOpen()) {
                m.release();
                return;
            }
            received.offer(m); // room for every receive buffer (and the copies queued before the channel took over)
            if (readsScheduled) schedule();
        }

        @Override
        public void onEnd(RdmaException cause) {
            receiveEnd = cause;
            if (readsScheduled) schedule();
        }
    };

    /** Has the event loop read: on the spot when its own duty cycle delivered the message, else as a task. */
    void schedule() {
        if (readScheduled.compareAndSet(false, true)) {
            if (channel.runInline(readTask)) return;
            try {
                channel.eventLoop().execute(readTask);
            } catch (RejectedExecutionException e) {
                readScheduled.set(false); // the loop is shutting down: nothing more to read
            }
        }
    }

    /**
     * One read operation, as a socket channel's: reads of at most the RecvByteBufAllocator's guess each (a message
     * is cut into such pieces without a copy), while its handle says to go on (auto-read still on, fewer reads than
     * its maximum, more already received), then channelReadComplete. Whether or not a read is pending, the end of
     * the peer's output (its shutdown or close) is noticed once everything before it was read, as epoll notices
     * RDHUP.
     */
    void readNow() {
        readScheduled.set(false);
        Endpoint ep = channel.endpoint();
        if (!channel.isOpen() || ep == null || channel.inputShutdown) return;
        if (!channel.readPending) {
            watchInputEnd();
            return;
        }
        RecvByteBufAllocator.Handle handle = channel.unsafe().recvBufAllocHandle();
        handle.reset(channel.config());
        SingleThreadEventExecutor loop =
                yieldToTasks && channel.eventLoop() instanceof SingleThreadEventExecutor l ? l : null;
        int tasksBefore = loop != null ? loop.pendingTasks() : 0;
        boolean delivered = false;
        int deliveredBytes = 0;
        do {
            if (partial == null && !takeMessage()) {
                if (delivered) {
                    handle.readComplete();
                    channel.pipeline().fireChannelReadComplete();
                }
                if (channel.isOpen() && !channel.inputShutdown) takeInputEnd();
                return;
            }
            int guess = Math.max(1, handle.guess());
            if (readsGiveTasks && !delivered) guess = Math.min(guess, FIRST_READ_BYTES);
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
            channel.readPending = false;
            delivered = true;
            deliveredBytes += n;
            channel.pipeline().fireChannelRead(buf);
            if (!channel.isOpen() || channel.inputShutdown) break;
            if (loop != null && loop.pendingTasks() > tasksBefore) {
                readsGiveTasks = true;
                if (deliveredBytes >= yieldAfterBytes) break; // the tasks first, then the rest
            }
        } while (continueReading(handle));
        handle.readComplete();
        channel.pipeline().fireChannelReadComplete();
        if (channel.isOpen() && !channel.inputShutdown && !channel.readPending) watchInputEnd();
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
            b = new ReceivedByteBuf(channel.alloc(), m.slotMemory().asByteBuffer());
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
                channel.inputEnded();
            }
            return;
        }
        if (end != null && !receiveEndHandled) {
            receiveEndHandled = true;
            channel.receiveFailed(end);
        }
    }

    /**
     * {@link #releaseUnread} done before this returns: the closer's thread waits for the loop (at most a second; a
     * loop that is gone or busier is left to do it after).
     */
    void releaseUnreadAndWait() {
        EventLoop loop = channel.isRegistered() ? channel.eventLoop() : null;
        if (loop == null || loop.inEventLoop()) {
            releaseUnread();
            return;
        }
        try {
            loop.submit(this::releaseUnread).await(1, java.util.concurrent.TimeUnit.SECONDS);
        } catch (RejectedExecutionException e) {
            releaseUnread(); // the loop is gone: nobody reads any more
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The channel closed: messages it did not read go back to the endpoint (event loop, or after it stopped). */
    void releaseUnread() {
        EventLoop loop = channel.isRegistered() ? channel.eventLoop() : null;
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

    /** Messages the endpoint lent this channel that are not read yet (tests; any thread). */
    int messagesWaiting() {
        Queue<LentMessage> q = received;
        return q == null ? 0 : q.size();
    }

    ChannelReads(RdmaChannel channel) {
        this.channel = channel;
    }

    /** Takes the endpoint's messages from now on (those it queued before come first, as copies). */
    void attach(Endpoint ep, EndpointConfig cfg) {
        // every receive buffer of the endpoint can be lent at once, and as many copies queued before this channel
        this.received = PlatformDependent.newFixedMpscQueue(2 * (cfg.recvQueueDepth() + RECEIVE_CONTROL_SLOTS));
        ep.onReceiveLent(receiver);
    }

    /** The channel is registered: from now on a message that arrives schedules a read. */
    void registered() {
        readsScheduled = true;
    }
}
