package dev.jrdma.soft;

import dev.jrdma.soft.wire.Icrc;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * Where a QP's engines build their packets and how the packets leave: signed (the authenticated mode), given their
 * ICRC, and sent at once or in a batch. Used under the QP's monitor only.
 */
final class QpTransmitter {
    private final SoftQp qp;
    private final Transport tr;
    private final TxBatch txBatch = new TxBatch();
    /**
     * Where the engines build the next packet: slot 0 of the batch, or, while a batch is open ({@link #begin}), its
     * next free slot; an engine reads these anew for each packet it builds.
     */
    ByteBuffer tx = txBatch.buffers[0];

    MemorySegment txSeg = txBatch.segments[0];
    /** Open batches (begin without its end yet), and where the packets of the batch go. */
    private int txDepth;

    private InetSocketAddress txTo;
    private final Icrc icrc = new Icrc();

    QpTransmitter(SoftQp qp, Transport tr) {
        this.qp = qp;
        this.tr = tr;
    }

    /**
     * Adds the ICRC to the packet of {@code len} bytes in {@link #tx} and sends it to {@code to} (UD: the address
     * handle's): at once, or, while a batch is open, with the rest of the batch at its end.
     */
    void transmitTo(int len, IpAddress toAddr, InetSocketAddress to) {
        IpAddress me = tr.local;
        PacketAuth key = qp.auth;
        if (key != null) len = key.sign(tx, len, qp.qpNum(), me);
        if (me.isIpv4()) icrc.generate(tx, 0, len, me.ipv4(), toAddr.ipv4(), tr.port, tr.port);
        else icrc.generateIpv6(tx, 0, len, me.hi, me.lo, toAddr.hi, toAddr.lo, tr.port, tr.port);
        TxBatch b = txBatch;
        if (txDepth == 0) {
            if (toJrdmaPeer()) { // the same way as its batches: the packets of a QP must not overtake each other
                b.jrdmaPeer = true;
                b.lengths[0] = len;
                qp.completer.batchSent();
                tr.send(b, 1, to);
            } else {
                tr.send(tx, len, to);
            }
            return;
        }
        if (b.count > 0 && to != txTo) { // another destination (UD): what waits goes first, in order
            ByteBuffer built = b.buffers[b.count];
            sendBatch();
            b.buffers[0].put(0, built, 0, len);
        }
        txTo = to;
        b.lengths[b.count++] = len;
        if (b.count == TxBatch.CAPACITY) sendBatch();
        tx = b.slot(b.count);
        txSeg = b.segments[b.count];
    }

    /**
     * Opens a batch (under the QP's monitor): the packets transmitted until the matching {@link #end} leave together,
     * with one system call where the link can ({@link Link#send(TxBatch, int, int, InetSocketAddress)}), and before
     * the monitor is released, so that no packet of this QP can overtake them.
     */
    void begin() {
        txDepth++;
    }

    /** Closes a batch; the outermost sends what it holds. */
    void end() {
        if (--txDepth == 0 && txBatch.count > 0) sendBatch();
    }

    /**
     * Whether this QP's peer is known to be a jrdma device: an RC QP in the selective-repeat mode whose peer marked an
     * ACK or NAK ({@link Completer#peerHolds}) or whose requester's offer was executed in sequence ({@link
     * Responder#requesterOffers}); never while the QP is guarded against forgery. Kernel rxe and NICs never mark, so
     * they always get packets whose ICRC covers the identification they carry ({@link RawIpv4Link}). A forged marked
     * ACK in the window could make a QP talking to rxe send what rxe drops (the QP then ends in RETRY_EXC_ERR): no
     * more than a forged fatal NAK in the window does (the QP goes to ERR at once).
     */
    /** {@code -Djrdma.soft.gso=off}: every packet leaves as for any peer, jrdma or not. */
    private static final boolean JRDMA_PEER_PATH = !"off".equals(LinuxUdpLink.GSO_MODE);

    boolean toJrdmaPeer() {
        return JRDMA_PEER_PATH
                && qp.selectiveRepeat
                && (qp.completer.peerHolds || qp.responder.requesterOffers)
                && qp.datagram == null
                && !qp.guarded();
    }

    private void sendBatch() {
        TxBatch b = txBatch;
        int n = b.count;
        b.count = 0;
        b.jrdmaPeer = toJrdmaPeer();
        tx = b.buffers[0];
        txSeg = b.segments[0];
        qp.completer.batchSent();
        tr.send(b, n, txTo);
    }
}
