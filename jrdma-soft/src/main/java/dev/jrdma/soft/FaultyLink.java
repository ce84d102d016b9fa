package dev.jrdma.soft;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;

/**
 * A {@link Link} that damages what it sends as its {@link Faults} say: drops, holds back (reorders), duplicates,
 * corrupts and delays packets, then hands the rest to the link it wraps. Receiving is the wrapped link's.
 *
 * <p>Each decision is a function of the seed, the packet's bytes and how often this link has sent those same bytes
 * before (a retransmission is a new draw, not the same fate again), so a seed reproduces the same damage whatever
 * order the device's threads send in. Held-back and delayed packets are sent by a thread of this link. Test
 * equipment: it copies every packet it holds, corrupts or duplicates; the plain path of the device never has it.
 *
 * <p>Tests can also make the next receive or send throw ({@link #failNextReceive}, {@link #failNextSend}): a bug in
 * the layer below the engines, which the device's loops must survive.
 */
final class FaultyLink implements Link {
    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");
    /** How many distinct recent packets the occurrence counts remember (a retransmission comes within this many). */
    private static final int SEEN = 1 << 14;
    /** The leading bytes of a packet its draw reads (and its last 8). */
    private static final int HEAD = 48;

    private final Link inner;
    private final Faults faults;
    private final String name;
    private final Clock clock;
    /**
     * How often each recent packet (by the hash of its bytes) was sent before, the least recently sent forgotten first.
     * Not a table indexed by the hash: two packets of one go-back-N window that shared a slot evicted each other at every
     * resend, so each was sent as if for the first time, met the same fate again and again, and a dropped one was
     * dropped on every retry until the requester gave up (RETRY_EXC_ERR at 1% loss).
     */
    private final LinkedHashMap<Long, Integer> seen = new LinkedHashMap<>(2 * SEEN, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Integer> eldest) {
            return size() > SEEN;
        }
    };

    private final DelayQueue<Held> held = new DelayQueue<>();
    private Thread sender;
    private volatile boolean closed;
    private final AtomicReference<Throwable> receiveFailure = new AtomicReference<>(),
            sendFailure = new AtomicReference<>();
    private volatile BiConsumer<ByteBuffer, InetSocketAddress> tap;

    final AtomicLong packets = new AtomicLong(),
            dropped = new AtomicLong(),
            reordered = new AtomicLong(),
            duplicated = new AtomicLong(),
            corrupted = new AtomicLong(),
            delayed = new AtomicLong();

    FaultyLink(Link inner, Faults faults, String name, Clock clock) {
        this.inner = inner;
        this.clock = clock;
        this.faults = faults;
        this.name = name;
        LOG.log(System.Logger.Level.INFO, "soft device " + name + ": injecting faults " + faults);
    }

    Faults faults() {
        return faults;
    }

    /** The link this one damages packets for. */
    Link inner() {
        return inner;
    }

    /** Sees every packet offered to this link, before any damage (tests: valid packets to mutate). */
    void tap(BiConsumer<ByteBuffer, InetSocketAddress> t) {
        tap = t;
    }

    /** The next {@link #receive} throws {@code t} (a RuntimeException or an Error). */
    void failNextReceive(Throwable t) {
        receiveFailure.set(t);
    }

    /** The next {@link #send} throws {@code t} (a RuntimeException or an Error). */
    void failNextSend(Throwable t) {
        sendFailure.set(t);
    }

    /** What the link did so far, for reports. */
    String summary() {
        return "packets " + packets + ", dropped " + dropped + ", reordered " + reordered + ", duplicated " + duplicated
                + ", corrupted " + corrupted + ", delayed " + delayed;
    }

    @Override
    public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        throwIfSet(sendFailure);
        long r = decide(b, to);
        if (r == DROPPED) {
            b.position(b.limit());
            return true;
        }
        if (r == UNTOUCHED) {
            if (!sendNow(b, to)) return false;
            b.position(b.limit());
            return true;
        }
        return damage(b, to, r);
    }

    /**
     * Sends a batch as the wrapped link would (one {@code sendmmsg}, UDP segmentation: the path the device takes without
     * faults, so a lossy run costs the device what the loss costs, not one system call per packet): the packets that
     * meet no fault go on in runs through the wrapped link's batch send; the others are dropped or damaged one by one.
     */
    @Override
    public int send(TxBatch batch, int from, int n, InetSocketAddress to) throws IOException {
        throwIfSet(sendFailure);
        int run = from, end = from + n;
        for (int i = from; i < end; i++) {
            ByteBuffer b = batch.buffers[i];
            b.limit(batch.lengths[i]).position(0);
            long r;
            try {
                r = decide(b, to);
            } finally {
                b.clear();
            }
            if (r == UNTOUCHED) continue;
            if (i > run) { // the untouched ones before it first, in order
                int sent = inner.send(batch, run, i - run, to);
                if (sent < i - run) return run + sent - from;
            }
            run = i + 1;
            if (r == DROPPED) continue;
            b.limit(batch.lengths[i]).position(0);
            try {
                if (!damage(b, to, r)) return i - from;
            } finally {
                b.clear();
            }
        }
        if (end > run) {
            int sent = inner.send(batch, run, end - run, to);
            if (sent < end - run) return run + sent - from;
        }
        return n;
    }

    /** {@link #decide}'s answer for a packet that is dropped. */
    private static final long DROPPED = 0;
    /** {@link #decide}'s answer for a packet that goes on unchanged, now. */
    private static final long UNTOUCHED = 1;

    /**
     * Draws the fate of the packet between position and limit of {@code b}: {@link #DROPPED}, {@link #UNTOUCHED}, or
     * the draw for {@link #damage} (held back, duplicated, corrupted or delayed).
     */
    private long decide(ByteBuffer b, InetSocketAddress to) {
        BiConsumer<ByteBuffer, InetSocketAddress> t = tap;
        if (t != null) t.accept(b.duplicate(), to);
        packets.incrementAndGet();
        long r = draw(b);
        if (unit(r, 1) < faults.drop()) {
            dropped.incrementAndGet();
            return DROPPED;
        }
        if (unit(r, 2) >= faults.reorder()
                && unit(r, 3) >= faults.duplicate()
                && unit(r, 4) >= faults.corrupt()
                && faults.delayNanos() <= 0) return UNTOUCHED;
        return r == DROPPED || r == UNTOUCHED ? r + 2 : r; // never mistaken for an answer (the draw is a hash)
    }

    /** Sends the packet in {@code b} (not dropped) as draw {@code r} says: corrupted, duplicated, held back or delayed. */
    private boolean damage(ByteBuffer b, InetSocketAddress to, long r) throws IOException {
        // one draw, split into independent uniform numbers, one per decision
        double pReorder = unit(r, 2), pDup = unit(r, 3), pCorrupt = unit(r, 4);
        ByteBuffer out = b;
        if (pCorrupt < faults.corrupt()) {
            out = copy(b);
            int bit = (int) Long.remainderUnsigned(mix(r + 5), (long) out.remaining() * 8);
            out.put(bit >>> 3, (byte) (out.get(bit >>> 3) ^ (1 << (bit & 7))));
            corrupted.incrementAndGet();
        }
        if (pDup < faults.duplicate()) {
            duplicated.incrementAndGet();
            hold(copy(out), to, faults.delayNanos() + spread(r + 6, faults.reorderNanos() / 4));
        }
        if (pReorder < faults.reorder()) {
            reordered.incrementAndGet();
            hold(out == b ? copy(b) : out, to, faults.delayNanos() + spread(r + 7, faults.reorderNanos()));
        } else if (faults.delayNanos() > 0) {
            delayed.incrementAndGet();
            hold(out == b ? copy(b) : out, to, faults.delayNanos());
        } else if (!sendNow(out, to)) {
            return false;
        }
        b.position(b.limit());
        return true;
    }

    private boolean sendNow(ByteBuffer b, InetSocketAddress to) throws IOException {
        return inner.send(b, to);
    }

    @Override
    public InetSocketAddress receive(ByteBuffer b) throws IOException {
        throwIfSet(receiveFailure);
        return inner.receive(b);
    }

    /** Receiving is the wrapped link's, a burst per system call as without faults. */
    @Override
    public int receive(RxBatch batch) throws IOException {
        throwIfSet(receiveFailure);
        return inner.receive(batch);
    }

    @Override
    public void prepare(RxBatch batch) {
        inner.prepare(batch);
    }

    @Override
    public boolean readable() throws IOException {
        return inner.readable();
    }

    @Override
    public void await() throws IOException {
        inner.await();
    }

    @Override
    public boolean await(long timeoutNanos) throws IOException {
        return inner.await(timeoutNanos);
    }

    @Override
    public void expectPeer(InetSocketAddress peer) {
        inner.expectPeer(peer);
    }

    @Override
    public void forgetPeer(InetSocketAddress peer) {
        inner.forgetPeer(peer);
    }

    @Override
    public void wakeup() {
        inner.wakeup();
    }

    @Override
    public void close() {
        closed = true;
        Thread s;
        synchronized (this) {
            s = sender;
        }
        if (s != null) {
            s.interrupt();
            try {
                s.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        inner.close();
    }

    private static void throwIfSet(AtomicReference<Throwable> r) {
        Throwable t = r.getAndSet(null);
        if (t instanceof RuntimeException e) throw e;
        if (t instanceof Error e) throw e;
    }

    // ---- decisions ---------------------------------------------------------------------------------

    /**
     * The random draw of this packet: seed, bytes, and the how-many-th time these bytes are sent. The bytes are its
     * length, its first {@link #HEAD} (the headers: QPN, PSN, opcode, the RETH) and its last 8 (the ICRC, a CRC of all
     * of it, or the authenticated mode's tag): a hash of every byte cost ~5 us per 4 KiB packet, as much as the device
     * spends sending it.
     */
    private long draw(ByteBuffer b) {
        long h = faults.seed() * 0x9E3779B97F4A7C15L ^ b.remaining();
        int p = b.position(), l = b.limit(), head = Math.min(l, p + HEAD);
        for (int i = p; i < head; i++) h = (h ^ (b.get(i) & 0xFF)) * 0x100000001B3L;
        for (int i = Math.max(head, l - 8); i < l; i++) h = (h ^ (b.get(i) & 0xFF)) * 0x100000001B3L;
        int n;
        synchronized (seen) {
            n = seen.merge(h, 0, (was, zero) -> was + 1);
        }
        return mix(h + n * 0xD1B54A32D192ED03L);
    }

    /** The {@code k}-th uniform number in [0, 1) derived from draw {@code r}. */
    private static double unit(long r, int k) {
        return (mix(r + k * 0x9E3779B97F4A7C15L) >>> 11) * 0x1.0p-53;
    }

    private static long spread(long r, long max) {
        return max <= 0 ? 0 : Long.remainderUnsigned(mix(r), max + 1);
    }

    /** SplitMix64's finaliser. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static ByteBuffer copy(ByteBuffer b) {
        ByteBuffer c = ByteBuffer.allocate(b.remaining());
        c.put(b.duplicate()).flip();
        return c;
    }

    // ---- held-back packets ------------------------------------------------------------------------

    private record Held(ByteBuffer packet, InetSocketAddress to, long due, Clock clock) implements Delayed {
        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - clock.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            return Long.compare(due, ((Held) o).due);
        }
    }

    private void hold(ByteBuffer packet, InetSocketAddress to, long nanos) {
        held.add(new Held(packet, to, clock.nanoTime() + nanos, clock));
        synchronized (this) {
            if (sender == null && !closed) {
                sender = Thread.ofPlatform()
                        .daemon()
                        .name("jrdma-soft-faults-" + name)
                        .start(this::sendHeld);
            }
        }
    }

    private void sendHeld() {
        while (!closed) {
            try {
                Held h = held.take();
                for (int tries = 0; tries < 1000 && !sendNow(h.packet, h.to); tries++) Thread.onSpinWait();
            } catch (InterruptedException e) {
                return;
            } catch (IOException | RuntimeException e) {
                if (closed) return; // the socket closed under a late packet: it is lost, as on a wire
            }
        }
    }
}
