package dev.jrdma.soft;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.WrOpcode;
import java.nio.ByteBuffer;

/**
 * A connected QP's part in congestion control ({@link Dcqcn}): as notification point it answers CE-marked packets with
 * CNPs, as reaction point it takes the peer's CNPs and paces the requester's packets at the rate DCQCN allows. Only
 * the packets of this QP's peer count (its address and, once learned, its UDP port): a CNP can only slow a QP down,
 * but a stranger's must not. READ responses are not paced (the requester's READ window bounds them).
 */
final class QpCongestion {
    /** Bytes below a RoCE packet on the wire: Ethernet, IPv4, UDP. */
    private static final int FRAMING = 14 + 20 + 8;
    /** Bytes a packet adds to its payload on the wire (the framing, BTH, an extension header, ICRC): for pacing. */
    private static final int WIRE_OVERHEAD = FRAMING + Bth.BYTES + 16 + 4;

    /**
     * {@code -Djrdma.soft.dcqcn.logCnps=true} (a debug aid, off by default): each CNP the reaction point takes is a
     * line on standard error, {@code cnp DEST_QPN NANOS RATE_BEFORE RATE_AFTER LIMITED_BEFORE} (the device clock, rates in
     * Mb/s), so a run's CNP arrival times can be fitted ({@code SharedBottleneckModel.withSenderStalls}).
     */
    static final boolean LOG_CNPS = Boolean.getBoolean("jrdma.soft.dcqcn.logCnps");

    private final SoftQp qp;
    final Dcqcn dcqcn;
    /** When the pacer lets the waiting requester go on ({@link SoftQp#onTimer}), 0 when it does not wait. */
    volatile long rateDeadline;
    /** The requester's packets on the wire since the QP was made, in bytes, resends included ({@link #sent}). */
    private long bytesSent;
    /**
     * The line rate's measure ({@link Dcqcn#lineOf}): the time and {@link #bytesSent} when the QP reached RTS or its
     * rate was last unlimited again (valid once {@link #sampled}), and the time unlimited and the bytes sent then
     * since the last limit that measured its line (a limit that held the last line leaves them to the next).
     */
    private long unlimitedSince;

    private long bytesWhenUnlimited, sampleNanos, sampleBytes;
    private boolean sampled;

    QpCongestion(SoftQp qp, Dcqcn.Params params) {
        this.qp = qp;
        this.dcqcn = new Dcqcn(params);
        Counter.Set counters = qp.transport().counters;
        if (counters.get(Counter.DCQCN_RATE_MBPS) == 0)
            counters.set(Counter.DCQCN_RATE_MBPS, params.lineRateBps() / 1_000_000);
    }

    /** The requester starts at RTS, or the rate is unlimited again (under the QP's monitor): the measure starts here. */
    void sampleSent() {
        unlimitedSince = qp.clock().nanoTime();
        bytesWhenUnlimited = bytesSent;
        sampled = true;
    }

    /**
     * The requester put a packet of {@code len} bytes (BTH to ICRC, as transmitted) on the wire (under the QP's
     * monitor): counted with its framing for the line's measure, so a QP of small messages is measured at the bytes
     * it sends, not at a full packet per PSN (which made its line many times too high and its first cuts bite late).
     */
    void sent(int len) {
        bytesSent += len + FRAMING;
    }

    /**
     * The line of a limit beginning at {@code now}: the rate this QP sent at while unlimited since the last line was
     * measured, in bits per second (the bytes its requester put on the wire), or the last limit's line while that
     * time is short ({@link Dcqcn#lineOf}; the time and bytes then count towards the next, and {@code
     * dcqcn_lines_held} counts the limit).
     */
    private long lineAt(long now) {
        if (!sampled) return Dcqcn.MAX_LINE_BPS;
        sampleNanos += now - unlimitedSince;
        sampleBytes += bytesSent - bytesWhenUnlimited;
        long line = dcqcn.lineOf(sampleBytes, sampleNanos);
        if (dcqcn.lineHeld(sampleNanos)) qp.count(Counter.DCQCN_LINES_HELD);
        else sampleNanos = sampleBytes = 0;
        return line;
    }

    /**
     * A packet of this QP, {@code markedLen} bytes from BTH to ICRC, arrived CE-marked (the driving thread): a CNP to the peer,
     * unless one went lately or the marked packets since the last one do not yet make the MTU ({@link
     * Dcqcn#shouldSendCnp}).
     */
    void receiveCeMarked(IpAddress src, int srcPort, int markedLen) {
        synchronized (qp) {
            qp.count(Counter.RX_ECN_CE);
            if (qp.datagram != null || !fromPeer(src, srcPort)) return;
            // a full packet (a payload of the MTU, whatever its headers) is at least the MTU on the wire
            if (!dcqcn.shouldSendCnp(qp.clock().nanoTime(), markedLen + FRAMING, qp.mtu)) return;
            ByteBuffer b = qp.out.tx;
            int len = RocePacket.writeBth(b, 0, Opcode.CNP.code(), false, Bth.DEFAULT_PKEY, qp.destQpn, false, 0, 0);
            b.put(4, (byte) (b.get(4) | 0x40)); // BECN
            for (int i = Bth.BYTES; i < Bth.BYTES + Opcode.CNP_RESERVED_BYTES; i++) b.put(i, (byte) 0);
            qp.transmit(len);
            qp.count(Counter.TX_CNPS);
        }
    }

    /** The peer's CNP arrived (the driving thread): the rate cut. */
    void receiveCnp(IpAddress src, int srcPort) {
        synchronized (qp) {
            if (qp.datagram != null || !fromPeer(src, srcPort)) {
                qp.count(Counter.RX_WRONG_SOURCE);
                return;
            }
            qp.count(Counter.RX_CNPS);
            long now = qp.clock().nanoTime();
            boolean begins = !dcqcn.limited && dcqcn.current().enabled();
            long before = dcqcn.rateBps();
            dcqcn.onCnp(now, begins ? lineAt(now) : 0);
            if (LOG_CNPS) logCnp(now, before, !begins);
            Counter.Set counters = qp.transport().counters;
            counters.set(Counter.DCQCN_RATE_MBPS, dcqcn.rateBps() / 1_000_000);
            if (begins) {
                qp.count(Counter.DCQCN_LIMITS);
                counters.set(Counter.DCQCN_LINE_MBPS, dcqcn.current().lineRateBps() / 1_000_000);
            }
        }
    }

    private void logCnp(long now, long rateBefore, boolean wasLimited) {
        System.err.println("cnp " + qp.destQpn + " " + now + " " + rateBefore / 1_000_000 + " "
                + dcqcn.rateBps() / 1_000_000 + " " + (wasLimited ? 1 : 0));
    }

    private boolean fromPeer(IpAddress src, int srcPort) {
        QpState s = qp.state();
        if (s == QpState.RESET || s == QpState.INIT || s == QpState.ERR) return false;
        return src.equals(qp.remoteAddr) && (qp.peerPort < 0 || qp.peerPort == srcPort || !SoftQp.CHECK_SOURCE_PORT);
    }

    /**
     * The requester, before it sends packet {@code k} of {@code w} while the rate is {@link Dcqcn#limited}: whether it
     * may go now; when not, the timer brings the requester back when the pacer allows.
     */
    boolean pace(SendWqe w, int k) {
        long now = qp.clock().nanoTime();
        boolean noPayload = w.op == WrOpcode.RDMA_READ || w.op.isAtomic();
        int payload = noPayload ? 0 : (int) Math.min(qp.mtu, w.total - (long) k * qp.mtu);
        boolean wasLimited = dcqcn.limited;
        long before = dcqcn.rateBps();
        if (dcqcn.trySend(now, payload + WIRE_OVERHEAD)) {
            if (dcqcn.rateBps() != before || dcqcn.limited != wasLimited)
                qp.transport().counters.set(Counter.DCQCN_RATE_MBPS, dcqcn.rateBps() / 1_000_000);
            if (!dcqcn.limited) sampleSent(); // unlimited again: the next limit's line is measured from here
            return true;
        }
        // the timer comes back at least once a rate-increase period: an increase brings the packet's time forward
        rateDeadline = Math.min(dcqcn.nextSendAt(), now + dcqcn.current().increasePeriodNanos());
        qp.timer().wake(rateDeadline);
        return false;
    }

    /** The timer at {@code now} (under the QP's monitor): the requester goes on once its pacing deadline has passed. */
    void onTimer(long now) {
        long paced = rateDeadline;
        if (paced == 0 || now - paced < 0) return;
        rateDeadline = 0;
        qp.requester.runBatched();
    }
}
