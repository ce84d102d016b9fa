package dev.jrdma.verbs;

/**
 * The walk of a UD queue pair from RESET to RTS, the UD counterpart of {@link RcWalk}: a UD QP names no
 * peer, so INIT takes the port and the Q_Key, RTR nothing, RTS the first PSN.
 */
public final class UdWalk {
    private UdWalk() {}

    /**
     * Moves {@code qp} from RESET to RTS.
     *
     * @param qp a UD QP in RESET
     * @param port the port it sends from and receives on
     * @param qkey the Q_Key its receives accept
     * @param sqPsn the first PSN it sends
     */
    public static void walk(QueuePair qp, int port, int qkey, int sqPsn) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(port).qkey(qkey));
        fromInit(qp, sqPsn);
    }

    /**
     * Moves {@code qp} from INIT to RTS, for a QP whose INIT attributes came from elsewhere (e.g. rdma_cm's
     * {@code initQpAttr}, which knows the port, P_Key index and Q_Key).
     *
     * @param qp a UD QP in INIT
     * @param sqPsn the first PSN it sends
     */
    public static void fromInit(QueuePair qp, int sqPsn) {
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(sqPsn));
    }
}
