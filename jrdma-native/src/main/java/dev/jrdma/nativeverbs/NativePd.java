package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.SharedReceiveQueue;
import dev.jrdma.verbs.SrqAttr;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;

/** A protection domain ({@code struct ibv_pd*}). Its MRs, MWs and QPs are its children. */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class NativePd extends NativeResource implements ProtectionDomain {
    final NativeContext context;
    final MemorySegment pd;
    /** Live MRs, copy-on-write: the data path scans it without allocating. */
    private volatile NativeMr[] mrs = new NativeMr[0];
    /** Live memory windows (closed before a region they are bound to is deregistered). */
    final java.util.Set<NativeMw> mws = java.util.concurrent.ConcurrentHashMap.newKeySet();

    NativePd(NativeContext context, MemorySegment pd) {
        super(context, "PD 0x" + Long.toHexString(pd.address()) + " of " + context.device.name());
        this.context = context;
        this.pd = pd;
    }

    @Override
    public Context context() {
        return context;
    }

    NativeMr[] mrs() {
        return mrs;
    }

    /** The live MR with this lkey, or null. */
    NativeMr mrByLkey(int lkey) {
        for (NativeMr m : mrs) if (m.lkey == lkey) return m;
        return null;
    }

    synchronized void addMr(NativeMr m) {
        NativeMr[] a = Arrays.copyOf(mrs, mrs.length + 1);
        a[a.length - 1] = m;
        mrs = a;
    }

    synchronized void removeMr(NativeMr m) {
        NativeMr[] a = mrs;
        for (int i = 0; i < a.length; i++) {
            if (a[i] == m) {
                NativeMr[] b = new NativeMr[a.length - 1];
                System.arraycopy(a, 0, b, 0, i);
                System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                mrs = b;
                return;
            }
        }
    }

    @Override
    public MemoryRegion registerMemory(MemorySegment segment, Set<Access> access) {
        checkOpen("ibv_reg_mr");
        if (segment == null) throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL, "segment is null");
        if (!segment.isNative()) {
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EINVAL,
                    "a heap segment (from a Java array or heap ByteBuffer) cannot be "
                            + "registered: the garbage collector moves it while the device would access it. Allocate native memory instead: "
                            + "arena.allocate(size, 4096) or ByteBuffer.allocateDirect(size)");
        }
        if (!segment.scope().isAlive()) {
            throw new VerbsException(
                    "ibv_reg_mr",
                    VerbsException.EINVAL,
                    "the segment's arena is already closed: register memory of a live arena");
        }
        if (segment.byteSize() == 0)
            throw new VerbsException("ibv_reg_mr", VerbsException.EINVAL, "the segment is empty (0 bytes)");
        Access.checkConsistent("ibv_reg_mr", access);
        int bits = Access.toBits(access);
        enter("ibv_reg_mr");
        try {
            return register(segment, access, bits);
        } finally {
            exit();
        }
    }

    /** ibv_reg_mr and the Java object, under {@link #enter}. */
    private NativeMr register(MemorySegment segment, Set<Access> access, int bits) {
        MemorySegment mr;
        int errno;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            // pass the raw address: the registration outlives this call and must not tie up the segment's scope
            mr = (MemorySegment) Ibv.Fn.REG_MR.invokeExact(
                    st, pd, MemorySegment.ofAddress(segment.address()), segment.byteSize(), bits);
            errno = Ibv.errno(st);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (mr.equals(MemorySegment.NULL)) {
            String hint = switch (errno) {
                case VerbsException.ENOMEM, VerbsException.EAGAIN ->
                    "cannot pin " + segment.byteSize() + " bytes: check the memlock limit "
                            + "('ulimit -l'; raise it, e.g. 'ulimit -l unlimited' or memlock in /etc/security/limits.conf, or LimitMEMLOCK= for a systemd service)";
                case VerbsException.EINVAL ->
                    "check the access flags " + access + " (REMOTE_WRITE/REMOTE_ATOMIC need LOCAL_WRITE; MW_BIND, "
                            + "ON_DEMAND and RELAXED_ORDERING need device support) and the length against max_mr_size";
                case VerbsException.EFAULT -> "the address range is not mapped memory";
                default -> "check the memlock limit (ulimit -l) and the access flags " + access;
            };
            throw Errors.verb("ibv_reg_mr", errno, hint);
        }
        MemorySegment mrs = mr.reinterpret(Layouts.MR.byteSize());
        NativeMr m;
        try {
            m = new NativeMr(
                    this, segment, mrs, access.isEmpty() ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(access));
        } catch (RuntimeException e) { // closed meanwhile: do not leak the registration
            deregQuietly(mrs);
            throw e;
        }
        addMr(m);
        return m;
    }

    @Override
    public QueuePair createQueuePair(QpInitAttr attr) {
        enter("ibv_create_qp");
        try {
            return NativeQp.create(this, attr);
        } finally {
            exit();
        }
    }

    @Override
    public AddressHandle createAddressHandle(AhAttr attr) {
        java.util.Objects.requireNonNull(attr, "attr");
        enter("ibv_create_ah");
        try {
            return NativeAh.create(this, attr);
        } finally {
            exit();
        }
    }

    @Override
    public AddressHandle createAddressHandleFromWc(WorkCompletion wc, MemorySegment grh, int port) {
        java.util.Objects.requireNonNull(wc, "wc");
        enter("ibv_create_ah_from_wc");
        try {
            return NativeAh.fromWc(this, wc, grh, port);
        } finally {
            exit();
        }
    }

    @Override
    public SharedReceiveQueue createSrq(SrqAttr attr) {
        java.util.Objects.requireNonNull(attr, "attr");
        enter("ibv_create_srq");
        try {
            return NativeSrq.create(this, attr);
        } finally {
            exit();
        }
    }

    private static void deregQuietly(MemorySegment mr) {
        try (Arena a = Arena.ofConfined()) {
            int ignored = (int) Ibv.Fn.DEREG_MR.invokeExact(Ibv.callState(a), mr);
        } catch (Throwable ignored) {
            // best effort: the PD is going away
        }
    }

    @Override
    public MemoryWindow allocMemoryWindow(MwType type) {
        checkOpen("ibv_alloc_mw");
        if (type == null) throw new VerbsException("ibv_alloc_mw", VerbsException.EINVAL, "type is null");
        var attr = context.attr();
        if (context.opsAllocMw.equals(MemorySegment.NULL) || !attr.supportsMemoryWindows()) {
            throw Errors.unsupported(
                    "ibv_alloc_mw",
                    "memory windows (device " + context.device.name() + ", max_mw " + attr.maxMw() + ")");
        }
        if (type == MwType.TYPE_2 && !attr.supportsType2Windows()) {
            throw Errors.unsupported(
                    "ibv_alloc_mw", "type 2 memory windows (device_cap_flags lacks MEM_WINDOW_TYPE_2A/2B)");
        }
        return underUse("ibv_alloc_mw", (a, st) -> {
            MemorySegment mw = (MemorySegment) Ibv.Fn.OPS_ALLOC_MW.invokeExact(context.opsAllocMw, st, pd, type.code);
            if (mw.equals(MemorySegment.NULL)) {
                int errno = Ibv.errno(st);
                throw Errors.verb(
                        "ibv_alloc_mw",
                        errno,
                        errno == VerbsException.EOPNOTSUPP || errno == VerbsException.ENOSYS
                                ? "memory windows of " + type + " are not supported by this device"
                                : "check max_mw of the device");
            }
            MemorySegment m = mw.reinterpret(Layouts.MW.byteSize());
            try {
                return new NativeMw(this, m, type);
            } catch (RuntimeException e) { // closed meanwhile: do not leak the window
                int ignored = (int) Ibv.Fn.OPS_DEALLOC_MW.invokeExact(context.opsDeallocMw, st, m);
                throw e;
            }
        });
    }

    @Override
    protected void free() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Fn.DEALLOC_PD.invokeExact(st, pd);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_dealloc_pd", Errors.errno(rc, st), "objects created outside jrdma may still use this PD");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what();
    }
}
