package dev.jrdma.soft;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * What a software device's {@link Transport} sends its RoCEv2 packets through and receives them from: one datagram
 * per packet, non-blocking, with a way to wait for the next one. {@link UdpLink} is the UDP socket of RoCEv2; other
 * links (a fault-injecting wrapper, a same-host shared-memory ring) carry the same packets.
 */
interface Link extends AutoCloseable {
    /**
     * Sends the bytes between position and limit of {@code b} as one datagram.
     *
     * @return false when the link cannot take it now (nothing was sent)
     */
    boolean send(ByteBuffer b, InetSocketAddress to) throws IOException;

    /**
     * Sends the bytes between position and limit of {@code b} as one datagram from the device's UDP port, exactly as
     * they are: for datagrams that are not RoCEv2 packets (the same-host rings' proofs, {@link ShmProof}), which a link
     * that patches each packet's ICRC ({@link RawIpv4Link}) would spoil. This default is {@link #send(ByteBuffer,
     * InetSocketAddress)}.
     *
     * @return false when the link cannot take it now (nothing was sent)
     */
    default boolean sendVerbatim(ByteBuffer b, InetSocketAddress to) throws IOException {
        return send(b, to);
    }

    /**
     * Sends packets {@code from .. from+n-1} of {@code batch} (each slot's first {@code lengths[i]} bytes) as datagrams
     * to {@code to}, in order. This default sends them one by one through {@link #send(ByteBuffer, InetSocketAddress)};
     * {@link LinuxUdpLink} sends them with one {@code sendmmsg}.
     *
     * @return how many were sent (the first ones); fewer than {@code n} when the link cannot take more now
     */
    default int send(TxBatch batch, int from, int n, InetSocketAddress to) throws IOException {
        for (int i = 0; i < n; i++) {
            ByteBuffer b = batch.buffers[from + i];
            b.limit(batch.lengths[from + i]).position(0);
            try {
                if (!send(b, to)) return i;
            } finally {
                b.clear();
            }
        }
        return n;
    }

    /** Receives one datagram into {@code b} (from its position), without blocking: its sender, or null when none waits. */
    InetSocketAddress receive(ByteBuffer b) throws IOException;

    /**
     * Receives what waits, up to the batch's capacity, into slots 0..n-1 of {@code batch}, without blocking; sets
     * {@link RxBatch#drained} when it knows nothing more waits. This default receives one datagram through
     * {@link #receive(ByteBuffer)}; {@link LinuxUdpLink} receives a whole burst with one system call.
     *
     * @return n, 0 when none waits
     */
    default int receive(RxBatch batch) throws IOException {
        batch.drained = false;
        ByteBuffer b = batch.buffers[0];
        b.clear();
        InetSocketAddress from = receive(b);
        if (from == null) return 0;
        batch.lengths[0] = b.position();
        batch.sources[0] = from;
        batch.ecn[0] = Ecn.NOT_ECT;
        return 1;
    }

    /**
     * Makes, now, what the calling thread and {@code batch} will need to send and receive (a receive thread calls it
     * when it starts, so its first packets allocate nothing). Nothing by default.
     */
    default void prepare(RxBatch batch) {}

    /**
     * Whether a datagram may be waiting, without blocking and without holding anything {@link #receive} needs: a
     * polling thread asks this before it receives, so that it spends its idle spins outside the receive path and,
     * when descheduled there (a loaded machine: hundreds of milliseconds), leaves the link free for the receive thread.
     * Polling threads call it one at a time. True when in doubt.
     */
    default boolean readable() throws IOException {
        return true;
    }

    /**
     * A QP was given {@code peer} as its destination: a link that must set something up per peer before its packets
     * can take the fast way (the same-host rings' proof, see {@link ShmLink}) starts now, not on the first packet.
     * Nothing by default.
     */
    default void expectPeer(InetSocketAddress peer) {}

    /**
     * A QP that was given {@code peer} ({@link #expectPeer}) has another destination now, or was destroyed: a link that
     * set something up per peer may release it once no QP expects that peer. Nothing by default.
     */
    default void forgetPeer(InetSocketAddress peer) {}

    /**
     * Whether the packet this link handed a same-host peer last has waited there, not taken, since {@code now -
     * nanos} or longer: the peer's thread that would take it is runnable but may wait for the CPU the caller spins on
     * ({@link ProgressEngine#progressFromPoll} gives its CPU up then). False by default: a link that cannot see whether
     * its peer took a packet (UDP) never says so.
     *
     * @param now {@link Clock} time
     * @param nanos how long the packet has waited at least
     * @return whether it has waited that long and is still there
     */
    default boolean peerBehind(long now, long nanos) {
        return false;
    }

    /** Blocks until a datagram may be waiting, or {@link #wakeup} is called. */
    void await() throws IOException;

    /**
     * {@link #await} for at most {@code timeoutNanos} (a link that can only wait for whole milliseconds rounds up): the
     * wait of an application thread that stands in for the receive thread while it waits for a completion event
     * ({@link ProgressEngine#standIn}).
     *
     * @return false, at once, when this link cannot wait with a limit (the caller then waits another way)
     */
    default boolean await(long timeoutNanos) throws IOException {
        return false;
    }

    /** Ends an {@link #await} in progress (or the next one) at once. */
    void wakeup();

    @Override
    void close();
}
