package dev.jrdma.netty;

import dev.jrdma.connect.BufferPool;
import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.RdmaException;
import dev.jrdma.connect.RegisteredBuffer;
import dev.jrdma.connect.SendListener;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.FileRegion;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The send side of an {@link RdmaChannel}: flushed buffers go out through its endpoint, a registered buffer of the
 * channel's allocator from where it lies (held until its send completes), everything else gathered and copied once
 * into the send ring; sends are told to one {@link SendListener} (no future per send), counted on the endpoint's
 * owner and reclaimed on the event loop. At most the ring's slots are in flight, and only while the peer has credits.
 */
final class ChannelSends {
    /** Send-queue entries left to the endpoint for its credit-only messages. */
    private static final int CONTROL_SENDS = 2;
    /** Largest slot of the send ring (and so the largest message this side sends). */
    private static final int MAX_SLOT = 64 * 1024;
    /** How long to wait before looking again when the peer has no free receive buffer. */
    private static final long CREDIT_RECHECK_US = 50;

    private final RdmaChannel channel;
    private SendRing ring;
    /** Sends in flight, oldest first: a registered buffer sent in place (held until it completes), or null for a ring slot. */
    private ByteBuf[] inFlight;

    private int inFlightHead, inFlightCount;
    /** Bytes copied into the send ring, and bytes sent from the application's registered buffers (event loop). */
    private long bytesCopied, bytesSentInPlace;
    // completions are counted on the endpoint's owner, reclaimed on the event loop
    private final SlotChannel slotChannel = new SlotChannel();
    private boolean sendFailureHandled;
    private final AtomicInteger sendsCompleted = new AtomicInteger();
    private volatile RdmaException sendFailure;
    private final AtomicBoolean writeScheduled = new AtomicBoolean();
    private final Runnable writeTask = this::afterSends;
    private final SendListener onSent = this::sent;
    private final Gather gather = new Gather();
    private boolean creditRecheckScheduled;
    private final Runnable creditRecheck = this::recheckCredits;

    ChannelSends(RdmaChannel channel) {
        this.channel = channel;
    }

    /** Makes the send ring for a connected endpoint: its slots are the messages in flight at most. */
    void attach(Endpoint ep, EndpointConfig cfg) {
        int slotSize = Math.min(ep.maxMessageSize(), MAX_SLOT);
        int slots = Math.max(1, cfg.sendQueueDepth() - CONTROL_SENDS);
        this.ring = new SendRing(ep.pool(), slots, slotSize);
        this.inFlight = new ByteBuf[slots];
    }

    /** Gives the send ring back (the channel closed). */
    void close() {
        if (ring != null) ring.close();
    }

    /**
     * Sends what was flushed while the ring has slots and the peer credits. A send the endpoint refuses (the peer
     * closed, or the connection broke) fails the write with an {@link IOException}, as a socket's write to a closed
     * peer does: Netty then closes the channel, or with {@code AUTO_CLOSE} off only shuts its output down.
     */
    void write(Endpoint ep, ChannelOutboundBuffer in) throws IOException {
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
                "cannot send on " + channel + ": " + (cause != null ? cause.getMessage() : "the connection is closed"),
                cause);
    }

    /**
     * Sends the head of the outbound buffer from its own registered memory, up to one message, holding the buffer
     * until the send completes. Returns the bytes sent, or 0 when the head is not such a buffer (it is copied
     * instead); throws when the endpoint refused the send (the peer closed, or the connection broke).
     */
    private int sendInPlace(Endpoint ep, ByteBuf head) throws IOException {
        int n = Math.min(head.readableBytes(), ring.slotSize());
        if (n < RdmaChannel.IN_PLACE_MIN) return 0;
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
            if (filled > 0 && buf.readableBytes() >= RdmaChannel.IN_PLACE_MIN && registeredMemory(buf, pool) != null)
                return false;
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

    private void recheckCredits() {
        creditRecheckScheduled = false;
        ((RdmaChannel.RdmaUnsafe) channel.unsafe()).flushNow();
    }

    private void awaitCredits() {
        if (creditRecheckScheduled) return;
        creditRecheckScheduled = true;
        channel.eventLoop().schedule(creditRecheck, CREDIT_RECHECK_US, TimeUnit.MICROSECONDS);
    }

    /** A send completed (the endpoint's owner thread). */
    private void sent(RdmaException failure) {
        if (failure != null && sendFailure == null) sendFailure = failure;
        sendsCompleted.incrementAndGet();
        if (writeScheduled.compareAndSet(false, true)) {
            if (channel.runInline(writeTask)) return;
            try {
                channel.eventLoop().execute(writeTask);
            } catch (RejectedExecutionException e) {
                writeScheduled.set(false);
            }
        }
    }

    private void reclaimSends() {
        int done = sendsCompleted.getAndSet(0);
        if (done > 0) completeInFlight(done);
    }

    void afterSends() {
        writeScheduled.set(false);
        if (inFlight != null) reclaimSends(); // held buffers go back even after the close
        if (!channel.isOpen()) return;
        RdmaException f = sendFailure;
        if (f != null) {
            if (sendFailureHandled) return;
            sendFailureHandled = true;
            if (f.kind() == RdmaException.Kind.PEER_CLOSED || f.kind() == RdmaException.Kind.CLOSED) {
                // the peer closed with our sends in flight: as a socket's write to a closed peer
                ((RdmaChannel.RdmaUnsafe) channel.unsafe())
                        .writeFailed(new IOException("the peer of " + channel + " closed: " + f.getMessage(), f));
            } else {
                channel.fail(new RdmaChannelException("send on " + channel, f));
            }
            return;
        }
        ((RdmaChannel.RdmaUnsafe) channel.unsafe()).flushNow();
    }

    /** Sends still in flight on the adapter (for tests and diagnostics; event loop). */
    int sendsInFlight() {
        return inFlightCount - sendsCompleted.get();
    }
}
