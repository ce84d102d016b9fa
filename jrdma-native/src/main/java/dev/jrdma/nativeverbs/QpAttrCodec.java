package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpAttrMask;
import dev.jrdma.verbs.QpCap;
import dev.jrdma.verbs.QpState;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;

/**
 * {@link QpAttr} to and from {@code struct ibv_qp_attr}: what {@code ibv_modify_qp} is given and {@code ibv_query_qp}
 * fills in. Only the members a mask names are written.
 */
final class QpAttrCodec {
    private QpAttrCodec() {}

    /** Writes the members {@code q}'s mask names into the {@code ibv_qp_attr} {@code s}. */
    static void write(QpAttr q, MemorySegment s) {
        GroupLayout L = Layouts.QP_ATTR;
        if (q.has(QpAttrMask.STATE))
            s.set(JAVA_INT, offset(L, "qp_state"), q.state().code());
        if (q.has(QpAttrMask.CUR_STATE))
            s.set(JAVA_INT, offset(L, "cur_qp_state"), q.curState().code());
        if (q.has(QpAttrMask.PATH_MTU)) s.set(JAVA_INT, offset(L, "path_mtu"), q.pathMtu().code);
        if (q.has(QpAttrMask.QKEY)) s.set(JAVA_INT, offset(L, "qkey"), q.qkey());
        if (q.has(QpAttrMask.RQ_PSN)) s.set(JAVA_INT, offset(L, "rq_psn"), q.rqPsn());
        if (q.has(QpAttrMask.SQ_PSN)) s.set(JAVA_INT, offset(L, "sq_psn"), q.sqPsn());
        if (q.has(QpAttrMask.DEST_QPN)) s.set(JAVA_INT, offset(L, "dest_qp_num"), q.destQpNum());
        if (q.has(QpAttrMask.ACCESS_FLAGS)) s.set(JAVA_INT, offset(L, "qp_access_flags"), Access.toBits(q.access()));
        if (q.has(QpAttrMask.CAP) && q.cap() != null) {
            QpCap c = q.cap();
            s.set(JAVA_INT, offset(L, "cap.max_send_wr"), c.maxSendWr());
            s.set(JAVA_INT, offset(L, "cap.max_recv_wr"), c.maxRecvWr());
            s.set(JAVA_INT, offset(L, "cap.max_send_sge"), c.maxSendSge());
            s.set(JAVA_INT, offset(L, "cap.max_recv_sge"), c.maxRecvSge());
            s.set(JAVA_INT, offset(L, "cap.max_inline_data"), c.maxInlineData());
        }
        if (q.has(QpAttrMask.AV) && q.ah() != null) writeAh(q.ah(), s, "ah_attr.");
        if (q.has(QpAttrMask.PKEY_INDEX)) s.set(JAVA_SHORT, offset(L, "pkey_index"), (short) q.pkeyIndex());
        if (q.has(QpAttrMask.MAX_QP_RD_ATOMIC)) s.set(JAVA_BYTE, offset(L, "max_rd_atomic"), (byte) q.maxRdAtomic());
        if (q.has(QpAttrMask.MAX_DEST_RD_ATOMIC))
            s.set(JAVA_BYTE, offset(L, "max_dest_rd_atomic"), (byte) q.maxDestRdAtomic());
        if (q.has(QpAttrMask.MIN_RNR_TIMER)) s.set(JAVA_BYTE, offset(L, "min_rnr_timer"), (byte) q.minRnrTimer());
        if (q.has(QpAttrMask.PORT)) s.set(JAVA_BYTE, offset(L, "port_num"), (byte) q.port());
        if (q.has(QpAttrMask.TIMEOUT)) s.set(JAVA_BYTE, offset(L, "timeout"), (byte) q.timeout());
        if (q.has(QpAttrMask.RETRY_CNT)) s.set(JAVA_BYTE, offset(L, "retry_cnt"), (byte) q.retryCnt());
        if (q.has(QpAttrMask.RNR_RETRY)) s.set(JAVA_BYTE, offset(L, "rnr_retry"), (byte) q.rnrRetry());
        if (q.has(QpAttrMask.EN_SQD_ASYNC_NOTIFY))
            s.set(JAVA_BYTE, offset(L, "en_sqd_async_notify"), (byte) (q.enSqdAsyncNotify() ? 1 : 0));
        if (q.has(QpAttrMask.ALT_PATH) && q.altAh() != null) {
            writeAh(q.altAh(), s, "alt_ah_attr.");
            s.set(JAVA_SHORT, offset(L, "alt_pkey_index"), (short) q.altPkeyIndex());
            s.set(JAVA_BYTE, offset(L, "alt_port_num"), (byte) q.altPort());
            s.set(JAVA_BYTE, offset(L, "alt_timeout"), (byte) q.altTimeout());
        }
        if (q.has(QpAttrMask.PATH_MIG_STATE)) s.set(JAVA_INT, offset(L, "path_mig_state"), q.pathMigState());
        if (q.has(QpAttrMask.RATE_LIMIT)) s.set(JAVA_INT, offset(L, "rate_limit"), q.rateLimit());
    }

    private static void writeAh(AhAttr ah, MemorySegment s, String p) {
        GroupLayout L = Layouts.QP_ATTR;
        MemorySegment.copy(ah.dgid.toByteArray(), 0, s, JAVA_BYTE, offset(L, p + "grh.dgid"), 16);
        s.set(JAVA_INT, offset(L, p + "grh.flow_label"), ah.flowLabel);
        s.set(JAVA_BYTE, offset(L, p + "grh.sgid_index"), (byte) ah.sgidIndex);
        s.set(JAVA_BYTE, offset(L, p + "grh.hop_limit"), (byte) ah.hopLimit);
        s.set(JAVA_BYTE, offset(L, p + "grh.traffic_class"), (byte) ah.trafficClass);
        s.set(JAVA_SHORT, offset(L, p + "dlid"), (short) ah.dlid);
        s.set(JAVA_BYTE, offset(L, p + "sl"), (byte) ah.sl);
        s.set(JAVA_BYTE, offset(L, p + "src_path_bits"), (byte) ah.srcPathBits);
        s.set(JAVA_BYTE, offset(L, p + "static_rate"), (byte) ah.staticRate);
        s.set(JAVA_BYTE, offset(L, p + "is_global"), (byte) (ah.isGlobal ? 1 : 0));
        s.set(JAVA_BYTE, offset(L, p + "port_num"), (byte) ah.portNum);
    }

    /** Every attribute {@link #read} reports: the mask {@code ibv_query_qp} is asked with. */
    static final int QUERY_ALL = QpAttrMask.STATE.bit
            | QpAttrMask.CUR_STATE.bit
            | QpAttrMask.ACCESS_FLAGS.bit
            | QpAttrMask.PKEY_INDEX.bit
            | QpAttrMask.PORT.bit
            | QpAttrMask.AV.bit
            | QpAttrMask.PATH_MTU.bit
            | QpAttrMask.TIMEOUT.bit
            | QpAttrMask.RETRY_CNT.bit
            | QpAttrMask.RNR_RETRY.bit
            | QpAttrMask.RQ_PSN.bit
            | QpAttrMask.MAX_QP_RD_ATOMIC.bit
            | QpAttrMask.MIN_RNR_TIMER.bit
            | QpAttrMask.SQ_PSN.bit
            | QpAttrMask.MAX_DEST_RD_ATOMIC.bit
            | QpAttrMask.CAP.bit
            | QpAttrMask.DEST_QPN.bit
            | QpAttrMask.QKEY.bit
            | QpAttrMask.EN_SQD_ASYNC_NOTIFY.bit
            | QpAttrMask.ALT_PATH.bit
            | QpAttrMask.PATH_MIG_STATE.bit;

    /** The attributes in the {@code ibv_qp_attr} {@code s} that {@code ibv_query_qp} filled for {@link #QUERY_ALL}. */
    static QpAttr read(MemorySegment s) {
        GroupLayout L = Layouts.QP_ATTR;
        QpAttr q = new QpAttr();
        QpState state = QpState.of(s.get(JAVA_INT, offset(L, "qp_state")));
        q.state(state).curState(state);
        int mtu = s.get(JAVA_INT, offset(L, "path_mtu"));
        if (mtu >= 1 && mtu <= 5) q.pathMtu(Mtu.of(mtu));
        q.qkey(s.get(JAVA_INT, offset(L, "qkey")))
                .rqPsn(s.get(JAVA_INT, offset(L, "rq_psn")))
                .sqPsn(s.get(JAVA_INT, offset(L, "sq_psn")))
                .destQpNum(s.get(JAVA_INT, offset(L, "dest_qp_num")))
                .access(Access.fromBits(s.get(JAVA_INT, offset(L, "qp_access_flags"))))
                .cap(new QpCap(
                        s.get(JAVA_INT, offset(L, "cap.max_send_wr")),
                        s.get(JAVA_INT, offset(L, "cap.max_recv_wr")),
                        s.get(JAVA_INT, offset(L, "cap.max_send_sge")),
                        s.get(JAVA_INT, offset(L, "cap.max_recv_sge")),
                        s.get(JAVA_INT, offset(L, "cap.max_inline_data"))))
                .pkeyIndex(Short.toUnsignedInt(s.get(JAVA_SHORT, offset(L, "pkey_index"))))
                .maxRdAtomic(u8(s, "max_rd_atomic"))
                .maxDestRdAtomic(u8(s, "max_dest_rd_atomic"))
                .minRnrTimer(u8(s, "min_rnr_timer"))
                .port(u8(s, "port_num"))
                .timeout(u8(s, "timeout"))
                .retryCnt(u8(s, "retry_cnt"))
                .rnrRetry(u8(s, "rnr_retry"))
                .enSqdAsyncNotify(u8(s, "en_sqd_async_notify") != 0)
                .sqDraining(u8(s, "sq_draining") != 0)
                .pathMigState(s.get(JAVA_INT, offset(L, "path_mig_state")))
                .altPath(
                        readAh(s, "alt_ah_attr."),
                        Short.toUnsignedInt(s.get(JAVA_SHORT, offset(L, "alt_pkey_index"))),
                        u8(s, "alt_port_num"),
                        u8(s, "alt_timeout"));
        q.ah(readAh(s, "ah_attr."));
        return q;
    }

    private static AhAttr readAh(MemorySegment s, String p) {
        GroupLayout L = Layouts.QP_ATTR;
        AhAttr ah = new AhAttr();
        byte[] dgid = new byte[16];
        MemorySegment.copy(s, JAVA_BYTE, offset(L, p + "grh.dgid"), dgid, 0, 16);
        ah.dgid = Gid.of(dgid);
        ah.flowLabel = s.get(JAVA_INT, offset(L, p + "grh.flow_label"));
        ah.sgidIndex = u8(s, p + "grh.sgid_index");
        ah.hopLimit = u8(s, p + "grh.hop_limit");
        ah.trafficClass = u8(s, p + "grh.traffic_class");
        ah.dlid = Short.toUnsignedInt(s.get(JAVA_SHORT, offset(L, p + "dlid")));
        ah.sl = u8(s, p + "sl");
        ah.srcPathBits = u8(s, p + "src_path_bits");
        ah.staticRate = u8(s, p + "static_rate");
        ah.isGlobal = u8(s, p + "is_global") != 0;
        ah.portNum = u8(s, p + "port_num");
        return ah;
    }

    private static int u8(MemorySegment s, String f) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, offset(Layouts.QP_ATTR, f)));
    }
}
