package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
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
}
