package dev.jrdma.soft;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The counters of one software device, by name as {@code Context.counters()} shows them. Every packet the device
 * drops goes to one of the {@code rx_*} drop counters, so a forged, stray or stale packet is never silent.
 */
enum Counter {
    RX_PACKETS("rx_packets"),
    RX_BAD_ICRC("rx_bad_icrc"),
    /**
     * An IPv4 packet whose ICRC is right under a non-zero identification, recovered from the ICRC (a UDP socket does
     * not see the IP header): accepted, verified by 16 ICRC bits and the UDP checksum instead of all 32 bits.
     */
    RX_ICRC_IPV4_ID_RECOVERED("rx_icrc_ipv4_id_recovered"),
    RX_MALFORMED("rx_malformed"),
    /**
     * A packet for a QP in the authenticated mode ({@code QpAttr.packetAuthKey}) whose tag is wrong or missing: a
     * forgery, or a peer without the key. Dropped before anything else looks at it ({@link PacketAuth}).
     */
    RX_BAD_MAC("rx_bad_mac"),
    /** QPs moved to RTR in the authenticated mode (with {@code QpAttr.packetAuthKey}): the mode was negotiated. */
    QPS_PACKET_AUTH("qps_packet_auth"),
    RX_UNKNOWN_QP("rx_unknown_qp"),
    /** A packet for a QP that takes none in its state (RESET, INIT, ERR; a response before RTS). */
    RX_QP_NOT_READY("rx_qp_not_ready"),
    /** A packet for a connected QP from an address other than its peer's. */
    RX_WRONG_SOURCE("rx_wrong_source"),
    /**
     * A packet for a connected QP from its peer's address but another UDP source port than the one the peer's first
     * valid packet came from ({@code -Djrdma.soft.checkSourcePort}, on by default).
     */
    RX_WRONG_SOURCE_PORT("rx_wrong_source_port"),
    /**
     * Bursts of forgery-like packets at one QP (PSNs far outside its window, wrong source ports): each raised the
     * jrdma-specific asynchronous event QP_FORGERY_SUSPECTED ({@link ForgeryWatch}).
     */
    RX_FORGERY_BURSTS("rx_forgery_bursts"),
    RX_BAD_PKEY("rx_bad_pkey"),
    /** A datagram whose Q_Key is not its UD QP's (IBA 10.2.5: dropped unanswered). */
    RX_BAD_QKEY("rx_bad_qkey"),
    /** A datagram for a UD QP with no receive posted (UD drops it; no RNR). */
    RX_NO_RECEIVE("rx_no_receive"),
    /** A request beyond the expected PSN (NAKed once per burst, the rest dropped). */
    RX_OUT_OF_SEQUENCE("rx_out_of_sequence"),
    /** A request already executed: re-ACKed, or answered from its READ/atomic resource. */
    RX_DUPLICATE_REQUEST("rx_duplicate_request"),
    /** A duplicate READ/atomic that no resource can answer (too old, or asking for another range). */
    RX_DUPLICATE_UNANSWERED("rx_duplicate_unanswered"),
    /**
     * A READ/atomic replay still pending when a new request needed its resource slot: the requester had every reply
     * already (it cannot take the slot otherwise), so the replay is dropped.
     */
    STALE_REPLAYS_DROPPED("stale_replays_dropped"),
    /** An ACK, NAK, RNR NAK, READ response or atomic ACK whose PSN is outside the window of outstanding requests. */
    RX_RESPONSE_OUT_OF_WINDOW("rx_response_out_of_window"),
    /**
     * A response inside the window that fits no outstanding request or changes nothing: wrong kind, a duplicate READ
     * response, a repeated ACK, an RNR NAK during an RNR wait, a sequence NAK for the go-back already under way.
     */
    RX_RESPONSE_IGNORED("rx_response_ignored"),
    /** A packet whose handling threw (a bug): reported through System.Logger, the device keeps serving. */
    RX_DROPPED("rx_dropped"),
    /** Packets taken from the device's same-host rings (also counted in rx_packets when well-formed). */
    RX_SHM_PACKETS("rx_shm_packets"),
    /** A same-host ring cell with a length or sender port out of range: dropped (the ring is a sender's, untrusted). */
    RX_SHM_BAD_CELL("rx_shm_bad_cell"),
    /**
     * Times this device's same-host rings failed (their file truncated or replaced under the mapping) and were made
     * again under the same name (or given up for UDP when that failed).
     */
    RX_SHM_RING_REBUILDS("rx_shm_ring_rebuilds"),
    /**
     * Same-host ring proofs that prove nothing: a HELLO whose slot names another address, port, nonce or start (a
     * process claiming an address it does not hold), an ACK for no claim of this device or from another port than the
     * peer's, a peer that never answered (its file is not its device's). See {@link ShmProof}.
     */
    RX_SHM_UNPROVEN("rx_shm_unproven"),
    /** Empty UDP datagrams that woke the receive thread for the same-host rings (when the device has them). */
    RX_SHM_DOORBELLS("rx_shm_doorbells"),
    /**
     * Takeovers of the link: a thread (the receive thread or a polling application thread) found the one that owned it
     * making no progress for a millisecond (descheduled in its drive), handled the rest of its batch, in order, and
     * went on receiving.
     */
    RX_TAKEOVERS("rx_takeovers"),
    /**
     * RC packets handled a second time at a takeover: the stalled thread was in the middle of one, and the taker
     * handles it before the later ones, so its QP sees them in order (one of the two copies is then an RC duplicate).
     */
    RX_TAKEOVER_REPEATS("rx_takeover_repeats"),
    /**
     * Waits for a completion event in which the waiting application thread stood in for the receive thread: it slept in
     * the link itself and handled what woke it (one wake-up per message instead of two).
     */
    RX_STAND_INS("rx_stand_ins"),
    /** Packets handled by application threads standing in for the receive thread ({@link #RX_STAND_INS}). */
    RX_STAND_IN_PACKETS("rx_stand_in_packets"),
    /**
     * Polls that found nothing and gave the polling thread's CPU up (sched_yield) because the same-host peer had not
     * taken the packet sent to it last for 5 us: its thread is runnable but may wait for the CPU the poller spins on
     * ({@code -Djrdma.soft.pollYield=on} only).
     */
    POLL_YIELDS("poll_yields"),
    /**
     * Polls that found nothing and slept briefly because the same-host peer had left the packet sent to it last
     * untaken for {@link ProgressEngine#PEER_STARVED_NANOS}: the peer waits for a CPU, most likely the one this poller
     * spins on; asleep, the poller hands it over at once and is placed afresh when it wakes
     * ({@code -Djrdma.soft.pollPark=on} only, {@link ProgressEngine#pollPark}).
     */
    POLL_PARKS("poll_parks"),
    TX_PACKETS("tx_packets"),
    /** Packets sent through a same-host peer's ring instead of UDP (also counted in tx_packets). */
    TX_SHM_PACKETS("tx_shm_packets"),
    /** Sends that found the same-host peer's ring full (the packet waits and is tried again; counted once per try). */
    TX_SHM_RING_FULL("tx_shm_ring_full"),
    /**
     * Packets dropped because the link stayed full through {@link Transport}'s {@value Transport#SEND_TRIES} tries (a
     * same-host ring whose reader is off the CPU, a full socket buffer): congestion, not a failure; RC sends them again
     * (a sequence NAK or the retransmission timeout), UD loses them. Not counted in tx_errors.
     */
    TX_DROPPED_LINK_FULL("tx_dropped_link_full"),
    /** Sends the link refused with an error (a closed or failing socket). */
    TX_ERRORS("tx_errors"),
    RETRANSMITS("retransmits"),
    /**
     * Request packets sent again one at a time in the selective-repeat mode ({@code -Djrdma.soft.selectiveRepeat}): the
     * one a marked NAK names, or the oldest unacknowledged one (and the last one sent) at a timeout.
     */
    TX_SELECTIVE_RESENDS("tx_selective_resends"),
    /**
     * Selective resends sent again because the peer's marked NAK showed that a packet sent after them arrived while
     * they did not (a lost retransmission, found without waiting for the retry timer).
     */
    RESENDS_FOUND_LOST("resends_found_lost"),
    /**
     * Marked NAKs that named a packet the peer kept fewer than the reordering threshold beyond
     * ({@link SoftQp#reorderThreshold}): the packet may be late, not lost, so it was not sent again then.
     */
    NAKS_BELOW_REORDER_THRESHOLD("naks_below_reorder_threshold"),
    /** Request packets beyond a gap kept by the responder in the selective-repeat mode, executed once the gap is filled. */
    RX_OUT_OF_ORDER_HELD("rx_out_of_order_held"),
    /**
     * WRITE packets beyond a gap that the responder in the selective-repeat mode put in place at once (a MIDDLE or LAST
     * of the message in progress, IRN's placement): counted in {@link #RX_OUT_OF_ORDER_HELD} too, their bytes copied
     * once.
     */
    RX_OUT_OF_ORDER_PLACED("rx_out_of_order_placed"),
    /** Request packets beyond a gap not kept: too far ahead, the QP guarded against forgery, or its PSN held already. */
    RX_OUT_OF_ORDER_NOT_HELD("rx_out_of_order_not_held"),
    /**
     * Retransmission timeouts that fired more than their own period late (the device was starved of CPU): the request
     * is resent but no retry is counted (at most {@link Completer#MAX_LATE_FORGIVEN} in a row without progress).
     */
    RETRY_TIMER_LATE("retry_timer_late"),
    /** Retransmission timeouts that fired (late ones included; not the selective-repeat mode's probes). */
    RETRY_TIMEOUTS("retry_timeouts"),
    /**
     * Probes of the selective-repeat mode: the requester, stopped with packets outstanding, heard nothing for a few
     * round trips and sent the oldest unacknowledged packet and the last one again (IRN's RTO_low), no retry counted.
     */
    RETRY_PROBES("retry_probes"),
    /**
     * Probes that came due while the peer had not taken the packet sent last from its same-host ring (its threads off
     * the CPU): nothing sent again, the probe moved a probe period on ({@code Completer.holdProbe}).
     */
    RETRY_PROBES_HELD("retry_probes_held"),
    RNR_NAKS_RECEIVED("rnr_naks_received"),
    /** Posts held by the sender's cork ({@link SendCork}): they left with later ones, not at once. */
    TX_CORKED_POSTS("tx_corked_posts"),
    /** Held posts sent by a poll, a waiting thread or the cork's deadline (not by an ACK or a full batch). */
    TX_CORK_RELEASES("tx_cork_releases"),
    /** Coalesced ACKs sent inside a request to a jrdma peer that takes them ({@link CarriedAcks}), not alone. */
    TX_CARRIED_ACKS("tx_carried_acks"),
    /** ACKs that arrived inside a request of the peer ({@link CarriedAcks}), each handled as the same ACK alone. */
    RX_CARRIED_ACKS("rx_carried_acks"),
    /** Packets that arrived with the IP header's ECN field at CE (a congested switch marked them; {@link Dcqcn}). */
    RX_ECN_CE("rx_ecn_ce"),
    /** CNPs sent as DCQCN's notification point (at most one per QP per interval, however many packets were marked). */
    TX_CNPS("tx_cnps"),
    /** CNPs received: each cut its QP's rate (DCQCN's reaction point). */
    RX_CNPS("rx_cnps"),
    /**
     * The current sending rate, in Mb/s, of the QP whose DCQCN rate changed last (a CNP cut it, or it recovered):
     * the line rate when no QP is limited ({@code jrdma.soft.dcqcn.lineRateMbps} when set; when measured, 0 until
     * a QP's first limit and that QP's line after it). A value, not a count.
     */
    DCQCN_RATE_MBPS("dcqcn_rate_mbps"),
    /** Limits begun: CNPs that found their QP's rate back at its line ({@link Dcqcn#onCnp}), each measuring the line anew. */
    DCQCN_LIMITS("dcqcn_limits"),
    /** The line rate, in Mb/s, of the limit that began last (measured, or {@code lineRateMbps}). A value, not a count. */
    DCQCN_LINE_MBPS("dcqcn_line_mbps"),
    /**
     * Limits that kept the last limit's line: their QP's rate had been unlimited too briefly to measure a new one
     * ({@link Dcqcn#lineOf}; under emulation CNPs come in bursts and a limit ends and begins again within one).
     */
    DCQCN_LINES_HELD("dcqcn_lines_held");

    final String label;

    Counter(String label) {
        this.label = label;
    }

    private static final Counter[] ALL = values();

    /** One device's values: allocation-free increments from any thread. */
    static final class Set {
        private final AtomicLongArray values = new AtomicLongArray(ALL.length);

        void add(Counter c) {
            values.getAndIncrement(c.ordinal());
        }

        void set(Counter c, long value) {
            values.set(c.ordinal(), value);
        }

        void add(Counter c, long n) {
            values.getAndAdd(c.ordinal(), n);
        }

        long get(Counter c) {
            return values.get(c.ordinal());
        }

        Map<String, Long> snapshot() {
            LinkedHashMap<String, Long> m = new LinkedHashMap<>();
            for (Counter c : ALL) m.put(c.label, values.get(c.ordinal()));
            return Collections.unmodifiableMap(m);
        }
    }
}
