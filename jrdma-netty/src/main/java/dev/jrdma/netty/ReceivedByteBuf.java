package dev.jrdma.netty;

import dev.jrdma.connect.LentMessage;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.nio.ByteBuffer;

/**
 * A received message as the pipeline reads it: a Netty buffer over the registered receive buffer it landed in (no
 * copy). Releasing its last reference releases the {@link LentMessage}, which posts the receive buffer again and gives
 * the peer its credit back; until then the peer's credit stays taken (a handler that holds buffers slows its peer,
 * nothing is lost). One per receive buffer of a channel, reused for every message that lands there (its reference
 * count starts again at one), so reading allocates nothing. Its capacity is the receive buffer's: it does not grow.
 */
final class ReceivedByteBuf extends UnpooledDirectByteBuf {
    /** The message lent now, or null while the buffer is not lent out. */
    private LentMessage message;

    ReceivedByteBuf(ByteBufAllocator alloc, ByteBuffer slot) {
        super(alloc, slot, slot.capacity());
    }

    /** Lends this buffer out again over {@code m} (its previous message was released). */
    ReceivedByteBuf lend(LentMessage m) {
        resetRefCnt();
        message = m;
        setIndex(0, m.length());
        return this;
    }

    /** The last reference is gone: the receive buffer goes back to the endpoint (the memory is the endpoint's). */
    @Override
    protected void deallocate() {
        LentMessage m = message;
        message = null;
        if (m != null) m.release();
    }

    /**
     * The pipeline touches a message at each handler it passes (Netty's leak detection on): the lent message records
     * the hint when its group records sites, so a report of a buffer held too long names the last handler that got it.
     */
    @Override
    public ByteBuf touch(Object hint) {
        LentMessage m = message;
        if (m != null) m.touch(hint);
        return this;
    }

    @Override
    public ByteBuf capacity(int newCapacity) {
        if (newCapacity != capacity())
            throw new UnsupportedOperationException("a received buffer lies in its receive buffer: it cannot grow");
        return this;
    }
}
