package dev.jrdma.testkit;

import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;

/**
 * The walk of a UD queue pair from RESET to RTS, the UD counterpart of {@link dev.jrdma.verbs.RcWalk}: a UD QP names no
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
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(sqPsn));
    }
}
