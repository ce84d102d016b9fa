package dev.jrdma.verbs;

import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * The walk of one RC queue pair from RESET through INIT and RTR to RTS towards its peer: the attributes of the three
 * {@link QueuePair#modify} calls in one place, with the defaults most connections want. Fill in what the peer
 * announced ({@link #to}, {@link #ah}, {@link #pathMtu}) and this side's first PSN ({@link #sqPsn}), then
 * {@link #walk} the QP, or take the steps one at a time when the peer's half arrives after INIT ({@link #toInit},
 * {@link #toRtr}, {@link #toRts}). Mutable and not thread-safe: one walk per QP.
 */
public final class RcWalk {
    private int port = 1;
    private int pkeyIndex;
    private Set<Access> access = EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
    private AhAttr ah = new AhAttr();
    private Mtu pathMtu = Mtu.MTU_1024;
    private int destQpNum;
    private int rqPsn;
    private int maxDestRdAtomic = 4;
    private int minRnrTimer = 12;
    private byte[] packetAuthKey;
    private int timeout = 14;
    private int retryCnt = 7;
    private int rnrRetry = 7;
    private int sqPsn;
    private int maxRdAtomic = 4;

    /** A walk with the defaults: port 1, remote write/read/atomic, MTU 1024, 4 READs/atomics each way, retries 7/7. */
    public RcWalk() {}

    /**
     * Aims the walk at the peer's QP.
     *
     * @param peerQpNum the peer's QP number ({@code dest_qp_num})
     * @param peerPsn the first PSN the peer sends from, which this QP's responder expects ({@code rq_psn})
     * @return this walk
     */
    public RcWalk to(int peerQpNum, int peerPsn) {
        destQpNum = peerQpNum;
        rqPsn = peerPsn & 0xFFFFFF;
        return this;
    }

    /**
     * Sets the local port (also the address vector's port).
     *
     * @param p the port number, from 1
     * @return this walk
     */
    public RcWalk port(int p) {
        port = p;
        ah.portNum = p;
        return this;
    }

    /**
     * Sets the P_Key index of INIT.
     *
     * @param i the index into the port's P_Key table
     * @return this walk
     */
    public RcWalk pkeyIndex(int i) {
        pkeyIndex = i;
        return this;
    }

    /**
     * Sets the rights the peer gets on this QP (INIT's {@code qp_access_flags}).
     *
     * @param rights the remote (and local) rights; may be empty
     * @return this walk
     */
    public RcWalk access(Set<Access> rights) {
        access = rights.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(rights);
        return this;
    }

    /**
     * Sets the rights the peer gets on this QP (INIT's {@code qp_access_flags}).
     *
     * @param rights the remote (and local) rights; none for none
     * @return this walk
     */
    public RcWalk access(Access... rights) {
        return access(rights.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(rights[0], rights));
    }

    /**
     * Sets the address vector towards the peer (RTR); its port becomes the walk's port.
     *
     * @param a the address vector: the peer's GID on RoCE, its LID on InfiniBand
     * @return this walk
     */
    public RcWalk ah(AhAttr a) {
        ah = Objects.requireNonNull(a, "ah");
        port = a.portNum;
        return this;
    }

    /**
     * Sets the path MTU (RTR): the smaller of both sides' active MTUs.
     *
     * @param m the path MTU
     * @return this walk
     */
    public RcWalk pathMtu(Mtu m) {
        pathMtu = Objects.requireNonNull(m, "pathMtu");
        return this;
    }

    /**
     * Sets how many READ/atomic requests the peer may have outstanding at this responder (RTR's
     * {@code max_dest_rd_atomic}).
     *
     * @param n the count
     * @return this walk
     */
    public RcWalk maxDestRdAtomic(int n) {
        maxDestRdAtomic = n;
        return this;
    }

    /**
     * Sets the RNR NAK delay this responder asks for (RTR's {@code min_rnr_timer}, the IBTA's 5-bit code).
     *
     * @param code the timer code
     * @return this walk
     */
    public RcWalk minRnrTimer(int code) {
        minRnrTimer = code;
        return this;
    }

    /**
     * Puts the QP in the software device's authenticated mode at RTR (see {@link QpAttr#packetAuthKey}).
     *
     * @param key16 the 16-byte key both sides agreed on, or null for plain RoCEv2
     * @return this walk
     */
    public RcWalk packetAuthKey(byte[] key16) {
        packetAuthKey = key16;
        return this;
    }

    /**
     * Sets the local ACK timeout exponent (RTS: 4.096 us * 2^t).
     *
     * @param t the exponent, 0 for none
     * @return this walk
     */
    public RcWalk timeout(int t) {
        timeout = t;
        return this;
    }

    /**
     * Sets how often a request is sent again without an answer (RTS).
     *
     * @param n 0..7
     * @return this walk
     */
    public RcWalk retryCnt(int n) {
        retryCnt = n;
        return this;
    }

    /**
     * Sets how often a request is sent again after an RNR NAK (RTS).
     *
     * @param n 0..6, or 7 for without end
     * @return this walk
     */
    public RcWalk rnrRetry(int n) {
        rnrRetry = n;
        return this;
    }

    /**
     * Sets the first PSN this QP sends from (RTS), the one it announced to the peer.
     *
     * @param psn a 24-bit PSN
     * @return this walk
     */
    public RcWalk sqPsn(int psn) {
        sqPsn = psn & 0xFFFFFF;
        return this;
    }

    /**
     * Sets how many READ/atomic requests this QP may have outstanding at the peer (RTS's {@code max_rd_atomic}).
     *
     * @param n the count
     * @return this walk
     */
    public RcWalk maxRdAtomic(int n) {
        maxRdAtomic = n;
        return this;
    }

    /** {@return INIT's attributes: port, P_Key index, the peer's rights} */
    public QpAttr initAttr() {
        return new QpAttr().state(QpState.INIT).pkeyIndex(pkeyIndex).port(port).access(access);
    }

    /** {@return RTR's attributes: the path to the peer's QP, its first PSN, the responder's resources} */
    public QpAttr rtrAttr() {
        QpAttr a = new QpAttr()
                .state(QpState.RTR)
                .ah(ah)
                .pathMtu(pathMtu)
                .destQpNum(destQpNum)
                .rqPsn(rqPsn)
                .maxDestRdAtomic(maxDestRdAtomic)
                .minRnrTimer(minRnrTimer);
        if (packetAuthKey != null) a.packetAuthKey(packetAuthKey);
        return a;
    }

    /** {@return RTS's attributes: the timers, retries, this side's first PSN and its READ/atomic depth} */
    public QpAttr rtsAttr() {
        return new QpAttr()
                .state(QpState.RTS)
                .timeout(timeout)
                .retryCnt(retryCnt)
                .rnrRetry(rnrRetry)
                .sqPsn(sqPsn)
                .maxRdAtomic(maxRdAtomic);
    }

    /**
     * Moves {@code qp} from RESET to INIT.
     *
     * @param qp a QP in RESET
     */
    public void toInit(QueuePair qp) {
        qp.modify(initAttr());
    }

    /**
     * Moves {@code qp} from INIT to RTR.
     *
     * @param qp a QP in INIT
     */
    public void toRtr(QueuePair qp) {
        qp.modify(rtrAttr());
    }

    /**
     * Moves {@code qp} from RTR to RTS.
     *
     * @param qp a QP in RTR
     */
    public void toRts(QueuePair qp) {
        qp.modify(rtsAttr());
    }

    /**
     * Walks {@code qp} from RESET to RTS.
     *
     * @param qp a QP in RESET
     */
    public void walk(QueuePair qp) {
        toInit(qp);
        toRtr(qp);
        toRts(qp);
    }
}
