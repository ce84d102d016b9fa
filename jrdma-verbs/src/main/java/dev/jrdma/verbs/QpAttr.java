package dev.jrdma.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * Attributes for {@link QueuePair#modify} ({@code struct ibv_qp_attr} plus its mask). Each setter also records
 * the attribute in {@link #mask()}, so the mask always says exactly what was set. Returned by {@link QueuePair#query()}
 * with every attribute present.
 *
 * <pre>{@code
 * qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(Access.REMOTE_WRITE));
 * }</pre>
 */
public final class QpAttr {
    private final EnumSet<QpAttrMask> mask = EnumSet.noneOf(QpAttrMask.class);
    private QpState state, curState;
    private EnumSet<Access> access = EnumSet.noneOf(Access.class);
    private int pkeyIndex,
            port,
            qkey,
            timeout,
            retryCnt,
            rnrRetry,
            rqPsn,
            sqPsn,
            maxRdAtomic,
            maxDestRdAtomic,
            minRnrTimer,
            destQpNum;
    private boolean enSqdAsyncNotify, sqDraining;
    private int pathMigState, altPkeyIndex, altPort, altTimeout, rateLimit;
    private byte[] packetAuthKey;
    private Mtu pathMtu;
    private AhAttr ah, altAh;
    private QpCap cap;

    /** An empty set of attributes: nothing in the mask; add what a modify carries with the setters. */
    public QpAttr() {}

    private QpAttr set(QpAttrMask m) {
        mask.add(m);
        return this;
    }

    /** {@return the attributes set so far (the live set, one entry per setter called)} */
    public Set<QpAttrMask> mask() {
        return mask;
    }
    /**
     * Whether an attribute was set.
     *
     * @param m the attribute
     * @return true when its setter was called (or, for a query result, when the provider filled it in)
     */
    public boolean has(QpAttrMask m) {
        return mask.contains(m);
    }

    /** {@return the mask as the {@code attr_mask} bits of {@code ibv_modify_qp} (an OR of {@link QpAttrMask#bit})} */
    public int maskBits() {
        int bits = 0;
        for (QpAttrMask m : mask) bits |= m.bit;
        return bits;
    }

    /**
     * The state to move to ({@code qp_state}, {@code IBV_QP_STATE}).
     * @param s the target state; {@link QpStateMachine} says which moves are legal from the current one
     * @return this
     */
    public QpAttr state(QpState s) {
        state = s;
        return set(QpAttrMask.STATE);
    }
    /**
     * The state the caller believes the QP is in ({@code cur_state}, {@code IBV_QP_CUR_STATE}); a modify fails (EINVAL)
     * when the QP is in another one.
     * @param s the assumed current state
     * @return this
     */
    public QpAttr curState(QpState s) {
        curState = s;
        return set(QpAttrMask.CUR_STATE);
    }
    /**
     * What a remote peer may do through this QP ({@code qp_access_flags}, {@code IBV_QP_ACCESS_FLAGS}): REMOTE_WRITE,
     * REMOTE_READ, REMOTE_ATOMIC. An RDMA operation needs the right both here and on the target memory region.
     * @param a the rights; none grants no remote access
     * @return this
     */
    public QpAttr access(Access... a) {
        access = a.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(a[0], a);
        return set(QpAttrMask.ACCESS_FLAGS);
    }
    /**
     * The remote access rights as a set (copied); see {@link #access(Access...)}.
     * @param a the rights; empty grants no remote access
     * @return this
     */
    public QpAttr access(Set<Access> a) {
        access = a.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(a);
        return set(QpAttrMask.ACCESS_FLAGS);
    }
    /**
     * The index of the P_Key in the port's P_Key table ({@code pkey_index}, {@code IBV_QP_PKEY_INDEX}); 0 selects the
     * default key on RoCE and on the software device.
     * @param i the table index, from 0
     * @return this
     */
    public QpAttr pkeyIndex(int i) {
        pkeyIndex = i;
        return set(QpAttrMask.PKEY_INDEX);
    }
    /**
     * The physical port the QP sends and receives through ({@code port_num}, {@code IBV_QP_PORT}).
     * @param p the port number, from 1
     * @return this
     */
    public QpAttr port(int p) {
        port = p;
        return set(QpAttrMask.PORT);
    }
    /**
     * The Q_Key of a UD QP ({@code qkey}, {@code IBV_QP_QKEY}): a UD receive is accepted only when the sender names this key.
     * @param q the 32-bit key
     * @return this
     */
    public QpAttr qkey(int q) {
        qkey = q;
        return set(QpAttrMask.QKEY);
    }
    /**
     * The address vector of the remote port ({@code ah_attr}, {@code IBV_QP_AV}), required by RC and UC on the move to RTR.
     * @param a the remote port's address: its GID on RoCE, its LID on InfiniBand
     * @return this
     */
    public QpAttr ah(AhAttr a) {
        ah = a;
        return set(QpAttrMask.AV);
    }
    /**
     * The path MTU ({@code path_mtu}, {@code IBV_QP_PATH_MTU}), required by RC and UC on the move to RTR: messages are cut
     * into packets of this payload size. Use at most the smaller of the two ports' active MTUs.
     * @param m the MTU
     * @return this
     */
    public QpAttr pathMtu(Mtu m) {
        pathMtu = m;
        return set(QpAttrMask.PATH_MTU);
    }
    /**
     * The local ACK timeout of an RC QP ({@code timeout}, {@code IBV_QP_TIMEOUT}), required on the move to RTS: a request
     * unacknowledged for 4.096 µs × 2<sup>t</sup> is retransmitted.
     * @param t the exponent, 0..31; 0 waits forever
     * @return this
     */
    public QpAttr timeout(int t) {
        timeout = t;
        return set(QpAttrMask.TIMEOUT);
    }
    /**
     * How many times an RC QP retransmits after a timeout before it completes with
     * {@link WcStatus#RETRY_EXC_ERR} ({@code retry_cnt}, {@code IBV_QP_RETRY_CNT}), required on the move to RTS.
     * @param n the retry count, 0..7
     * @return this
     */
    public QpAttr retryCnt(int n) {
        retryCnt = n;
        return set(QpAttrMask.RETRY_CNT);
    }
    /**
     * How many times an RC QP resends after a Receiver Not Ready NAK before it completes with
     * {@link WcStatus#RNR_RETRY_EXC_ERR} ({@code rnr_retry}, {@code IBV_QP_RNR_RETRY}), required on the move to RTS.
     * @param n the retry count, 0..7; 7 retries forever
     * @return this
     */
    public QpAttr rnrRetry(int n) {
        rnrRetry = n;
        return set(QpAttrMask.RNR_RETRY);
    }
    /**
     * The packet sequence number this QP expects first from the peer ({@code rq_psn}, {@code IBV_QP_RQ_PSN}): the peer's
     * {@code sq_psn}. Required by RC and UC on the move to RTR.
     * @param psn the PSN; only its low 24 bits are kept
     * @return this
     */
    public QpAttr rqPsn(int psn) {
        rqPsn = psn & 0xFFFFFF;
        return set(QpAttrMask.RQ_PSN);
    }
    /**
     * The packet sequence number of this QP's first request ({@code sq_psn}, {@code IBV_QP_SQ_PSN}), required on the move
     * to RTS; the peer sets it as its {@code rq_psn}.
     * @param psn the PSN; only its low 24 bits are kept
     * @return this
     */
    public QpAttr sqPsn(int psn) {
        sqPsn = psn & 0xFFFFFF;
        return set(QpAttrMask.SQ_PSN);
    }
    /**
     * How many RDMA READ and atomic requests this RC QP may have outstanding as initiator ({@code max_rd_atomic},
     * {@code IBV_QP_MAX_QP_RD_ATOMIC}), required on the move to RTS; at most the device's {@code max_qp_init_rd_atom}.
     * @param n the number of requests, 0 forbids READ and atomics
     * @return this
     */
    public QpAttr maxRdAtomic(int n) {
        maxRdAtomic = n;
        return set(QpAttrMask.MAX_QP_RD_ATOMIC);
    }
    /**
     * How many RDMA READ and atomic requests from the peer this RC QP handles at once as responder
     * ({@code max_dest_rd_atomic}, {@code IBV_QP_MAX_DEST_RD_ATOMIC}), required on the move to RTR; at least the peer's
     * {@code max_rd_atomic}, at most the device's {@code max_qp_rd_atom}.
     * @param n the number of responder resources
     * @return this
     */
    public QpAttr maxDestRdAtomic(int n) {
        maxDestRdAtomic = n;
        return set(QpAttrMask.MAX_DEST_RD_ATOMIC);
    }
    /**
     * The delay an RC QP asks the sender to wait when it has no receive posted ({@code min_rnr_timer},
     * {@code IBV_QP_MIN_RNR_TIMER}), sent in its RNR NAK; required on the move to RTR.
     * @param t the IBTA timer code, 0..31: 1 = 0.01 ms up to 31 = 491.52 ms, and 0 = 655.36 ms
     * @return this
     */
    public QpAttr minRnrTimer(int t) {
        minRnrTimer = t;
        return set(QpAttrMask.MIN_RNR_TIMER);
    }
    /**
     * The number of the remote QP ({@code dest_qp_num}, {@code IBV_QP_DEST_QPN}), required by RC and UC on the move to RTR.
     * @param qpn the peer's {@link QueuePair#qpNum()}; only its low 24 bits are kept
     * @return this
     */
    public QpAttr destQpNum(int qpn) {
        destQpNum = qpn & 0xFFFFFF;
        return set(QpAttrMask.DEST_QPN);
    }
    /**
     * New queue capacities ({@code cap}, {@code IBV_QP_CAP}), for devices that can resize a QP.
     * @param c the capacities
     * @return this
     */
    public QpAttr cap(QpCap c) {
        cap = c;
        return set(QpAttrMask.CAP);
    }
    /**
     * With a move to SQD ({@code en_sqd_async_notify}, {@code IBV_QP_EN_SQD_ASYNC_NOTIFY}): raise
     * {@link AsyncEventType#SQ_DRAINED} once no send request is in flight any more.
     * @param b whether to raise the event
     * @return this
     */
    public QpAttr enSqdAsyncNotify(boolean b) {
        enSqdAsyncNotify = b;
        return set(QpAttrMask.EN_SQD_ASYNC_NOTIFY);
    }
    /**
     * The alternate path for automatic path migration ({@code alt_ah_attr}, {@code alt_pkey_index}, {@code alt_port_num},
     * {@code alt_timeout}; {@code IBV_QP_ALT_PATH}).
     *
     * @param ah        the alternate path's address vector
     * @param pkeyIndex its P_Key index
     * @param port      its local port, from 1
     * @param timeout   its local ACK timeout exponent, as {@link #timeout(int)}
     * @return this
     */
    public QpAttr altPath(AhAttr ah, int pkeyIndex, int port, int timeout) {
        altAh = ah;
        altPkeyIndex = pkeyIndex;
        altPort = port;
        altTimeout = timeout;
        return set(QpAttrMask.ALT_PATH);
    }
    /**
     * The path migration state ({@code path_mig_state}, {@code IBV_QP_PATH_MIG_STATE}).
     *
     * @param s {@link #MIG_MIGRATED}, {@link #MIG_REARM} or {@link #MIG_ARMED}
     * @return this
     */
    public QpAttr pathMigState(int s) {
        pathMigState = s;
        return set(QpAttrMask.PATH_MIG_STATE);
    }
    /**
     * The send rate limit for packet pacing ({@code rate_limit}, {@code IBV_QP_RATE_LIMIT}).
     *
     * @param kbps the rate in kbit/s; 0 for none
     * @return this
     */
    public QpAttr rateLimit(int kbps) {
        rateLimit = kbps;
        return set(QpAttrMask.RATE_LIMIT);
    }
    /**
     * jrdma's authenticated mode ({@link QpAttrMask#PACKET_AUTH_KEY}, no verbs equivalent): a 128-bit key shared with
     * the peer QP only; every packet the QP sends then carries a MAC under it and every packet it receives must carry
     * a right one, or it is dropped and counted before anything else looks at it. Both ends must set the same key, in
     * the move INIT->RTR of an RC QP (before the QP takes any packet); a move to RESET forgets it. Only providers with
     * {@link Context#supportsPacketAuth()} take it; jrdma-connect agrees the key in its handshake.
     *
     * @param key16 the key, 16 bytes (copied; never reported by {@link QueuePair#query()})
     * @return this
     * @throws IllegalArgumentException when the key is not 16 bytes
     */
    public QpAttr packetAuthKey(byte[] key16) {
        if (key16 == null || key16.length != 16)
            throw new IllegalArgumentException(
                    "a packet authentication key is 16 bytes, got " + (key16 == null ? "null" : key16.length));
        packetAuthKey = key16.clone();
        return set(QpAttrMask.PACKET_AUTH_KEY);
    }
    /**
     * Set by {@link QueuePair#query()}: whether the QP is in SQD and still draining its send queue ({@code sq_draining};
     * no mask bit).
     *
     * @param b whether it is draining
     * @return this
     */
    public QpAttr sqDraining(boolean b) {
        sqDraining = b;
        return this;
    }

    /** {@code IBV_MIG_MIGRATED}: no alternate path armed (the state of a QP that never used one). */
    public static final int MIG_MIGRATED = 0;
    /** {@code IBV_MIG_REARM}: an alternate path is being loaded. */
    public static final int MIG_REARM = 1;
    /** {@code IBV_MIG_ARMED}: the alternate path is ready for migration. */
    public static final int MIG_ARMED = 2;

    /**
     * {@return the state set with {@link #state(QpState)}, or for a query result the QP's current state; null when unset}
     */
    public QpState state() {
        return state;
    }
    /** {@return the assumed current state, or null when unset} */
    public QpState curState() {
        return curState;
    }
    /** {@return the remote access rights ({@code qp_access_flags}); empty when unset} */
    public Set<Access> access() {
        return access;
    }
    /** {@return the P_Key index ({@code pkey_index})} */
    public int pkeyIndex() {
        return pkeyIndex;
    }
    /** {@return the port number ({@code port_num}), from 1; 0 when unset} */
    public int port() {
        return port;
    }
    /** {@return the Q_Key ({@code qkey}) of a UD QP} */
    public int qkey() {
        return qkey;
    }
    /** {@return the remote port's address vector ({@code ah_attr}), or null when unset} */
    public AhAttr ah() {
        return ah;
    }
    /** {@return the path MTU ({@code path_mtu}), or null when unset} */
    public Mtu pathMtu() {
        return pathMtu;
    }
    /** {@return the local ACK timeout exponent ({@code timeout}): 4.096 µs × 2<sup>timeout</sup>, 0 = infinite} */
    public int timeout() {
        return timeout;
    }
    /** {@return the retry count after a timeout ({@code retry_cnt}), 0..7} */
    public int retryCnt() {
        return retryCnt;
    }
    /** {@return the retry count after an RNR NAK ({@code rnr_retry}), 0..7 with 7 = forever} */
    public int rnrRetry() {
        return rnrRetry;
    }
    /** {@return the first PSN expected from the peer ({@code rq_psn}), 24 bits} */
    public int rqPsn() {
        return rqPsn;
    }
    /** {@return the PSN of the first request ({@code sq_psn}), 24 bits} */
    public int sqPsn() {
        return sqPsn;
    }
    /** {@return the outstanding READ/atomic requests allowed as initiator ({@code max_rd_atomic})} */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }
    /** {@return the READ/atomic requests handled at once as responder ({@code max_dest_rd_atomic})} */
    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }
    /** {@return the RNR NAK timer code ({@code min_rnr_timer}), 0..31} */
    public int minRnrTimer() {
        return minRnrTimer;
    }
    /** {@return the remote QP number ({@code dest_qp_num}), 24 bits} */
    public int destQpNum() {
        return destQpNum;
    }
    /** {@return the queue capacities ({@code cap}), or null when unset} */
    public QpCap cap() {
        return cap;
    }
    /** {@return whether a move to SQD raises {@link AsyncEventType#SQ_DRAINED}} */
    public boolean enSqdAsyncNotify() {
        return enSqdAsyncNotify;
    }
    /** {@return whether the QP was in SQD and still draining its send queue when queried ({@code sq_draining})} */
    public boolean sqDraining() {
        return sqDraining;
    }
    /**
     * {@return the path migration state ({@code path_mig_state}): {@link #MIG_MIGRATED}, {@link #MIG_REARM} or {@link #MIG_ARMED}}
     */
    public int pathMigState() {
        return pathMigState;
    }
    /** {@return the alternate path's address vector ({@code alt_ah_attr}), or null when unset} */
    public AhAttr altAh() {
        return altAh;
    }
    /** {@return the alternate path's P_Key index ({@code alt_pkey_index})} */
    public int altPkeyIndex() {
        return altPkeyIndex;
    }
    /** {@return the alternate path's local port ({@code alt_port_num}); 0 when unset} */
    public int altPort() {
        return altPort;
    }
    /** {@return the alternate path's local ACK timeout exponent ({@code alt_timeout})} */
    public int altTimeout() {
        return altTimeout;
    }
    /** {@return a copy of the key of {@link #packetAuthKey(byte[])}, or null when unset} */
    public byte[] packetAuthKey() {
        return packetAuthKey == null ? null : packetAuthKey.clone();
    }
    /** {@return the send rate limit in kbit/s ({@code rate_limit}); 0 for none} */
    public int rateLimit() {
        return rateLimit;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("QpAttr[");
        for (QpAttrMask m : mask) {
            sb.append(m.name().toLowerCase()).append('=');
            sb.append(
                            switch (m) {
                                case STATE -> state;
                                case CUR_STATE -> curState;
                                case ACCESS_FLAGS -> access;
                                case PKEY_INDEX -> pkeyIndex;
                                case PORT -> port;
                                case QKEY -> qkey;
                                case AV -> ah;
                                case PATH_MTU -> pathMtu;
                                case TIMEOUT -> timeout;
                                case RETRY_CNT -> retryCnt;
                                case RNR_RETRY -> rnrRetry;
                                case RQ_PSN -> rqPsn;
                                case SQ_PSN -> sqPsn;
                                case MAX_QP_RD_ATOMIC -> maxRdAtomic;
                                case MAX_DEST_RD_ATOMIC -> maxDestRdAtomic;
                                case MIN_RNR_TIMER -> minRnrTimer;
                                case DEST_QPN -> destQpNum;
                                case CAP -> cap;
                                case EN_SQD_ASYNC_NOTIFY -> enSqdAsyncNotify;
                                case ALT_PATH ->
                                    "{ah=" + altAh + ", pkeyIndex=" + altPkeyIndex + ", port=" + altPort + ", timeout="
                                            + altTimeout + "}";
                                case PATH_MIG_STATE -> pathMigState;
                                case RATE_LIMIT -> rateLimit;
                                case PACKET_AUTH_KEY -> "(set)"; // a secret: never printed
                                default -> "?";
                            })
                    .append(", ");
        }
        if (!mask.isEmpty()) sb.setLength(sb.length() - 2);
        return sb.append(']').toString();
    }
}
