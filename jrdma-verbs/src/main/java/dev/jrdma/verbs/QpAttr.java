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
    private int pkeyIndex, port, qkey, timeout, retryCnt, rnrRetry, rqPsn, sqPsn, maxRdAtomic, maxDestRdAtomic,
            minRnrTimer, destQpNum;
    private boolean enSqdAsyncNotify;
    private Mtu pathMtu;
    private AhAttr ah;
    private QpCap cap;

    private QpAttr set(QpAttrMask m) {
        mask.add(m);
        return this;
    }

    public Set<QpAttrMask> mask() { return mask; }
    public boolean has(QpAttrMask m) { return mask.contains(m); }

    public int maskBits() {
        int bits = 0;
        for (QpAttrMask m : mask) bits |= m.bit;
        return bits;
    }

    /** The state to move to. */
    public QpAttr state(QpState s) { state = s; return set(QpAttrMask.STATE); }
    public QpAttr curState(QpState s) { curState = s; return set(QpAttrMask.CUR_STATE); }
    /** What the remote side may do to this QP's memory (REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC). */
    public QpAttr access(Access... a) { access = a.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(a[0], a); return set(QpAttrMask.ACCESS_FLAGS); }
    public QpAttr access(Set<Access> a) { access = a.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(a); return set(QpAttrMask.ACCESS_FLAGS); }
    public QpAttr pkeyIndex(int i) { pkeyIndex = i; return set(QpAttrMask.PKEY_INDEX); }
    public QpAttr port(int p) { port = p; return set(QpAttrMask.PORT); }
    public QpAttr qkey(int q) { qkey = q; return set(QpAttrMask.QKEY); }
    /** The address vector of the remote port (RTR). */
    public QpAttr ah(AhAttr a) { ah = a; return set(QpAttrMask.AV); }
    public QpAttr pathMtu(Mtu m) { pathMtu = m; return set(QpAttrMask.PATH_MTU); }
    /** Local ACK timeout: 4.096 us * 2^timeout (0 = infinite). */
    public QpAttr timeout(int t) { timeout = t; return set(QpAttrMask.TIMEOUT); }
    /** Retransmissions after a timeout before RETRY_EXC_ERR (0..7). */
    public QpAttr retryCnt(int n) { retryCnt = n; return set(QpAttrMask.RETRY_CNT); }
    /** Retries after an RNR NAK before RNR_RETRY_EXC_ERR (0..7, 7 = forever). */
    public QpAttr rnrRetry(int n) { rnrRetry = n; return set(QpAttrMask.RNR_RETRY); }
    /** The PSN this QP expects first from the peer (the peer's sq_psn). */
    public QpAttr rqPsn(int psn) { rqPsn = psn & 0xFFFFFF; return set(QpAttrMask.RQ_PSN); }
    /** The PSN of this QP's first request. */
    public QpAttr sqPsn(int psn) { sqPsn = psn & 0xFFFFFF; return set(QpAttrMask.SQ_PSN); }
    /** RDMA READ and atomic requests this QP may have outstanding as initiator. */
    public QpAttr maxRdAtomic(int n) { maxRdAtomic = n; return set(QpAttrMask.MAX_QP_RD_ATOMIC); }
    /** RDMA READ and atomic requests this QP accepts outstanding as responder. */
    public QpAttr maxDestRdAtomic(int n) { maxDestRdAtomic = n; return set(QpAttrMask.MAX_DEST_RD_ATOMIC); }
    /** The RNR NAK timer code (0..31) this QP sends when it has no receive posted. */
    public QpAttr minRnrTimer(int t) { minRnrTimer = t; return set(QpAttrMask.MIN_RNR_TIMER); }
    public QpAttr destQpNum(int qpn) { destQpNum = qpn & 0xFFFFFF; return set(QpAttrMask.DEST_QPN); }
    public QpAttr cap(QpCap c) { cap = c; return set(QpAttrMask.CAP); }
    /** With a move to SQD: raise {@link AsyncEventType#SQ_DRAINED} once no send request is in flight any more. */
    public QpAttr enSqdAsyncNotify(boolean b) { enSqdAsyncNotify = b; return set(QpAttrMask.EN_SQD_ASYNC_NOTIFY); }

    public QpState state() { return state; }
    public QpState curState() { return curState; }
    public Set<Access> access() { return access; }
    public int pkeyIndex() { return pkeyIndex; }
    public int port() { return port; }
    public int qkey() { return qkey; }
    public AhAttr ah() { return ah; }
    public Mtu pathMtu() { return pathMtu; }
    public int timeout() { return timeout; }
    public int retryCnt() { return retryCnt; }
    public int rnrRetry() { return rnrRetry; }
    public int rqPsn() { return rqPsn; }
    public int sqPsn() { return sqPsn; }
    public int maxRdAtomic() { return maxRdAtomic; }
    public int maxDestRdAtomic() { return maxDestRdAtomic; }
    public int minRnrTimer() { return minRnrTimer; }
    public int destQpNum() { return destQpNum; }
    public QpCap cap() { return cap; }
    public boolean enSqdAsyncNotify() { return enSqdAsyncNotify; }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("QpAttr[");
        for (QpAttrMask m : mask) {
            sb.append(m.name().toLowerCase()).append('=');
            sb.append(switch (m) {
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
                default -> "?";
            }).append(", ");
        }
        if (!mask.isEmpty()) sb.setLength(sb.length() - 2);
        return sb.append(']').toString();
    }
}
