package dev.jrdma.soft;

import static dev.jrdma.soft.ShmRingFile.CELLS;
import static dev.jrdma.soft.ShmRingFile.CELL_HEADER;
import static dev.jrdma.soft.ShmRingFile.C_LENGTH;
import static dev.jrdma.soft.ShmRingFile.C_STATE;
import static dev.jrdma.soft.ShmRingFile.H_CLAIMED;
import static dev.jrdma.soft.ShmRingFile.H_WAITING;
import static dev.jrdma.soft.ShmRingFile.INT;
import static dev.jrdma.soft.ShmRingFile.LONG;
import static dev.jrdma.soft.ShmRingFile.MAX_PACKET;
import static dev.jrdma.soft.ShmRingFile.SLOTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The receiving end of a device's same-host rings ({@link ShmRingFile}): takes the packets senders put in and copies
 * them into a receive burst ({@link RxBatch}), where they are checked like UDP datagrams.
 *
 * <p>The rings are written by other processes, so nothing read from them is trusted: the position to read next is this
 * process's own (never read from the file), a cell index is that position modulo the ring size, a length outside
 * 1..{@link ShmRingFile#MAX_PACKET} drops the cell (counted as {@code rx_shm_bad_cell}), a packet is copied out before
 * anything looks at it, so a sender rewriting a cell meanwhile changes nothing, and a slot is taken from only while its
 * owner is the one that proved its address over UDP ({@link ShmProof}, {@link #prove}): that address, not anything
 * written in the file, is the sender of its packets.
 *
 * <p>Two threads may take at once (a polling application thread and the receive thread, see {@link Transport}): each
 * claims the ready cells it takes by a compare-and-set of the slot's position, so a thread descheduled in the middle
 * of a copy holds up only the cells it claimed. Nothing is allocated, except the sender's address when a slot's
 * sender changes.
 */
final class ShmReceiver {
    private static final int ALL_SLOTS = (1 << SLOTS) - 1;
    /** One position per 128 bytes: the two taking threads do not share a cache line per slot. */
    private static final int PAD = 16;

    private final ShmRingFile ring;
    private final MemorySegment seg;
    private final Counter.Set counters;
    /** The next position to take, per slot. */
    private final AtomicLongArray heads = new AtomicLongArray(SLOTS * PAD);
    /** Per slot, the owner word of the sender that proved its address (0: none); published after {@link #provenSources}. */
    private final AtomicLongArray provenOwners = new AtomicLongArray(SLOTS);
    /** Per slot, the address and port that sender proved: the sender of every packet taken from the slot. */
    private final InetSocketAddress[] provenSources = new InetSocketAddress[SLOTS];
    /** The slot to look at first (fairness between senders; racy, any value will do). */
    private int firstSlot;

    ShmReceiver(ShmRingFile ring, Counter.Set counters) {
        this(ring, ring.segment, counters);
    }

    private ShmReceiver(ShmRingFile ring, MemorySegment seg, Counter.Set counters) {
        this.ring = ring;
        this.seg = seg;
        this.counters = counters;
    }

    /** A receiver without rings (its device's rings failed and could not be made again): no sender ever, nothing to take. */
    static ShmReceiver none(Counter.Set counters) {
        return new ShmReceiver(null, java.lang.foreign.Arena.ofAuto().allocate(ShmRingFile.HEADER), counters);
    }

    /** The file of these rings; null for {@link #none}. */
    ShmRingFile ring() {
        return ring;
    }

    /** The slots some sender has claimed (the word is the senders': only the slot bits count). */
    private int claimed() {
        return (int) INT.getAcquire(seg, H_CLAIMED) & ALL_SLOTS;
    }

    /** Each claimed slot's position, its sender's next position and the state of the cell at the position (tests, reports). */
    String describe() {
        StringBuilder sb = new StringBuilder();
        int c = claimed();
        for (int s = 0; s < SLOTS; s++) {
            if ((c & (1 << s)) == 0) continue;
            long h = heads.get(s * PAD);
            sb.append("slot ")
                    .append(s)
                    .append(": owner ")
                    .append(Long.toHexString((long) LONG.getVolatile(seg, ShmRingFile.slot(s))))
                    .append(" head ")
                    .append(h)
                    .append(" tail ")
                    .append((long) LONG.getVolatile(seg, ShmRingFile.slot(s) + ShmRingFile.S_TAIL))
                    .append(" state ")
                    .append((long) LONG.getVolatile(seg, ShmRingFile.cell(s, h) + C_STATE))
                    .append("; ");
        }
        return sb.toString();
    }

    /** Whether some sender has ever claimed a slot. */
    boolean hasSenders() {
        return claimed() != 0;
    }

    /** Whether slot {@code s}'s owner now is the sender that proved its address (else its cells wait, untaken). */
    private boolean proven(int s) {
        long owner = provenOwners.get(s);
        return owner != 0 && (long) LONG.getVolatile(seg, ShmRingFile.slot(s) + ShmRingFile.S_OWNER) == owner;
    }

    /**
     * A HELLO from {@code from} for slot {@code s} ({@link ShmProof}): the slot's owner is proven when the slot names
     * exactly that address and port and holds the HELLO's nonce and start. What an earlier owner left in the slot
     * before that start is dropped ({@code rx_shm_bad_cell}), so it is never taken as this sender's.
     *
     * @return whether the slot is proven now (the caller answers with an ACK)
     */
    boolean prove(int s, long nonce, long start, InetSocketAddress from) {
        if (s < 0 || s >= SLOTS || from.getAddress() == null) return false;
        long base = ShmRingFile.slot(s);
        long owner = (long) LONG.getVolatile(seg, base + ShmRingFile.S_OWNER);
        if (owner == 0
                || owner == -1
                || (long) LONG.getAcquire(seg, base + ShmRingFile.S_NONCE) != nonce
                || seg.get(ValueLayout.JAVA_LONG, base + ShmRingFile.S_START) != start) return false;
        IpAddress a = IpAddress.of(from.getAddress());
        if (seg.get(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_HI) != a.hi
                || seg.get(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_LO) != a.lo
                || seg.get(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_PORT) != from.getPort()) return false;
        if (provenOwners.get(s) == owner) return true; // a resent HELLO: answered again
        long h = heads.get(s * PAD);
        if (start - h < 0 || start - h > CELLS) return false; // a start no sender could have: spoilt
        if (!heads.compareAndSet(s * PAD, h, start)) return false; // racing with a take: the sender resends
        for (long p = h; p < start; p++) {
            counters.add(Counter.RX_SHM_BAD_CELL);
            LONG.setRelease(seg, ShmRingFile.cell(s, p) + C_STATE, p - (p & (CELLS - 1)) + CELLS); // the sender's again
        }
        provenSources[s] = from;
        provenOwners.set(s, owner);
        return true;
    }

    /** Whether the cell of {@code position} in slot {@code s} holds that position's packet. */
    private boolean ready(int s, long position) {
        long lap = position - (position & (CELLS - 1));
        return (long) LONG.getVolatile(seg, ShmRingFile.cell(s, position) + C_STATE) == lap + 1;
    }

    /** Whether a packet waits in some ring. */
    boolean anyReady() {
        int c = claimed();
        for (int s = 0; c != 0; s++, c >>>= 1) {
            if ((c & 1) != 0 && ready(s, heads.get(s * PAD)) && proven(s)) return true;
        }
        return false;
    }

    /** Says whether the receive thread sleeps (a sender that sees it rings the doorbell). */
    void waiting(boolean sleeping) {
        INT.setVolatile(seg, H_WAITING, sleeping ? 1 : 0);
    }

    /**
     * Takes what waits, up to the burst's capacity, into slots 0..n-1 of {@code batch}.
     *
     * @return n
     */
    int take(RxBatch batch) {
        int c = claimed();
        if (c == 0) return 0;
        int n = 0, first = firstSlot;
        firstSlot = (first + 1) & (SLOTS - 1);
        for (int k = 0; k < SLOTS && n < RxBatch.CAPACITY; k++) {
            int s = (first + k) & (SLOTS - 1);
            if ((c & (1 << s)) != 0) n = takeFrom(s, batch, n);
        }
        return n;
    }

    /** Takes the ready cells of slot {@code s} into {@code batch} from its slot {@code n} on; returns the new n. */
    private int takeFrom(int s, RxBatch batch, int n) {
        if (!proven(s)) return n;
        long h = heads.get(s * PAD);
        int room = RxBatch.CAPACITY - n, k = 0;
        while (k < room && ready(s, h + k)) k++;
        if (k == 0 || !heads.compareAndSet(s * PAD, h, h + k)) return n; // none, or the other thread took them
        for (long p = h; p < h + k; p++) {
            int len = copyOut(s, p, batch.segments[n], 0, batch.sources, n);
            if (len > 0) {
                batch.ecn[n] = Ecn.NOT_ECT;
                batch.lengths[n++] = len;
            }
        }
        counters.add(Counter.RX_SHM_PACKETS, k);
        return n;
    }

    /**
     * Takes one packet into {@code b} (from its position, which moves past it): the single-datagram receive of
     * {@link Link#receive(java.nio.ByteBuffer)}, for links wrapped around this one (the device itself takes bursts).
     *
     * @return its sender, or null when none waits
     */
    InetSocketAddress takeOne(java.nio.ByteBuffer b) {
        InetSocketAddress[] from = new InetSocketAddress[1];
        MemorySegment dst = MemorySegment.ofBuffer(b);
        int c = claimed();
        for (int s = 0; c != 0; s++, c >>>= 1) {
            if ((c & 1) == 0 || !proven(s)) continue;
            long h;
            while (ready(s, h = heads.get(s * PAD))) {
                if (!heads.compareAndSet(s * PAD, h, h + 1)) continue;
                counters.add(Counter.RX_SHM_PACKETS);
                int len = copyOut(s, h, dst, b.position(), from, 0);
                if (len > 0) {
                    b.position(b.position() + len);
                    return from[0];
                }
            }
        }
        return null;
    }

    /**
     * Copies the packet of the claimed position {@code p} of slot {@code s} to {@code dst} at {@code at}, puts its
     * sender in {@code from[index]} and gives the cell back to the sender. The length is read once, so the copy and
     * the length returned agree even if the sender rewrites the cell meanwhile (it spoils only its own packet).
     *
     * @return the packet's length, or -1 (counted) when the cell's length or port is out of range or it does not fit
     */
    private int copyOut(int s, long p, MemorySegment dst, long at, InetSocketAddress[] from, int index) {
        long cell = ShmRingFile.cell(s, p);
        int len = seg.get(ValueLayout.JAVA_INT, cell + C_LENGTH);
        InetSocketAddress source =
                len >= 1 && len <= MAX_PACKET && at + len <= dst.byteSize() ? provenSources[s] : null;
        if (source == null) {
            counters.add(Counter.RX_SHM_BAD_CELL);
            len = -1;
        } else {
            MemorySegment.copy(seg, cell + CELL_HEADER, dst, at, len);
            from[index] = source;
        }
        // the cell is the sender's again, for the next lap
        LONG.setRelease(seg, cell + C_STATE, p - (p & (CELLS - 1)) + CELLS);
        return len;
    }
}
