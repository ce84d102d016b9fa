package dev.jrdma.soft;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * Where one driving thread receives a burst of datagrams: {@link #CAPACITY} preallocated direct slots of {@link #SLOT}
 * bytes (a RoCEv2 packet of the largest IB MTU, 4096, with its headers fits), each with its length and sender. A
 * {@link Link} fills slots 0..n-1 and returns n ({@link Link#receive(RxBatch)}); {@link LinuxUdpLink} fills them with
 * one {@code recvmmsg}. Nothing is allocated per burst.
 */
final class RxBatch {
    /** Bytes per slot: a datagram longer than this is cut, which {@link #TRUNCATED} marks. */
    static final int SLOT = 8192;
    /** Slots per burst. */
    static final int CAPACITY = 32;
    /** The length of a slot whose datagram did not fit. */
    static final int TRUNCATED = -1;
    /**
     * The length of a slot that held no packet but a datagram of the same-host link itself: a doorbell (an empty
     * datagram) or a ring proof ({@link ShmProof}), handled by {@link ShmLink}.
     */
    static final int DOORBELL = -2;

    /** The slots' memory, contiguous, page aligned; {@link LinuxUdpLink} points its iovecs at it. */
    final MemorySegment memory = Arena.ofAuto().allocate((long) SLOT * CAPACITY, 4096);

    final ByteBuffer[] buffers = new ByteBuffer[CAPACITY];
    /**
     * A second view of each slot, for the thread that takes the link over from a stalled one and handles again the
     * packet that one is in the middle of: handling moves a view's position and limit, so two threads never share one.
     */
    final ByteBuffer[] takerViews = new ByteBuffer[CAPACITY];

    final MemorySegment[] segments = new MemorySegment[CAPACITY];
    /** Bytes received in each slot, or {@link #TRUNCATED}. */
    final int[] lengths = new int[CAPACITY];
    /**
     * The ECN field of each slot's IP header ({@link Ecn}): filled by a link that can read it ({@link LinuxUdpLink},
     * with {@code IP_RECVTOS}/{@code IPV6_RECVTCLASS}), {@link Ecn#NOT_ECT} from the others (NIO's DatagramChannel
     * hands out no per-datagram TOS; the same-host rings cross no switch).
     */
    final byte[] ecn = new byte[CAPACITY];
    /** The sender of each slot's datagram. */
    final InetSocketAddress[] sources = new InetSocketAddress[CAPACITY];
    /** Set by the link: the last burst emptied the link (no call is needed to find it empty). */
    boolean drained;
    /** Scratch memory a link keeps per batch (the native message headers of {@link LinuxUdpLink}), or null. */
    Object linkState;

    RxBatch() {
        for (int i = 0; i < CAPACITY; i++) {
            segments[i] = memory.asSlice((long) i * SLOT, SLOT);
            buffers[i] = segments[i].asByteBuffer();
            takerViews[i] = segments[i].asByteBuffer();
        }
    }
}
