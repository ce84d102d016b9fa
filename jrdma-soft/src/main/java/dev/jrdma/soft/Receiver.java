package dev.jrdma.soft;

import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.RocePacket;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one driving thread receives and handles packets with ({@link ProgressEngine}): its own receive buffer and
 * packet view, and the QPs that owe an ACK at the end of its burst. The receive thread has one; polling application
 * threads share the other, one at a time (a lock only ever tried). Two receivers, not one: a thread can be
 * descheduled in the middle of a drive (on a loaded machine for hundreds of milliseconds; under emulation, where the
 * guest's vCPUs take turns, for tens of milliseconds again and again) while it owns the link, and the other must
 * still be able to take the packets then (it takes over once the holder has made no progress for
 * {@link ProgressEngine#POLL_QUIET_NANOS}, counted in {@code rx_takeovers}); otherwise the peer's retransmissions all
 * go unanswered and its requests fail with RETRY_EXC_ERR.
 */
final class Receiver {
    final AtomicBoolean lock = new AtomicBoolean();
    /** Counts this receiver's drives and the packets they handled (release stores by its owner; the other receiver's thread reads it). */
    final AtomicLong progress = new AtomicLong();
    /** The other receiver's {@link #progress} when this one last found the link owned by it, and since when it has not moved. */
    long otherProgress = -1, otherStillSince;
    /**
     * The packets of {@link #batch} received and the next one to handle ({@code count << 32 | next}): the owner and a
     * thread that takes the link over from it claim packets here, one at a time and in order.
     */
    final AtomicLong cursor = new AtomicLong();
    /**
     * Threads that took the link over from this receiver's thread and may still read its batch: its thread does not
     * receive into the batch again until they are done (it can own the link again before then, by taking it back
     * from one of them that stalls in turn).
     */
    final AtomicInteger borrowers = new AtomicInteger();

    /**
     * The packet this receiver's thread is handling now, {@code batchTag << 32 | slot} (the tag says whose batch:
     * a taker handles another receiver's), or 0 between packets: a thread that takes the link over handles that
     * packet again first, so its QP gets it before the later ones (RC drops the second copy as a duplicate).
     */
    final AtomicLong inHand = new AtomicLong();
    /** This receiver's tag in {@link #inHand}. */
    final long tag;

    /** This receiver's thread is inside the link's receive call ({@link ProgressEngine#RECEIVE_STALL_NANOS}). */
    volatile boolean inReceive;
    /** The thread driving with this receiver, or null (written by that thread only). */
    Thread owner;
    /** Where bursts are received: preallocated slots, and the link's native message headers. */
    final RxBatch batch = new RxBatch();

    final Icrc icrc = new Icrc();
    final RocePacket pkt = new RocePacket();
    /** The sender of the last packet received and its address: the JDK hands back the same object while the sender stays the same. */
    private InetSocketAddress lastFrom;

    private IpAddress lastSender;
    /** The ECN field of the IP header of the packet being handled ({@link Ecn}; {@link Ecn#NOT_ECT} when the link cannot see it). */
    int ecn;
    /** The ACKs this receiver's drives owe. */
    final OwedAcks acks;
    /** Drives with this receiver so far (stamps the ACKs it leaves owed). */
    long drives;
    /** Scratch for a pass of READ-response turns ({@link ReplyTurns#run}). */
    SoftQp[] turnsRunning = new SoftQp[16];
    /** Packets handled with this receiver (written by its owner only; racy reads for counters and tests). */
    long handled;
    /** The last drive left QPs wanting another turn (READ responses still to send). */
    boolean turnsLeft;

    Receiver(long tag, OwedAcks acks) {
        this.tag = tag;
        this.acks = acks;
    }

    /**
     * Claims the next packet of this receiver's batch: its index, or -1 when none is left, or when {@code taker} is
     * false and another thread has taken the batch over ({@link #seal}): from then on only that thread claims, so
     * the stalled one, back on a CPU, handles no packet after the ones the taker handled.
     */
    int claim(boolean taker) {
        while (true) {
            long v = cursor.get();
            if (v < 0 && !taker) return -1;
            int count = (int) (v >>> 32) & 0x7fff_ffff, next = (int) v;
            if (next >= count) return -1;
            if (cursor.compareAndSet(v, v + 1)) return next;
        }
    }

    /** A thread took the link over from this receiver's: the rest of the batch is the taker's ({@link #claim}). */
    void seal() {
        long v;
        do v = cursor.get();
        while (v >= 0 && !cursor.compareAndSet(v, v | Long.MIN_VALUE));
    }

    /** The address of {@code from}: made once per change of sender, so a steady stream from one peer allocates nothing. */
    IpAddress sender(InetSocketAddress from) {
        if (from != lastFrom) {
            lastSender = IpAddress.of(from.getAddress());
            lastFrom = from;
        }
        return lastSender;
    }
}
