package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A memory window ({@code struct ibv_mw*}), allocated and freed through the context's ops table. */
final class NativeMw extends NativeResource implements MemoryWindow {
    static final long RKEY = offset(Layouts.MW, "rkey");
    final NativePd pd;
    final MemorySegment mw;
    private final MwType type;
    /** Type 2: the rkey of the last BIND_MW posted (the kernel does not update ibv_mw.rkey for those). */
    volatile int boundRkey;

    volatile boolean type2Posted;
    /** The region of the last bind (a region cannot be deregistered while windows are bound to it). */
    volatile NativeMr boundMr;

    NativeMw(NativePd pd, MemorySegment mw, MwType type) {
        super(pd, "MW " + type + " rkey 0x" + Integer.toHexString(mw.get(JAVA_INT, RKEY)));
        this.pd = pd;
        this.mw = mw;
        this.type = type;
        pd.mws.add(this);
    }

    /** {@link #rkey} for a caller that already holds {@link #enter}/{@link #tryEnter}. */
    int rkeyEntered() {
        return type == MwType.TYPE_2 && type2Posted ? boundRkey : nativeRkey();
    }

    int nativeRkey() {
        return mw.get(JAVA_INT, RKEY);
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MwType type() {
        return type;
    }

    @Override
    public int rkey() {
        enter("ibv_mw.rkey");
        try {
            return type == MwType.TYPE_2 && type2Posted ? boundRkey : nativeRkey();
        } finally {
            exit();
        }
    }

    @Override
    protected void free() {
        pd.mws.remove(this);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Fn.OPS_DEALLOC_MW.invokeExact(pd.context.opsDeallocMw, st, mw);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_dealloc_mw", Errors.errno(rc, st), "the window may be in use by a posted work request");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what();
    }

    /**
     * The checks of libibverbs' inline {@code ibv_bind_mw}, in its order, for binding this type 1 window to {@code
     * region}'s {@code [addr, addr + length)} (or unbinding it: no region, 0 and 0).
     *
     * @param region the region to bind to, or null to unbind
     * @param addr the first byte of the range
     * @param length the range's length
     * @return the region as the native provider's, or null for an unbind
     */
    NativeMr checkType1Bind(MemoryRegion region, long addr, long length) {
        checkOpen("ibv_bind_mw");
        if (type != MwType.TYPE_1) {
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EINVAL,
                    "only type 1 windows are bound with ibv_bind_mw; bind a type 2 window "
                            + "with a BIND_MW send work request");
        }
        NativeMr mr = null;
        if (region != null) {
            if (!(region instanceof NativeMr m))
                throw new VerbsException(
                        "ibv_bind_mw", VerbsException.EINVAL, "not a memory region of the native provider");
            m.checkOpen("ibv_bind_mw");
            mr = m;
        }
        if (mr == null && (addr != 0 || length != 0)) {
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EINVAL,
                    "without a memory region (an unbind) address and length must be 0");
        }
        if (mr != null && mr.pd != pd) {
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EPERM,
                    "the memory region and the window belong to different protection domains");
        }
        if (mr != null && !mr.access().contains(Access.MW_BIND)) {
            throw new VerbsException(
                    "ibv_bind_mw", VerbsException.EINVAL, "the memory region was registered without Access.MW_BIND");
        }
        if (mr != null && !mr.covers(addr, length)) {
            throw new VerbsException(
                    "ibv_bind_mw",
                    VerbsException.EINVAL,
                    "the range [0x" + Long.toHexString(addr) + ", +" + length + ") lies outside the memory region "
                            + mr);
        }
        return mr;
    }
}
