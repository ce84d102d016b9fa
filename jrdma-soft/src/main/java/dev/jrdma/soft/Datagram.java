package dev.jrdma.soft;

import static dev.jrdma.soft.wire.Opcode.IMMDT;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Deth;
import dev.jrdma.soft.wire.ImmDt;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The UD transport of a soft QP (IBA 9.8; the UD paths of rxe's req/resp): a SEND is one packet with a DETH,
 * built and sent at post time and completed at once, since UD has no ACKs and no retries. A receive checks the
 * Q_Key, takes the next receive WQE (or the SRQ's) and puts the 40-byte GRH area in front of the payload: for
 * RoCEv2 over IPv4 its last 20 bytes hold the packet's IPv4 header, over IPv6 all 40 its IPv6 header, as rxe writes them. Runs under the QP's monitor;
 * allocation-free.
 */
final class Datagram {
    /** A Q_Key with the high bit set in a send WR means "use the QP's own Q_Key" (IBA 10.2.5, controlled Q_Keys). */
    private static final int CONTROLLED_QKEY_BIT = 0x8000_0000;

    private static final int HOP_LIMIT = 64, UDP = 17;

    private final SoftQp qp;
    private final RecvQueue rq;
    private final ByteBuffer grh = ByteBuffer.allocateDirect(Grh.BYTES).order(ByteOrder.BIG_ENDIAN);
    private final MemorySegment grhSeg = MemorySegment.ofBuffer(grh);
    private int psn;

    Datagram(SoftQp qp, RecvQueue rq) {
        this.qp = qp;
        this.rq = rq;
    }

    /** The largest datagram: the port's active MTU (a UD QP has no path MTU of its own). */
    private int mtu() {
        return qp.transport().activeMtu.bytes;
    }

    /** Sends a chain of UD SENDs; throws at the first request that cannot be posted, after sending those before it. */
    void post(SendWorkRequest first, boolean sigAll) {
        int idx = 0;
        for (SendWorkRequest wr = first; wr != null; wr = wr.next, idx++) {
            if (qp.state() != QpState.RTS)
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "the UD QP is in " + qp.state() + "; sends need RTS");
            if (wr.opcode != WrOpcode.SEND && wr.opcode != WrOpcode.SEND_WITH_IMM)
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "a UD QP only sends SEND and SEND_WITH_IMM, not " + wr.opcode);
            if (!(wr.ah instanceof SoftAh ah) || ah.pd != qp.pd() || ah.isClosed())
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "a UD send needs an open address handle of this QP's PD (SendWorkRequest.ud)");
            if (wr.numSge() > qp.cap().maxSendSge())
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "num_sge " + wr.numSge() + " is above the QP's max_send_sge "
                                + qp.cap().maxSendSge());
            long total = wr.totalLength();
            if (total > mtu())
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "a UD message of " + total + " bytes is larger than the port's MTU " + mtu()
                                + ": a datagram is one packet");
            if (wr.flags.contains(SendFlag.INLINE) && total > qp.cap().maxInlineData())
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "inline data of " + total + " bytes is above the QP's max_inline_data "
                                + qp.cap().maxInlineData());
            WcStatus status = send(wr, ah, (int) total);
            if (sigAll || wr.flags.contains(SendFlag.SIGNALED) || status != WcStatus.SUCCESS) {
                qp.sendCq()
                        .push(
                                wr.wrId,
                                status,
                                WcOpcode.SEND,
                                status == WcStatus.SUCCESS ? (int) total : 0,
                                0,
                                0,
                                qp.qpNum(),
                                0,
                                false);
            }
        }
    }

    private WcStatus send(SendWorkRequest wr, SoftAh ah, int total) {
        ByteBuffer b = qp.out.tx;
        boolean imm = wr.opcode == WrOpcode.SEND_WITH_IMM;
        int opcode = imm ? Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.code() : Opcode.UD_SEND_ONLY.code();
        int len = RocePacket.writeBth(
                b, 0, opcode, wr.flags.contains(SendFlag.SOLICITED), Bth.DEFAULT_PKEY, wr.remoteQpn, false, psn, total);
        int qk = (wr.remoteQkey & CONTROLLED_QKEY_BIT) != 0 ? qp.qkey : wr.remoteQkey;
        Deth.write(b, Bth.BYTES, qk, qp.qpNum());
        if (imm) ImmDt.write(b, Bth.BYTES + Deth.BYTES, wr.immData);
        int at = Opcode.headerLength(opcode);
        for (int i = 0; i < wr.numSge(); i++) {
            Sge g = wr.sge(i);
            long l = Integer.toUnsignedLong(g.length);
            if (l == 0) continue;
            SoftMr mr = qp.pd().localMr(g.lkey, g.addr, l, false);
            if (mr == null) return WcStatus.LOC_PROT_ERR;
            try {
                MemorySegment.copy(mr.seg, g.addr - mr.addr, qp.out.txSeg, at, l);
            } catch (RuntimeException e) { // the region's arena was closed
                return WcStatus.LOC_PROT_ERR;
            }
            at += (int) l;
        }
        psn = (psn + 1) & 0xFFFFFF;
        qp.out.transmitTo(len, ah.remoteAddr, ah.remote);
        return WcStatus.SUCCESS;
    }

    /** A datagram for this QP (the driving thread). False when dropped (and counted): wrong Q_Key, no receive WQE, wrong state. */
    boolean receive(RocePacket p, MemorySegment seg, IpAddress src, IpAddress dst) {
        QpState s = qp.state();
        if (s != QpState.RTR && s != QpState.RTS) return drop(Counter.RX_QP_NOT_READY);
        if (p.dethQkey() != qp.qkey)
            return drop(Counter.RX_BAD_QKEY); // IBA 10.2.5: a Q_Key violation drops the datagram, unanswered
        if (!qp.takeReceive()) return drop(Counter.RX_NO_RECEIVE); // no receive posted: UD drops, no RNR
        RecvWqe r = rq.first();
        int plen = p.payloadLength();
        rq.head++;
        if (r.localErr != null) return complete(r, r.localErr, 0, 0, 0, p);
        if (Grh.BYTES + (long) plen > r.total) return complete(r, WcStatus.LOC_LEN_ERR, 0, 0, 0, p);
        if (src.isIpv4()) writeGrh(src.ipv4(), dst.ipv4(), p.length());
        else writeGrh6(src, dst, p.length());
        if (!r.scatter(grhSeg, 0, 0, Grh.BYTES) || (plen > 0 && !r.scatter(seg, p.payloadOffset(), Grh.BYTES, plen)))
            return complete(r, WcStatus.LOC_PROT_ERR, 0, 0, 0, p);
        boolean imm = (p.flags() & IMMDT) != 0;
        return complete(
                r,
                WcStatus.SUCCESS,
                Grh.BYTES + plen,
                imm ? p.immediate() : 0,
                WorkCompletion.WITH_GRH | (imm ? WorkCompletion.WITH_IMM : 0),
                p);
    }

    private boolean drop(Counter reason) {
        qp.count(reason);
        return false;
    }

    private boolean complete(RecvWqe r, WcStatus status, int byteLen, int immData, int flags, RocePacket p) {
        qp.recvCq()
                .push(
                        r.wrId,
                        status,
                        WcOpcode.RECV,
                        byteLen,
                        immData,
                        flags,
                        qp.qpNum(),
                        p.dethSrcQp(),
                        p.solicitedEvent());
        return true;
    }

    /**
     * The GRH area of RoCEv2 over IPv6: the IPv6 header the datagram came with, as rxe copies it. A UDP socket does
     * not show the traffic class and flow label it arrived with: they read 0; the hop limit reads 64.
     */
    private void writeGrh6(IpAddress src, IpAddress dst, int roceLength) {
        ByteBuffer g = grh;
        g.putInt(0, 6 << 28); // version 6, traffic class 0, flow label 0
        g.putShort(4, (short) (8 + roceLength)); // payload length: UDP + RoCE
        g.put(6, (byte) UDP);
        g.put(7, (byte) HOP_LIMIT);
        g.putLong(8, src.hi).putLong(16, src.lo).putLong(24, dst.hi).putLong(32, dst.lo);
    }

    /** The GRH area of RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header the datagram came with. */
    private void writeGrh(int srcIp, int dstIp, int roceLength) {
        ByteBuffer g = grh;
        for (int i = 0; i < 20; i++) g.put(i, (byte) 0);
        g.put(20, (byte) 0x45); // version 4, 5 words
        g.put(21, (byte) 0); // DSCP/ECN
        g.putShort(22, (short) (20 + 8 + roceLength)); // IP + UDP + RoCE
        g.putShort(24, (short) 0); // identification
        g.putShort(26, (short) 0x4000); // don't fragment
        g.put(28, (byte) HOP_LIMIT);
        g.put(29, (byte) UDP);
        g.putShort(30, (short) 0);
        g.putInt(32, srcIp);
        g.putInt(36, dstIp);
        int sum = 0;
        for (int i = 20; i < 40; i += 2) sum += g.getShort(i) & 0xFFFF;
        while ((sum >>> 16) != 0) sum = (sum & 0xFFFF) + (sum >>> 16);
        g.putShort(30, (short) ~sum);
    }
}
