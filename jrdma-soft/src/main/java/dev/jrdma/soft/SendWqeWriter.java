package dev.jrdma.soft;

import dev.jrdma.soft.SendWqe.Progress;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.QpCap;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Sge;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;

/** Turns a posted send work request into a {@link SendWqe} (rxe's {@code init_send_wqe}), under the QP's monitor. */
final class SendWqeWriter {
    private SendWqeWriter() {}

    /**
     * Copies {@code wr} (the {@code idx}th of its chain) into {@code w}: what the request says, its local regions, and
     * its inline data (copied now, as the verb requires); a bad region or length becomes the WQE's local error, to be
     * completed in order, and what ibv_post_send itself refuses is a {@link PostException}.
     *
     * @param w the free slot of the send queue
     * @param wr the work request
     * @param idx its place in the chain posted (for the exception)
     * @param qp the QP it is posted on
     * @param sigAll the QP's sq_sig_all
     */
    static void write(SendWqe w, SendWorkRequest wr, int idx, SoftQp qp, boolean sigAll) {
        SoftPd pd = qp.pd();
        QpCap cap = qp.cap();
        WrOpcode op = wr.opcode;
        if (op == null) throw new PostException("ibv_post_send", VerbsException.EINVAL, idx, "opcode is null");
        w.wrId = wr.wrId;
        w.op = op;
        w.signaled = sigAll || wr.flags.contains(SendFlag.SIGNALED);
        w.fence = wr.flags.contains(SendFlag.FENCE);
        w.solicited = wr.flags.contains(SendFlag.SOLICITED);
        w.inline = wr.flags.contains(SendFlag.INLINE);
        w.readOrAtomic = op == WrOpcode.RDMA_READ || op.isAtomic();
        w.local = op == WrOpcode.BIND_MW || op == WrOpcode.LOCAL_INV;
        w.localErr = null;
        w.remoteAddr = wr.remoteAddr;
        w.rkey = wr.rkey;
        w.imm = wr.immData;
        w.invRkey = wr.invalidateRkey;
        w.compareAdd = wr.compareAdd;
        w.swap = wr.swap;
        w.progress = Progress.POSTED;
        w.bindMw = null;
        w.bindMr = null;
        if (op == WrOpcode.BIND_MW) {
            if (!(wr.bindMw instanceof SoftMw mw) || mw.type != MwType.TYPE_2)
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "BIND_MW work requests bind type 2 windows of this device; bind a type 1 window with QueuePair.bindMemoryWindow");
            if (!(wr.bindMr instanceof SoftMr mr))
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "BIND_MW needs bindMr, a memory region of this device");
            w.bindMw = mw;
            w.bindMr = mr;
            // 0 = let the provider pick a new random key; MemoryWindow.rkey() is the key of the last bind posted
            if (wr.bindRkey == 0) w.bindRkey = mw.nextRkey();
            else qp.transport().noteKey(w.bindRkey = wr.bindRkey);
            mw.rkey = w.bindRkey;
            w.bindAddr = wr.bindAddr;
            w.bindLen = wr.bindLength;
            w.bindAccess = Access.toBits(wr.bindAccess);
            w.numSge = 0;
            w.total = 0;
            return;
        }
        if (op == WrOpcode.LOCAL_INV) {
            w.numSge = 0;
            w.total = 0;
            return;
        }
        int n = wr.numSge();
        w.numSge = n;
        long total = 0;
        boolean needWrite = w.readOrAtomic;
        for (int i = 0; i < n; i++) {
            Sge g = wr.sge(i);
            long l = Integer.toUnsignedLong(g.length);
            w.addr[i] = g.addr;
            w.len[i] = l;
            total += l;
            SoftMr mr = pd.localMr(g.lkey, g.addr, l, needWrite);
            w.mr[i] = mr;
            if (mr == null && l > 0 && !w.inline) w.localErr = WcStatus.LOC_PROT_ERR;
        }
        w.total = total;
        if (total > SoftContext.MAX_MSG && w.localErr == null) w.localErr = WcStatus.LOC_LEN_ERR;
        if (op.isAtomic() && w.localErr == null && total < 8) w.localErr = WcStatus.LOC_LEN_ERR;
        if (w.inline && !w.readOrAtomic) {
            if (total > cap.maxInlineData())
                throw new PostException(
                        "ibv_post_send",
                        VerbsException.EINVAL,
                        idx,
                        "INLINE data of " + total + " bytes is above the QP's max_inline_data " + cap.maxInlineData());
            if (w.inlineData == null && cap.maxInlineData() > 0)
                w.inlineData = MemorySegment.ofArray(new byte[cap.maxInlineData()]);
            long off = 0;
            for (int i = 0; i < n && w.localErr == null; i++) {
                SoftMr mr = w.mr[i];
                if (w.len[i] == 0) continue;
                if (mr == null) mr = pd.mrContaining(w.addr[i], w.len[i]);
                if (mr == null) {
                    throw new PostException(
                            "ibv_post_send",
                            VerbsException.EINVAL,
                            idx,
                            "INLINE data must lie in memory registered in this protection domain (the soft device cannot read raw addresses)");
                }
                try {
                    MemorySegment.copy(mr.seg, w.addr[i] - mr.addr, w.inlineData, off, w.len[i]);
                } catch (RuntimeException e) {
                    w.localErr = WcStatus.LOC_PROT_ERR;
                }
                off += w.len[i];
            }
        }
    }
}
