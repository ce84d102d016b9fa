package dev.jrdma.soft;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The packets a QP builds for one peer before they leave together ({@link Link#send(TxBatch, int, int,
 * java.net.InetSocketAddress)}: one {@code sendmmsg} on {@link LinuxUdpLink}): a request window, or the coalesced ACK
 * owed to the peer followed by the next request. Slot {@link #count} is where the next packet is built; slots are
 * direct buffers of {@link #SLOT} bytes, made when first needed and kept, so the steady state allocates nothing. Used
 * under the QP's monitor only, and sent before the monitor is released, so the packets of one QP leave in order.
 */
final class TxBatch {
    /** Bytes per slot: the largest packet (MTU 4096 plus headers, padding and ICRC) fits. */
    static final int SLOT = 8192;
    /** Slots: a batch this full is sent before the next packet is built. */
    static final int CAPACITY = 32;

    final ByteBuffer[] buffers = new ByteBuffer[CAPACITY];
    final MemorySegment[] segments = new MemorySegment[CAPACITY];
    /** Bytes of each packet built. */
    final int[] lengths = new int[CAPACITY];
    /** Packets built and not sent yet. */
    int count;
    /**
     * The packets go to a peer known to be a jrdma device (it took or offered the selective-repeat mode,
     * {@link QpTransmitter#toJrdmaPeer}): it accepts whatever IPv4 identification the kernel gives a datagram, so the batch
     * may leave through the UDP socket in one {@code sendmmsg} with UDP segmentation rather than through the raw socket
     * one packet at a time ({@link RawIpv4Link}, {@link LinuxUdpLink}).
     */
    boolean jrdmaPeer;

    TxBatch() {
        slot(0);
    }

    /** The buffer of slot {@code i}, made now when it is the first use of that slot. */
    ByteBuffer slot(int i) {
        ByteBuffer b = buffers[i];
        if (b == null) {
            b = buffers[i] = ByteBuffer.allocateDirect(SLOT);
            segments[i] = MemorySegment.ofBuffer(b);
        }
        return b;
    }
}
