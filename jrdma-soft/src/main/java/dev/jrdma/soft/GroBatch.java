package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;

/**
 * What one {@link RxBatch} receives through when its {@link LinuxUdpLink} takes coalesced datagrams ({@code UDP_GRO}):
 * the kernel may hand several datagrams of one flow as one message of up to 64 KiB, with their segment size in a
 * {@code UDP_GRO} control message (every segment that size, the last one maybe shorter). So each message lands in a
 * 64 KiB area of its own ({@link #MESSAGES} per {@code recvmmsg}) and is split by the segment size into the batch's
 * packet slots, one copy per packet; what does not fit the batch's slots waits for the next receive. A message without
 * the control message is one datagram. Nothing is allocated per burst.
 */
final class GroBatch {
    /** Messages per {@code recvmmsg}; each gets a 64 KiB landing area (512 KiB per batch). */
    static final int MESSAGES = 8;
    /** The largest message the kernel hands out (a UDP datagram, or a coalesced run of them). */
    static final int MESSAGE_BYTES = 1 << 16;
    /** Room for a UDP_GRO and a TOS/traffic class control message (24 bytes each on LP64). */
    private static final int CONTROL = 64;

    static final int SOL_UDP = 17, UDP_GRO = 104;
    final MemorySegment land, headers;
    private final MemorySegment names, controls;
    private final SockaddrCache sources = new SockaddrCache();

    // the messages of the last recvmmsg: their length (TRUNCATED when cut), segment size (0: one datagram), sender, ECN
    private final int[] length = new int[MESSAGES], segment = new int[MESSAGES];
    private final InetSocketAddress[] from = new InetSocketAddress[MESSAGES];
    private final byte[] ecn = new byte[MESSAGES];
    private int messages;
    /** The next packet to hand out: message {@link #current}, at {@link #offset} in it. */
    private int current, offset;

    /** Coalesced messages received (several datagrams in one; tests and reports). */
    long coalesced;

    GroBatch() {
        Arena arena = Arena.ofAuto();
        land = arena.allocate((long) MESSAGE_BYTES * MESSAGES, 4096);
        headers = arena.allocate((long) LinuxUdpLink.MMSGHDR * MESSAGES, 8);
        MemorySegment iovecs = arena.allocate((long) LinuxUdpLink.IOVEC * MESSAGES, 8);
        names = arena.allocate((long) LinuxUdpLink.SOCKADDR * MESSAGES, 8);
        controls = arena.allocate((long) CONTROL * MESSAGES, 8);
        for (int i = 0; i < MESSAGES; i++) {
            MemorySegment iov = iovecs.asSlice((long) i * LinuxUdpLink.IOVEC, LinuxUdpLink.IOVEC);
            iov.set(ValueLayout.ADDRESS, 0, land.asSlice((long) i * MESSAGE_BYTES, MESSAGE_BYTES));
            iov.set(ValueLayout.JAVA_LONG, 8, MESSAGE_BYTES);
            MemorySegment h = headers.asSlice((long) i * LinuxUdpLink.MMSGHDR, LinuxUdpLink.MMSGHDR);
            h.set(
                    ValueLayout.ADDRESS,
                    LinuxUdpLink.MSG_NAME,
                    names.asSlice((long) i * LinuxUdpLink.SOCKADDR, LinuxUdpLink.SOCKADDR));
            h.set(ValueLayout.ADDRESS, LinuxUdpLink.MSG_IOV, iov);
            h.set(ValueLayout.JAVA_LONG, LinuxUdpLink.MSG_IOVLEN, 1);
            h.set(ValueLayout.ADDRESS, LinuxUdpLink.MSG_CONTROL, controls.asSlice((long) i * CONTROL, CONTROL));
        }
    }

    /** Whether packets of the last {@code recvmmsg} are still to be handed out. */
    boolean pending() {
        return current < messages;
    }

    /** Resets the headers' in/out lengths before a {@code recvmmsg}. */
    void prepare() {
        for (int i = 0; i < MESSAGES; i++) {
            long at = (long) i * LinuxUdpLink.MMSGHDR;
            headers.set(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_NAMELEN, LinuxUdpLink.SOCKADDR);
            headers.set(ValueLayout.JAVA_LONG, at + LinuxUdpLink.MSG_CONTROLLEN, CONTROL);
        }
    }

    /** A {@code recvmmsg} filled {@code n} messages: reads their lengths, senders, segment sizes and ECN fields. */
    void landed(int n) throws IOException {
        for (int i = 0; i < n; i++) {
            long at = (long) i * LinuxUdpLink.MMSGHDR;
            boolean cut =
                    (headers.get(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_FLAGS) & LinuxUdpLink.MSG_TRUNC) != 0;
            length[i] = cut ? RxBatch.TRUNCATED : headers.get(ValueLayout.JAVA_INT, at + LinuxUdpLink.MSG_LEN);
            from[i] = sources.decode(names, (long) i * LinuxUdpLink.SOCKADDR);
            readControls(i, headers.get(ValueLayout.JAVA_LONG, at + LinuxUdpLink.MSG_CONTROLLEN));
            if (segment[i] > 0 && segment[i] < length[i]) coalesced++;
        }
        messages = n;
        current = 0;
        offset = 0;
    }

    /** The segment size (UDP_GRO) and the ECN field (IP_TOS, IPV6_TCLASS) among message {@code i}'s control messages. */
    private void readControls(int i, long controlLen) {
        long base = (long) i * CONTROL, len = Math.min(controlLen, CONTROL);
        long data = LinuxUdpLink.controlData(controls, base, len, SOL_UDP, UDP_GRO, 4);
        segment[i] = data < 0 ? 0 : controls.get(ValueLayout.JAVA_INT, data);
        ecn[i] = (byte) LinuxUdpLink.receivedEcn(controls, base, len);
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
