package dev.jrdma.soft;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpCap;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.spi.Resource;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/** A protection domain of the software device. */
final class SoftPd extends Resource implements ProtectionDomain {
    private final SoftContext ctx;

    SoftPd(SoftContext ctx) {
        super(ctx, "protection domain");
        this.ctx = ctx;
    }

    @Override
    public SoftContext context() {
        return ctx;
    }

    Transport transport() {
        return ctx.transport;
    }

    @Override
    public MemoryRegion registerMemory(MemorySegment segment, Set<Access> access) {
        checkOpen("ibv_reg_mr");
        if (segment == null) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL, "segment is null");
        if (!segment.isNative())
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EINVAL,
                    "the segment is on the Java heap; register native memory (Arena.allocate)");
        if (!segment.scope().isAlive())
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EFAULT,
                    "the segment's arena is already closed: register memory from a live arena");
        if (!segment.isAccessibleBy(ctx.transport.rxThread()))
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EINVAL,
                    "the segment belongs to a confined arena, but the soft device reads and writes it from its own threads: "
                            + "allocate it from Arena.ofShared(), Arena.ofAuto() or Arena.global()");
        if (segment.byteSize() > SoftContext.MAX_MR_SIZE)
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EINVAL,
                    "region of " + segment.byteSize() + " bytes is larger than the soft device's max_mr_size "
                            + SoftContext.MAX_MR_SIZE);
        Access.checkConsistent("ibv_reg_mr", access);
        if (access.contains(Access.ZERO_BASED) || access.contains(Access.ON_DEMAND))
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EOPNOTSUPP,
                    "the soft device supports neither ZERO_BASED nor ON_DEMAND regions: leave these flags out");
        enter("ibv_reg_mr"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftMr(this, segment, access);
        } finally {
            exit();
        }
    }

    @Override
    public QueuePair createQueuePair(QpInitAttr attr) {
        checkOpen("ibv_create_qp");
        if (attr.type() != QpType.RC && attr.type() != QpType.UD)
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EOPNOTSUPP,
                    "the soft device implements RC and UD queue pairs (asked for " + attr.type() + ")");
        checkQpInit(attr);
        enter("ibv_create_qp"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftQp(this, attr);
        } finally {
            exit();
        }
    }

    /** The checks ibv_create_qp makes before a QP is made (so that no half-made QP joins this PD's children). */
    private void checkQpInit(QpInitAttr attr) {
        if (!(attr.sendCq() instanceof SoftCq s) || !(attr.recvCq() instanceof SoftCq r))
            throw new VerbsException(
                    "ibv_create_qp", VerbsException.EINVAL, "the completion queues are not soft device CQs");
        if (s.context() != context() || r.context() != context())
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EINVAL,
                    "the completion queues belong to another context than the PD");
        s.checkOpen("ibv_create_qp");
        r.checkOpen("ibv_create_qp");
        if (attr.srq() != null) {
            if (!(attr.srq() instanceof SoftSrq q) || q.pd != this)
                throw new VerbsException(
                        "ibv_create_qp",
                        VerbsException.EINVAL,
                        "the shared receive queue must belong to the QP's protection domain");
            q.checkOpen("ibv_create_qp");
        }
        QpCap c = attr.cap();
        if (c.maxSendWr() > SoftContext.MAX_QP_WR || c.maxRecvWr() > SoftContext.MAX_QP_WR)
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EINVAL,
                    "max_send_wr/max_recv_wr above the soft device's " + SoftContext.MAX_QP_WR);
        if (c.maxSendSge() > SoftContext.MAX_SGE || c.maxRecvSge() > SoftContext.MAX_SGE)
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EINVAL,
                    "max_send_sge/max_recv_sge above the soft device's " + SoftContext.MAX_SGE);
        if (c.maxInlineData() > SoftContext.MAX_INLINE)
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.EINVAL,
                    "max_inline_data above the soft device's " + SoftContext.MAX_INLINE);
    }

    @Override
    public MemoryWindow allocMemoryWindow(MwType type) {
        checkOpen("ibv_alloc_mw");
        if (type == null) throw new VerbsException("ibv_alloc_mw", VerbsException.EINVAL, "type is null");
        enter("ibv_alloc_mw"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftMw(this, type);
        } finally {
            exit();
        }
    }

    @Override
    public AddressHandle createAddressHandle(AhAttr attr) {
        checkOpen("ibv_create_ah");
        java.util.Objects.requireNonNull(attr, "attr");
        enter("ibv_create_ah"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftAh(this, attr, "ibv_create_ah");
        } finally {
            exit();
        }
    }

    @Override
    public AddressHandle createAddressHandleFromWc(WorkCompletion wc, MemorySegment grh, int port) {
        checkOpen("ibv_create_ah_from_wc");
        if (wc == null || !wc.isSuccess() || !wc.hasGrh())
            throw new VerbsException(
                    "ibv_create_ah_from_wc",
                    VerbsException.EINVAL,
                    "the completion must be a successful UD receive with its GRH (WITH_GRH)");
        if (grh == null || grh.byteSize() < Grh.BYTES)
            throw new VerbsException(
                    "ibv_create_ah_from_wc",
                    VerbsException.EINVAL,
                    "the GRH area must be the receive buffer's first 40 bytes");
        return createAddressHandle(new AhAttr().portNum(port).global(Grh.sourceGid(grh, 0), ctx.defaultGidIndex(port)));
    }

    @Override
    public SharedReceiveQueue createSrq(SrqAttr attr) {
        checkOpen("ibv_create_srq");
        java.util.Objects.requireNonNull(attr, "attr");
        SoftSrq.check(attr);
        enter("ibv_create_srq"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftSrq(this, attr);
        } finally {
            exit();
        }
    }

    /** The MR of this PD a local SGE names, or null when the lkey, PD, bounds or rights are wrong. */
    SoftMr localMr(int lkey, long addr, long len, boolean needLocalWrite) {
        if (!(ctx.transport.keyOwner(lkey) instanceof SoftMr mr)) return null;
        if (mr.key != lkey || mr.pd != this || mr.isClosed() || !mr.contains(addr, len)) return null;
        if (needLocalWrite && (mr.accessBits & Access.LOCAL_WRITE.bit) == 0) return null;
        return mr;
    }

    /** An MR of this PD that holds {@code [addr, addr+len)}, whatever its key (INLINE data names none), or null. */
    SoftMr mrContaining(long addr, long len) {
        KeyTable keys = ctx.transport.keys;
        for (int i = 0, n = keys.slots(); i < n; i++) {
            if (keys.ownerAt(i) instanceof SoftMr mr && mr.pd == this && !mr.isClosed() && mr.contains(addr, len))
                return mr;
        }
        return null;
    }

    @Override
    protected void destroy() {}
}
