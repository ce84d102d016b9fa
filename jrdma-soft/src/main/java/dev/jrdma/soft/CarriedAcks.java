package dev.jrdma.soft;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.CarriedAck;
import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * jrdma's carried ACKs on one RC QP (issue 23 §2): the coalesced ACK its responder owes the peer rides in the next
 * request its requester sends on the QP ({@link CarriedAck}, 8 bytes before the ICRC), so the answering side of a
 * ping-pong sends one datagram per half round trip instead of the ACK and then its answer (a send over a veth costs
 * ~1.4 us, the receiver's whole stack). Between jrdma QPs only, negotiated in band per QP as the selective-repeat mode
 * is:
 *
 * <ul>
 *   <li>the offer: a requester sets {@link Bth#takesAcks} on its requests once it knows its peer is a jrdma device
 *       ({@link QpTransmitter#toJrdmaPeer}), so rxe, NICs and a capture of the wire as they get it see no new bit;
 *   <li>taken by the responder from a request that carried it and was executed in sequence, after every check (a
 *       forger must hit the expected PSN with a request that plain RoCEv2 would execute anyway);
 *   <li>only then does the responder hold an ACK for a request to carry ({@link OwedAcks}: a polling thread's drive
 *       keeps it owed one drive longer) and put it into one ({@link #carry}).
 * </ul>
 *
 * An ACK that arrives carried is handed to the completer exactly as the same ACK sent alone, before the request itself
 * goes to the responder ({@link #receive}): the same window, kind and state checks, the same counters; a malformed
 * one drops the packet. Under the QP's monitor only.
 */
final class CarriedAcks {
    /**
     * {@code -Djrdma.soft.carriedAcks=false}: RC QPs of this process neither offer, take nor carry ACKs in requests; an
     * ACK then leaves alone at the end of the drive that received what it acknowledges. On by default: it acts only
     * where both ends agree. {@code always}: ACKs are held for peers reached through a same-host ring too ({@link
     * #mayHold}; for measurements).
     */
    static final boolean ENABLED = !"false".equals(System.getProperty("jrdma.soft.carriedAcks"));

    private static final boolean OVER_RINGS = "always".equals(System.getProperty("jrdma.soft.carriedAcks"));

    /** Whether this QP offers, takes and carries ACKs ({@link #ENABLED}; tests set it before the QP reaches RTR). */
    boolean enabled = ENABLED;
    /** The peer's requester offered to take carried ACKs (in a request executed in sequence): this end may carry them. */
    boolean peerTakes;

    private final SoftQp qp;
    /** The same ACK as it would have come alone, for the completer ({@link #receive}). */
    private final ByteBuffer alone = ByteBuffer.allocate(Bth.BYTES + Aeth.BYTES + Icrc.BYTES);

    private final RocePacket aloneView = new RocePacket();

    CarriedAcks(SoftQp qp) {
        this.qp = qp;
    }

    /** INIT to RTR: nothing negotiated yet. */
    void start() {
        peerTakes = false;
    }

    /** A request is being built at the start of {@code b}: the offer, when this QP knows its peer is jrdma. */
    void offer(ByteBuffer b) {
        if (enabled && qp.out.toJrdmaPeer()) Bth.setTakesAcks(b, 0);
    }

    /** The responder executed in sequence a request that carried the offer. */
    void offered() {
        if (enabled) peerTakes = true;
    }

    /**
     * Whether a coalesced ACK owed may wait for a request to carry it: the peer takes them, and is not reached through
     * a same-host ring ({@link ShmLink}), where an ACK alone costs a ring write, no system call, and holding it lost
     * (64 B {@code send_lat} between two processes 1.1-1.5 us alone, 1.5-3.1 carried; jrdma-bench/README.md).
     */
    boolean mayHold() {
        if (!enabled || !peerTakes) return false;
        ShmLink rings = OVER_RINGS ? null : qp.transport().shmLink();
        return rings == null || !rings.ringTo(qp.remote);
    }

    /**
     * The request of {@code len} bytes (its ICRC's place included) at the start of {@code b}, with {@code payloadLen}
     * bytes of payload, is about to go: the ACK the responder owes rides in it when the peer takes carried ACKs and the
     * packet stays within the size of a full-MTU packet of the QP (so what fitted the path before still does).
     *
     * @return the packet's length now
     */
    int carry(ByteBuffer b, int len, int payloadLen) {
        if (!mayHold() || payloadLen + CarriedAck.BYTES > qp.mtu) return len;
        if (!qp.responder.takeOwedAck(b, len - Icrc.BYTES)) return len;
        Bth.setCarriesAck(b, 0, true);
        qp.count(Counter.TX_CARRIED_ACKS);
        return len + CarriedAck.BYTES;
    }

    /**
     * A request of the peer carries an ACK ({@link RocePacket#carriesAck}): the completer handles it first, as the same
     * ACK sent alone (a BTH with its PSN and the mark, its AETH), so it can do nothing that ACK could not: outside the
     * window of outstanding requests it is a counted drop, a repeat changes nothing. Not before RTS (nothing was sent
     * to acknowledge), as an ACK alone.
     *
     * @return false when the carried ACK is malformed or this QP never offered to take one: the packet is dropped
     */
    boolean receive(RocePacket request) {
        ByteBuffer b = request.buffer();
        int at = request.carriedAckOffset();
        if (!enabled || !CarriedAck.wellFormed(b, at)) return false;
        qp.count(Counter.RX_CARRIED_ACKS);
        if (!qp.sendsRequests()) {
            qp.count(Counter.RX_QP_NOT_READY);
            return true;
        }
        int psn = CarriedAck.psn(b, at);
        int len = RocePacket.writeBth(
                alone, 0, Opcode.ACKNOWLEDGE.code(), false, Bth.DEFAULT_PKEY, qp.qpNum(), false, psn, 0);
        if (CarriedAck.marked(b, at)) Bth.setHoldsMark(alone, 0);
        Aeth.write(alone, Bth.BYTES, CarriedAck.syndrome(b, at), CarriedAck.msn(b, at));
        if (aloneView.wrap(alone, 0, len) != RocePacket.OK) return false;
        qp.completer.receive(aloneView, MemorySegment.NULL); // an ACK's handling never reads the packet's memory
        return true;
    }
}
