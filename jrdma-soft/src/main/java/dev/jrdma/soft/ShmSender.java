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
import static dev.jrdma.soft.ShmRingFile.S_OWNER;
import static dev.jrdma.soft.ShmRingFile.S_TAIL;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.security.SecureRandom;

/**
 * One device's way into a peer's same-host rings ({@link ShmRingFile}): the slot it claimed there, written as the one
 * producer of that ring. The device's threads send under this object's lock (one producer: the ring is single-producer
 * across processes); copying one packet is all that happens under it.
 */
final class ShmSender implements AutoCloseable {
    /** What {@link #send} did. */
    enum Result {
        /** In the ring. */
        SENT,
        /** In the ring, and the receiver sleeps: ring its doorbell. */
        SENT_WAKE,
        /** The ring is full: try again. */
        FULL,
        /** Not for this ring (too long for a cell): send it over UDP. */
        TOO_LONG,
        /** The receiver closed its rings, or they are not usable: send over UDP and forget this sender. */
        GONE,
        /** The receiver has not answered this sender's HELLO yet ({@link ShmProof}): send over UDP meanwhile. */
        UNPROVEN
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    final ShmRingFile peer;
    private final MemorySegment seg;
    private final ByteBuffer buf;
    private final int slot;
    private final long slotBase;
    /** This sender's mark in the slot's owner word: the process id and a random part (devices of one process differ). */
    private final long token;
    /** The random number of this claim, which the HELLO and the receiver's ACK carry ({@link ShmProof}). */
    final long nonce;
    /** The position this sender started at (the receiver drops what an earlier owner of the slot left before it). */
    final long start;
    /** The next position to write (this producer's own; the shared copy only tells a later owner of the slot). */
    private long tail;

    private boolean gone;
    /** The receiver answered the HELLO: the ring is its device's, and it takes this slot's cells as ours. */
    private volatile boolean proven;

    private ShmSender(ShmRingFile peer, int slot, long token, long tail, long nonce) {
        this.peer = peer;
        this.seg = peer.segment;
        this.buf = peer.buffer;
        this.slot = slot;
        this.slotBase = ShmRingFile.slot(slot);
        this.token = token;
        this.tail = tail;
        this.start = tail;
        this.nonce = nonce;
    }

    int slot() {
        return slot;
    }

    /** The receiver's ACK for this claim came, from the peer's own port: cells go into the ring from now on. */
    void proven() {
        proven = true;
    }

    boolean isProven() {
        return proven;
    }

    /**
     * Whether the packet put in last still waits in its cell (the receiver has not taken it); false before the first
     * and once gone. Racy and without the lock: a polling thread asks, and any recent answer will do.
     */
    boolean lastWaiting() {
        long t = tail - 1;
        if (gone || t - start < 0) return false;
        try {
            long lap = t - (t & (CELLS - 1));
            return (long) LONG.getAcquire(seg, ShmRingFile.cell(slot, t) + C_STATE) == lap + 1;
        } catch (RuntimeException | InternalError e) {
            return false; // unmapped or truncated under us: the next send finds out
        }
    }

    /**
     * Claims a free slot of {@code peer} (or one whose owner process died) for the device on {@code source:sourcePort};
     * null when every slot is taken.
     */
    static ShmSender claim(ShmRingFile peer, IpAddress source, int sourcePort) {
        long token = (ProcessHandle.current().pid() << 24) | (1 + RANDOM.nextInt((1 << 24) - 1));
        MemorySegment seg = peer.segment;
        for (int pass = 0; pass < 2; pass++) {
            for (int s = 0; s < SLOTS; s++) {
                long at = ShmRingFile.slot(s) + S_OWNER;
                long owner = (long) LONG.getVolatile(seg, at);
                boolean free = owner == 0 || pass == 1 && !ShmRingFile.alive(owner >>> 24);
                if (!free || !LONG.compareAndSet(seg, at, owner, token)) continue;
                // continue where the slot's last owner stopped; its position must name a free cell, else the slot is
                // spoilt
                long tail = (long) LONG.getVolatile(seg, ShmRingFile.slot(s) + S_TAIL);
                long cell = ShmRingFile.cell(s, tail);
                long lap = tail - (tail & (CELLS - 1)), state = (long) LONG.getVolatile(seg, cell + C_STATE);
                if (state != lap && state != lap - CELLS + 1) {
                    LONG.setVolatile(seg, at, -1L); // unusable until the receiver makes a new file
                    continue;
                }
                long base = ShmRingFile.slot(s), nonce = RANDOM.nextLong();
                seg.set(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_HI, source.hi);
                seg.set(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_LO, source.lo);
                seg.set(ValueLayout.JAVA_LONG, base + ShmRingFile.S_SOURCE_PORT, sourcePort);
                seg.set(ValueLayout.JAVA_LONG, base + ShmRingFile.S_START, tail);
                LONG.setRelease(seg, base + ShmRingFile.S_NONCE, nonce);
                INT.getAndBitwiseOr(seg, H_CLAIMED, 1 << s);
                return new ShmSender(peer, s, token, tail, nonce);
            }
        }
        return null;
    }

    /** Puts the packet between position and limit of {@code b} into the ring (position moves to limit when it is in). */
    synchronized Result send(ByteBuffer b) {
        if (gone) return Result.GONE;
        try {
            return put(b);
        } catch (RuntimeException | InternalError e) {
            // the file was truncated under the mapping (a fault), or this process unmapped it: not a ring any more
            return gone();
        }
    }

    private Result put(ByteBuffer b) {
        if (!peer.isOpen()) return gone();
        if (!proven) return Result.UNPROVEN;
        int len = b.remaining();
        if (len > MAX_PACKET) return Result.TOO_LONG;
        long t = tail;
        long cell = ShmRingFile.cell(slot, t);
        long lap = t - (t & (CELLS - 1));
        long state = (long) LONG.getAcquire(seg, cell + C_STATE);
        if (state != lap) {
            // the receiver has not taken the packet of the last lap yet: full (a state from no lap at all: spoilt)
            return state == lap - CELLS + 1 ? Result.FULL : gone();
        }
        seg.set(ValueLayout.JAVA_INT, cell + C_LENGTH, len);
        buf.put((int) (cell + CELL_HEADER), b, b.position(), len);
        // volatile, not release: the read of the waiting word below must not move before it (the receiver sets that
        // word, then looks at this one)
        LONG.setVolatile(seg, cell + C_STATE, lap + 1);
        tail = t + 1;
        LONG.setRelease(seg, slotBase + S_TAIL, t + 1);
        b.position(b.limit());
        if ((int) INT.getVolatile(seg, H_WAITING) != 0 && INT.compareAndSet(seg, H_WAITING, 1, 0))
            return Result.SENT_WAKE;
        return Result.SENT;
    }

    /** The doorbell could not be sent: the next packet rings it again (the receiver may sleep still). */
    synchronized void rearmDoorbell() {
        try {
            if (!gone && peer.isOpen()) INT.setVolatile(seg, H_WAITING, 1);
        } catch (RuntimeException | InternalError e) {
            gone();
        }
    }

    private Result gone() {
        gone = true;
        return Result.GONE;
    }

    /** Whether this sender is of no more use (its receiver closed): the caller looks for the peer's rings again. */
    boolean isGone() {
        try {
            return gone || !peer.isOpen();
        } catch (RuntimeException | InternalError e) {
            return true;
        }
    }

    /**
     * Whether the peer's ring is still its receiver's live ring ({@link ShmRingFile#stillCurrent}); marks this sender
     * gone when not. System calls: asked now and then.
     */
    synchronized boolean checkPeer() {
        if (!gone && !peer.stillCurrent()) gone = true;
        return !gone;
    }

    /**
     * Gives the slot back and unmaps the peer's file. The receiver stops looking at the slot (its bit in the claimed
     * word goes first, so that a sender that claims the slot next sets it again after this one cleared it); what this
     * sender left in it untaken is dropped when the next owner proves its claim.
     */
    @Override
    public synchronized void close() {
        try {
            if (peer.isOpen() && (long) LONG.getVolatile(seg, slotBase + S_OWNER) == token) {
                INT.getAndBitwiseAnd(seg, H_CLAIMED, ~(1 << slot));
                if (!LONG.compareAndSet(seg, slotBase + S_OWNER, token, 0L))
                    INT.getAndBitwiseOr(seg, H_CLAIMED, 1 << slot); // not ours after all
            }
        } catch (RuntimeException | InternalError e) {
            // truncated: nothing to give back
        }
        gone = true;
        try {
            peer.close();
        } catch (RuntimeException e) {
            // another thread reads the mapping at this moment (isGone, lastWaiting): it stays mapped (a QP's destroy or
            // new path, which gives slots back, must not fail for it)
        }
    }

    @Override
    public String toString() {
        return "slot " + slot + " of " + peer.path;
    }
}
