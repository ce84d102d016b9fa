package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.Set;

/**
 * A registered memory region ({@code struct ibv_mr*}). Its segment must stay alive while it is registered:
 * closing the arena first is the user's bug (the device keeps the pages pinned and may still write them);
 * jrdma refuses to post work requests whose SGEs name an MR whose segment is no longer alive.
 */
final class NativeMr extends NativeResource implements MemoryRegion {
    final NativePd pd;
    final MemorySegment segment;
    final MemorySegment mr;
    final long addr, length;
    final int lkey, rkey;
    private final Set<Access> access;

    NativeMr(NativePd pd, MemorySegment segment, MemorySegment mr, Set<Access> access) {
        super(
                pd,
                "MR lkey 0x" + Integer.toHexString(mr.get(JAVA_INT, offset(Layouts.MR, "lkey"))) + " of "
                        + pd.context.device.name());
        this.pd = pd;
        this.segment = segment;
        this.mr = mr;
        this.addr = mr.get(java.lang.foreign.ValueLayout.JAVA_LONG, offset(Layouts.MR, "addr"));
        this.length = mr.get(java.lang.foreign.ValueLayout.JAVA_LONG, offset(Layouts.MR, "length"));
        this.lkey = mr.get(JAVA_INT, offset(Layouts.MR, "lkey"));
        this.rkey = mr.get(JAVA_INT, offset(Layouts.MR, "rkey"));
        this.access = Collections.unmodifiableSet(access);
    }

    /** True when [a, a+len) lies inside this region. */
    boolean covers(long a, long len) {
        return a >= addr && len >= 0 && a - addr <= length - len;
    }

    boolean segmentAlive() {
        return segment.scope().isAlive();
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return addr;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public int lkey() {
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public Set<Access> access() {
        return access;
    }

    @Override
    void releaseDependents() {
        pd.removeMr(this);
        // windows bound to this region are invalid once it goes, and the kernel refuses to deregister it under them
        for (NativeMw w : new java.util.ArrayList<>(pd.mws)) if (w.boundMr == this) w.closeAndAwait();
    }

    @Override
    protected void free() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Fn.DEREG_MR.invokeExact(st, mr);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_dereg_mr",
                        Errors.errno(rc, st),
                        "memory windows bound to this region must be closed first");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what() + " [0x" + Long.toHexString(addr) + ", " + length + " bytes, rkey 0x" + Integer.toHexString(rkey)
                + "]";
    }
}
