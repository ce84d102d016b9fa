package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReference;

/**
 * How a {@link LinuxUdpLink} that takes coalesced datagrams ({@code UDP_GRO}) hands their packets out, in the order
 * they arrived, to whichever batch receives. One {@code recvmmsg} may bring more packets than a burst has slots (up to
 * {@link GroBatch#MESSAGES} messages of up to 64 packets each): the rest wait in that batch's landing areas
 * ({@link GroBatch}). They are older than anything still in the socket, so the next receive into <em>any</em> batch
 * hands them out first: the thread whose drive ended on its budget may not drive again soon (an application thread that
 * stops polling), and a thread that took the link over from a stalled one must not pass them by (its QPs would see a
 * gap and ask for them again). A batch's landing areas are used by one thread at a time, only ever tried: a thread that
 * finds them in use (their own thread is inside its receive, a takeover) takes nothing from them. A thread asleep in
 * the link's wait is woken when a receive leaves packets behind, and does not sleep while some wait.
 */
final class GroReceiver {
    private final LinuxUdpLink link;
    /** The batch whose last {@code recvmmsg} was handed out in part, or null. */
    private final AtomicReference<GroBatch> unfinished = new AtomicReference<>();
    /** The burst that single-datagram receives ({@link #receive(ByteBuffer)}) hand out one packet at a time. */
    private RxBatch singles;

    private int singlesNext, singlesCount;

    GroReceiver(LinuxUdpLink link) {
        this.link = link;
    }

    /** The landing areas of {@code batch}, made on its first receive. */
    static GroBatch of(RxBatch batch) {
        if (batch.linkState instanceof GroBatch g) return g;
        GroBatch g = new GroBatch(batch);
        batch.linkState = g;
        return g;
    }

    /**
     * Fills {@code batch} from slot 0: with what its own last {@code recvmmsg} left, else with what another batch's
     * left, else from a new {@code recvmmsg}.
     *
     * @return the packets in the batch now; 0 when none wait (or the batch's areas are in another thread's hands)
     */
    int receive(RxBatch batch) throws IOException {
        GroBatch g = of(batch);
        if (!g.enter()) {
            batch.drained = false; // a thread that took the link over hands its packets out now
            return 0;
        }
        try {
            if (!g.pending()) {
                int k = takeUnfinished(g, batch);
                if (k > 0) return k;
                g.prepare();
                int asked = g.messagesToAsk();
                int n = link.recvmmsg(g.headers, asked, batch);
                if (n == 0) {
                    g.foundEmpty();
                    return 0;
                }
                g.landed(n, asked);
            }
            int k = g.fill(batch);
            settle(g);
            batch.drained = g.emptiedSocket() && !g.pending();
            return k;
        } finally {
            g.exit();
            wakeIfLeft(g);
        }
    }

    /** Hands out into {@code batch} the packets another batch's receive left, when there are any and it can. */
    private int takeUnfinished(GroBatch own, RxBatch batch) {
        GroBatch other = unfinished.get();
        if (other == null || other == own || !other.enter()) return 0;
        try {
            int k = other.pending() ? other.fill(batch) : 0;
            settle(other);
            batch.drained = false; // the socket may hold more
            return k;
        } finally {
            other.exit();
            wakeIfLeft(other);
        }
    }

    /**
     * After the calling thread let go of {@code g}: packets left in it may have no other taker than a thread asleep in
     * the link's wait (the receive thread, once a poller's drive ended on its budget and nobody polls again), which is
     * woken then. The sleeper sets its flag before it looks ({@link #handsOutNow}), so one of the two sees the other.
     */
    private void wakeIfLeft(GroBatch g) {
        if (g.pending() && link.awaiting()) link.wakeup();
    }

    /**
     * Whether packets wait in a batch's landing areas that a receive could hand out now (no thread has them in hand):
     * the link's wait does not sleep then.
     */
    boolean handsOutNow() {
        GroBatch g = unfinished.get();
        return g != null && !g.inUse() && g.pending(); // pending() read after the holder's release of inUse
    }

    /** Records whether {@code g} still holds packets to hand out (its thread holds its areas). */
    private void settle(GroBatch g) {
        GroBatch u = unfinished.get(); // a look first: the usual answer (nothing left, none recorded) needs no write
        if (g.pending()) {
            if (u != g) unfinished.set(g);
        } else if (u == g) {
            unfinished.compareAndSet(g, null);
        }
    }

    /**
     * One packet into {@code b} (from its position; cut to what fits, as {@code recvfrom} cuts a datagram), for links
     * that wrap this one and receive packet by packet: a coalesced message is split as for a burst. A packet longer
     * than a slot is dropped here (a burst marks it {@link RxBatch#TRUNCATED}).
     *
     * @return its sender, or null when none waits
     */
    synchronized InetSocketAddress receive(ByteBuffer b) throws IOException {
        if (singles == null) singles = new RxBatch();
        while (true) {
            if (singlesNext >= singlesCount) {
                singlesCount = receive(singles);
                singlesNext = 0;
                if (singlesCount == 0) return null;
            }
            int i = singlesNext++, len = singles.lengths[i];
            if (len < 0) continue;
            int n = Math.min(len, b.remaining());
            MemorySegment.copy(singles.segments[i], 0, MemorySegment.ofBuffer(b), 0, n);
            b.position(b.position() + n);
            return singles.sources[i];
        }
    }
}
