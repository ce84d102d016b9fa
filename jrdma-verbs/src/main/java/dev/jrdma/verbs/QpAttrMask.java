package dev.jrdma.verbs;

/** Which attributes a modify carries ({@code enum ibv_qp_attr_mask}); set for you by {@link QpAttr}'s setters. */
public enum QpAttrMask {
    /** {@code IBV_QP_STATE}: {@link QpAttr#state(QpState)}. */
    STATE(0),
    /** {@code IBV_QP_CUR_STATE}: {@link QpAttr#curState(QpState)}. */
    CUR_STATE(1),
    /** {@code IBV_QP_EN_SQD_ASYNC_NOTIFY}: {@link QpAttr#enSqdAsyncNotify(boolean)}. */
    EN_SQD_ASYNC_NOTIFY(2),
    /** {@code IBV_QP_ACCESS_FLAGS}: {@link QpAttr#access(Access...)}. */
    ACCESS_FLAGS(3),
    /** {@code IBV_QP_PKEY_INDEX}: {@link QpAttr#pkeyIndex(int)}. */
    PKEY_INDEX(4),
    /** {@code IBV_QP_PORT}: {@link QpAttr#port(int)}. */
    PORT(5),
    /** {@code IBV_QP_QKEY}: {@link QpAttr#qkey(int)}. */
    QKEY(6),
    /** {@code IBV_QP_AV}: the primary path's address vector, {@link QpAttr#ah(AhAttr)}. */
    AV(7),
    /** {@code IBV_QP_PATH_MTU}: {@link QpAttr#pathMtu(Mtu)}. */
    PATH_MTU(8),
    /** {@code IBV_QP_TIMEOUT}: {@link QpAttr#timeout(int)}. */
    TIMEOUT(9),
    /** {@code IBV_QP_RETRY_CNT}: {@link QpAttr#retryCnt(int)}. */
    RETRY_CNT(10),
    /** {@code IBV_QP_RNR_RETRY}: {@link QpAttr#rnrRetry(int)}. */
    RNR_RETRY(11),
    /** {@code IBV_QP_RQ_PSN}: {@link QpAttr#rqPsn(int)}. */
    RQ_PSN(12),
    /** {@code IBV_QP_MAX_QP_RD_ATOMIC}: {@link QpAttr#maxRdAtomic(int)}. */
    MAX_QP_RD_ATOMIC(13),
    /** {@code IBV_QP_ALT_PATH}: the alternate path for automatic path migration (no setter: jrdma does not migrate). */
    ALT_PATH(14),
    /** {@code IBV_QP_MIN_RNR_TIMER}: {@link QpAttr#minRnrTimer(int)}. */
    MIN_RNR_TIMER(15),
    /** {@code IBV_QP_SQ_PSN}: {@link QpAttr#sqPsn(int)}. */
    SQ_PSN(16),
    /** {@code IBV_QP_MAX_DEST_RD_ATOMIC}: {@link QpAttr#maxDestRdAtomic(int)}. */
    MAX_DEST_RD_ATOMIC(17),
    /** {@code IBV_QP_PATH_MIG_STATE}: the path migration state (no setter: jrdma does not migrate). */
    PATH_MIG_STATE(18),
    /** {@code IBV_QP_CAP}: {@link QpAttr#cap(QpCap)}. */
    CAP(19),
    /** {@code IBV_QP_DEST_QPN}: {@link QpAttr#destQpNum(int)}. */
    DEST_QPN(20),
    /** {@code IBV_QP_RATE_LIMIT}: a packet pacing rate (no setter). */
    RATE_LIMIT(25),
    /**
     * jrdma's own, no {@code IBV_QP_*} attribute: the per-connection key of {@link QpAttr#packetAuthKey(byte[])}, a MAC
     * on every packet between two jrdma software devices. Providers that cannot ({@link Context#supportsPacketAuth()}
     * is false: the kernel/hardware one) refuse a modify that carries it; its bit is one the kernel does not define.
     */
    PACKET_AUTH_KEY(30);

    /** The {@code IBV_QP_*} bit of this attribute in {@code ibv_modify_qp}'s {@code attr_mask}. */
    public final int bit;

    QpAttrMask(int shift) {
        this.bit = 1 << shift;
    }
}
