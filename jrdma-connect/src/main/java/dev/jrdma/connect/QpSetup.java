package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import java.security.SecureRandom;
import java.util.Set;

/**
 * A connection's QP from RESET to RTS with what both sides announced in the TCP exchange (rdma_cm computes these
 * attributes itself and hands them to the QP as they are): INIT with only the configured remote rights, RTR
 * towards the peer's QP, path and first PSN, RTS from this side's first PSN. And this side's parameters, the ones
 * it announces.
 */
final class QpSetup {
    private QpSetup() {}

    /** Local ACK timeout exponent: 4.096 us * 2^14, about 67 ms before a request is sent again. */
    static final int ACK_TIMEOUT = 14;
    /** Times a request is sent again without an answer (the most IBTA allows). */
    static final int RETRY_COUNT = 7;
    /** The RNR NAK delay this side's responder asks for (IBTA table: 12 = 0.64 ms). */
    static final int MIN_RNR_TIMER = 12;
    /** GRH hop limit of RoCE and routed InfiniBand paths. */
    static final int HOP_LIMIT = 64;
    /** The most READ/atomic requests in flight either way, whatever the device allows. */
    static final int MAX_RD_ATOMIC = 16;

    private static final SecureRandom PSNS = new SecureRandom();

    /** RNR retries (7: without end); credits keep a sender from meeting an empty receive queue, tests set 0 to prove it. */
    static int rnrRetry() {
        return Integer.getInteger("jrdma.connect.rnrRetry", 7);
    }

    /** READ/atomic requests in flight, both as initiator and as target: what the device allows, 1 to {@link #MAX_RD_ATOMIC}. */
    static int rdAtomic(DeviceAttr attr) {
        int n = Math.min(attr.maxQpRdAtom(), attr.maxQpInitRdAtom());
        return Math.max(1, Math.min(MAX_RD_ATOMIC, n));
    }

    /** What this side announces: its QP, port LID, GID and MTU, a random first PSN, and its export (or null). */
    static ConnParams localParams(EndpointGroup group, QueuePair qp, RemoteBuffer export) {
        PortAttr port = group.context().queryPort(EndpointGroup.PORT);
        int psn = PSNS.nextInt() & 0xFFFFFF;
        return new ConnParams(
                export == null ? 0 : export.address(),
                export == null ? 0 : export.rkey(),
                qp.qpNum(),
                port.lid(),
                group.context().queryGid(EndpointGroup.PORT, group.gidIndex()),
                psn,
                port.activeMtu());
    }

    /** RESET to INIT with only {@code rights} for the peer. */
    static void toInit(QueuePair qp, Set<Access> rights, int pkeyIndex, int port) {
        new RcWalk().port(port).pkeyIndex(pkeyIndex).access(rights).toInit(qp);
    }

    /** INIT to RTR: towards the peer's QP (its GID when it has one), the smaller of both MTUs, expecting its first PSN. */
    static void toRtr(QueuePair qp, EndpointGroup group, ConnParams local, ConnParams remote) {
        toRtr(qp, group, local, remote, null);
    }

    /** {@link #toRtr(QueuePair, EndpointGroup, ConnParams, ConnParams)}, in the authenticated mode with {@code packetKey} when it is not null. */
    static void toRtr(QueuePair qp, EndpointGroup group, ConnParams local, ConnParams remote, byte[] packetKey) {
        walk(group, local, remote).packetAuthKey(packetKey).toRtr(qp);
    }

    /** RTR to RTS: sending from this side's first PSN. */
    static void toRts(QueuePair qp, EndpointGroup group, ConnParams local) {
        new RcWalk()
                .timeout(ACK_TIMEOUT)
                .retryCnt(RETRY_COUNT)
                .rnrRetry(rnrRetry())
                .sqPsn(local.psn())
                .maxRdAtomic(rdAtomic(group.deviceAttr()))
                .toRts(qp);
    }

    /** The RTR half of the walk from what both sides announced. */
    private static RcWalk walk(EndpointGroup group, ConnParams local, ConnParams remote) {
        AhAttr ah = new AhAttr().dlid(remote.lid()).portNum(EndpointGroup.PORT);
        if (!remote.gid().isZero()) ah.global(remote.gid(), group.gidIndex()).hopLimit(HOP_LIMIT);
        return new RcWalk()
                .ah(ah)
                .pathMtu(local.mtu().min(remote.mtu()))
                .to(remote.qpNum(), remote.psn())
                .maxDestRdAtomic(rdAtomic(group.deviceAttr()))
                .minRnrTimer(MIN_RNR_TIMER);
    }
}
