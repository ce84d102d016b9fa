package dev.jrdma.soft;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.VerbsException;
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

    @Override public SoftContext context() { return ctx; }

    Transport transport() { return ctx.transport; }

    @Override
    public MemoryRegion registerMemory(MemorySegment segment, Set<Access> access) {
        checkOpen("ibv_reg_mr");
        if (segment == null) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL, "segment is null");
        if (!segment.isNative()) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL,
                "the segment is on the Java heap; register native memory (Arena.allocate)");
        if (!segment.scope().isAlive()) throw new VerbsException("ibv_reg_mr", VerbsException.EFAULT,
                "the segment's arena is already closed: register memory from a live arena");
        if (!segment.isAccessibleBy(ctx.transport.rxThread())) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL,
                "the segment belongs to a confined arena, but the soft device reads and writes it from its own threads: "
                        + "allocate it from Arena.ofShared(), Arena.ofAuto() or Arena.global()");
        if (segment.byteSize() > SoftContext.MAX_MSG * 2) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL,
                "region of " + segment.byteSize() + " bytes is larger than the soft device's max_mr_size " + SoftContext.MAX_MSG * 2);
        Access.checkConsistent("ibv_reg_mr", access);
        if (access.contains(Access.ZERO_BASED) || access.contains(Access.ON_DEMAND)) throw new VerbsException("ibv_reg_mr",
                VerbsException.EOPNOTSUPP, "the soft device supports neither ZERO_BASED nor ON_DEMAND regions: leave these flags out");
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
        if (attr.type() != QpType.RC) throw new VerbsException("ibv_create_qp", VerbsException.EOPNOTSUPP,
                "the soft device implements RC queue pairs only (asked for " + attr.type() + ")");
        enter("ibv_create_qp"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftQp(this, attr);
        } finally {
            exit();
        }
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
    protected void destroy() {}
}
