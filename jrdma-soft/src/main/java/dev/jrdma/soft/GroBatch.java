package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What one {@link RxBatch} receives through when its {@link LinuxUdpLink} takes coalesced datagrams ({@code UDP_GRO}):
 * the kernel may hand several datagrams of one flow as one message of up to 64 KiB, with their segment size in a
 * {@code UDP_GRO} control message (every segment that size, the last one maybe shorter). So each message lands in a
 * 64 KiB area of its own ({@link #MESSAGES} per {@code recvmmsg}) and is split by the segment size into the batch's
 * packet slots, one copy per packet, except the first message's when it is one packet: it lands in slot 0 itself (a
 * ping-pong's packets come one per call); what does not fit the batch's slots waits for the next receive
 * ({@link GroReceiver} hands it out first, into whichever batch receives next). A message without the control message
 * is one datagram. Nothing is allocated per burst.
 *
 * <p>What a peer can send reaches this code, so nothing in a message is trusted beyond what the kernel guarantees: the
 * kernel coalesces only datagrams of one flow (one sender's address and port) with the same IP header fields (TOS and
 * so the ECN field, TTL), all of the segment size but the last, which may be shorter. A split never crosses a
 * message's end, a segment longer than a slot, a message cut by its landing area and one whose control messages were
 * cut ({@code MSG_CTRUNC}: its segment size may be missing) are each marked {@link RxBatch#TRUNCATED} (a counted drop).
 */
final class GroBatch {
    /** Messages per {@code recvmmsg}; each gets a 64 KiB landing area (512 KiB per batch). */
    static final int MESSAGES = 8;
    /** The largest message the kernel hands out (a UDP datagram, or a coalesced run of them). */
    static final int MESSAGE_BYTES = 1 << 16;
    /** Room for a UDP_GRO and a TOS/traffic class control message (24 bytes each on LP64). */
    private static final int CONTROL = 64;

    static final int SOL_UDP = 17, UDP_GRO = 104;
    private static final int MSG_CTRUNC = 0x08;
    final MemorySegment land, headers;
    /** Slot 0 of the batch these areas belong to: where each {@code recvmmsg}'s first message lands (its start). */
    private final MemorySegment first;
    /**
     * The last {@code recvmmsg}'s first message is one packet and lies in {@link #first} (else, coalesced, it was
     * copied whole into its landing area, to be split from there).
     */
    private boolean firstInSlot;

    private final MemorySegment names, controls;
    private final SockaddrCache sources = new SockaddrCache();

    // the messages of the last recvmmsg: their length (TRUNCATED when cut), segment size (0: one datagram), sender, ECN
    private final int[] length = new int[MESSAGES], segment = new int[MESSAGES];
    private final InetSocketAddress[] from = new InetSocketAddress[MESSAGES];
    private final byte[] ecn = new byte[MESSAGES];
    private int messages;
    /** Headers the last {@code recvmmsg} wrote (their lengths to reset before the next one: {@link #prepare}). */
    private int filled;
    /** The next packet to hand out: message {@link #current}, at {@link #offset} in it. */
    private int current, offset;
    /**
     * The last {@code recvmmsg} filled fewer messages than it could (the socket was empty then), or, having asked for one
     * ({@link #single}), found it right after an empty one: a datagram that came alone, taken as the socket's last.
     */
    private boolean emptiedSocket;
    /**
     * The next {@code recvmmsg} asks for one message: the last datagram came alone (a ping-pong's every packet). Asked
     * for several, the kernel tries the socket again after the first, a second receive that finds it empty (~0.1 us of
     * a veth ping-pong's half round trip, measured with C sockets: jrdma-bench/README.md). Two non-empty receives in a
     * row are a burst: back to {@link #MESSAGES}.
     */
    private boolean single;
    /** The last {@code recvmmsg} gave a message (it did not find the socket empty). */
    private boolean gotLast;
    /** Held by the thread that receives into or hands out of these areas: one at a time, only ever tried. */
    private final AtomicBoolean inUse = new AtomicBoolean();

    /** Coalesced messages received (several datagrams in one; tests and reports). */
    long coalesced;

    /**
     * The landing areas of {@code batch}: the first message of each {@code recvmmsg} lands in the batch's slot 0 (its
     * first {@link RxBatch#SLOT} bytes; what is longer goes on in its landing area), so a datagram that came alone, a
     * ping-pong's every packet, is handed out where it landed, without a copy ({@link #landed}).
     */
    GroBatch(RxBatch batch) {
        Arena arena = Arena.ofAuto();
        first = batch.segments[0];
        land = arena.allocate((long) MESSAGE_BYTES * MESSAGES, 4096);
        headers = arena.allocate((long) LinuxUdpLink.MMSGHDR * MESSAGES, 8);
        MemorySegment iovecs = arena.allocate((long) LinuxUdpLink.IOVEC * (MESSAGES + 1), 8);
        names = arena.allocate((long) LinuxUdpLink.SOCKADDR * MESSAGES, 8);
        controls = arena.allocate((long) CONTROL * MESSAGES, 8);
        for (int i = 0; i < MESSAGES; i++) {
            // message 0: two iovecs (slot 0, then the rest of its landing area); message i > 0: iovec i + 1
            int parts = i == 0 ? 2 : 1;
            MemorySegment iov =
                    iovecs.asSlice((long) (i == 0 ? 0 : i + 1) * LinuxUdpLink.IOVEC, (long) parts * LinuxUdpLink.IOVEC);
            long area = (long) i * MESSAGE_BYTES;
            if (i == 0) {
                iov.set(ValueLayout.ADDRESS, 0, first);
                iov.set(ValueLayout.JAVA_LONG, 8, RxBatch.SLOT);
                iov.set(ValueLayout.ADDRESS, 16, land.asSlice(RxBatch.SLOT, MESSAGE_BYTES - RxBatch.SLOT));
                iov.set(ValueLayout.JAVA_LONG, 24, MESSAGE_BYTES - RxBatch.SLOT);
            } else {
                iov.set(ValueLayout.ADDRESS, 0, land.asSlice(area, MESSAGE_BYTES));
                iov.set(ValueLayout.JAVA_LONG, 8, MESSAGE_BYTES);
            }
            MemorySegment h = headers.asSlice((long) i * LinuxUdpLink.MMSGHDR, LinuxUdpLink.MMSGHDR);
            h.set(
                    ValueLayout.ADDRESS,
                    LinuxUdpLink.MSG_NAME,
                    names.asSlice((long) i * LinuxUdpLink.SOCKADDR, LinuxUdpLink.SOCKADDR));
            h.set(ValueLayout.ADDRESS, LinuxUdpLink.MSG_IOV, iov);
            h.set(ValueLayout.JAVA_LONG, LinuxUdpLink.MSG_IOVLEN, parts);
            h.set(ValueLayout.ADDRESS, LinuxUdpLink.MSG_CONTROL, controls.asSlice((long) i * CONTROL, CONTROL));
        }
        filled = MESSAGES;
        prepare();
    }

    /** Whether packets of the last {@code recvmmsg} are still to be handed out. */
    boolean pending() {
        return current < messages;
    }

    /** Whether the last {@code recvmmsg} found the socket empty (it filled fewer messages than it asked for). */
    boolean emptiedSocket() {
        return emptiedSocket;
    }

    /** Takes these areas for the calling thread; false when another thread has them (nothing is waited for). */
    boolean enter() {
        return inUse.compareAndSet(false, true);
    }

    /** Whether a thread has these areas now. */
    boolean inUse() {
        return inUse.get();
    }

    /**
     * Gives these areas back (after {@link #enter}). With packets left to hand out a full fence: the thread then looks
     * whether the link's waiter must be woken ({@link GroReceiver}), and that waiter looks at {@link #inUse} after it
     * said it waits; with none left nobody needs to see the release at once (a busy poller's empty receive is cheaper).
     */
    void exit() {
        if (pending()) inUse.set(false);
        else inUse.setRelease(false);
    }

    /**
     * Resets the in/out lengths of the headers the last {@code recvmmsg} filled (the kernel writes only those, and
     * the next one's if a failure cut the call short in it): an empty poll, a busy poller's usual call, rewrites one.
     */
    void prepare() {
        for (int i = 0, end = Math.min(filled + 1, MESSAGES); i < end; i++) {
            long at = (long) i * LinuxUdpLink.MMSGHDR;
            headers.set(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_NAMELEN, LinuxUdpLink.SOCKADDR);
            headers.set(ValueLayout.JAVA_LONG, at + LinuxUdpLink.MSG_CONTROLLEN, CONTROL);
        }
        filled = 0;
    }

    /** How many messages the next {@code recvmmsg} asks for: one after a datagram that came alone, else {@link #MESSAGES}. */
    int messagesToAsk() {
        return single ? 1 : MESSAGES;
    }

    /** A {@code recvmmsg} found the socket empty. */
    void foundEmpty() {
        gotLast = false;
    }

    /**
     * A {@code recvmmsg} that asked for {@code asked} messages ({@link #messagesToAsk}) filled {@code n}: reads their
     * lengths, senders, segment sizes and ECN fields.
     */
    void landed(int n, int asked) throws IOException {
        filled = n;
        for (int i = 0; i < n; i++) {
            long at = (long) i * LinuxUdpLink.MMSGHDR;
            int flags = headers.get(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_FLAGS);
            boolean cut = (flags & (LinuxUdpLink.MSG_TRUNC | MSG_CTRUNC)) != 0;
            length[i] = cut ? RxBatch.TRUNCATED : headers.get(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_LEN);
            from[i] = sources.decode(names, (long) i * LinuxUdpLink.SOCKADDR);
            readControls(i, headers.get(ValueLayout.JAVA_LONG, at + LinuxUdpLink.MSG_CONTROLLEN));
            if (segment[i] > 0 && segment[i] < length[i]) coalesced++;
        }
        messages = n;
        current = 0;
        offset = 0;
        if (asked == 1) {
            emptiedSocket = !gotLast; // alone (after an empty receive): the next poll looks again, no call now
            single = !gotLast; // a second in a row: a burst, taken in batches from the next call on
        } else {
            emptiedSocket = n < asked;
            single = n == 1;
        }
        gotLast = true;
        // the first message began in slot 0: one packet stays there; a coalesced run joins the rest of it (a bulk
        // transfer's copy of up to a slot per recvmmsg, for no copy at all of a packet that came alone)
        int len0 = length[0];
        firstInSlot = len0 >= 0 && !(segment[0] > 0 && segment[0] < len0);
        if (!firstInSlot && len0 > 0) MemorySegment.copy(first, 0, land, 0, Math.min(len0, RxBatch.SLOT));
    }

    /** The segment size (UDP_GRO) and the ECN field (IP_TOS, IPV6_TCLASS) among message {@code i}'s control messages. */
    private void readControls(int i, long controlLen) {
        long found = ControlMessages.scan(controls, (long) i * CONTROL, Math.min(controlLen, CONTROL));
        segment[i] = ControlMessages.segment(found); // 0: one datagram
        ecn[i] = (byte) ControlMessages.ecn(found);
    }

    /**
     * Copies the packets still to be handed out into {@code batch}'s slots, from slot 0, as many as fit.
     *
     * @return the packets copied
     */
    int fill(RxBatch batch) {
        int n = 0;
        while (n < RxBatch.CAPACITY && current < messages) {
            int len = length[current];
            int take = len < 0 ? 0 : Math.min(segment[current] > 0 ? segment[current] : len, len - offset);
            if (len < 0 || take > RxBatch.SLOT) {
                batch.lengths[n] = RxBatch.TRUNCATED;
            } else if (current == 0 && firstInSlot) { // one packet, landed in slot 0 (of this batch, or another's)
                if (!batch.segments[n].equals(first)) MemorySegment.copy(first, 0, batch.segments[n], 0, take);
                batch.lengths[n] = take;
            } else {
                MemorySegment.copy(land, (long) current * MESSAGE_BYTES + offset, batch.segments[n], 0, take);
                batch.lengths[n] = take;
            }
            batch.sources[n] = from[current];
            batch.ecn[n] = ecn[current];
            n++;
            offset += take;
            if (len < 0 || offset >= len) {
                current++;
                offset = 0;
            }
        }
        return n;
    }
}
