package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;

/** An address handle ({@code struct ibv_ah*}) for UD sends. */
final class NativeAh extends NativeResource implements AddressHandle {
    final NativePd pd;
    final MemorySegment ah;
    private final AhAttr attr;

    private NativeAh(NativePd pd, MemorySegment ah, AhAttr attr) {
        super(pd, "address handle 0x" + Long.toHexString(ah.address()) + " of " + pd.context.device.name());
        this.pd = pd;
        this.ah = ah;
        this.attr = attr;
    }

    /** ibv_create_ah; the caller holds the PD's {@link #enter}. */
    static NativeAh create(NativePd pd, AhAttr attr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment s = a.allocate(Layouts.AH_ATTR);
            write(attr, s);
            MemorySegment ah = (MemorySegment) Ibv.Extra.CREATE_AH.invokeExact(st, pd.pd, s);
            if (ah.equals(MemorySegment.NULL))
                throw Errors.verb(
                        "ibv_create_ah",
                        Ibv.errno(st),
                        "check " + attr
                                + ": on RoCE the address must be global (is_global, the peer's GID) with a valid sgid_index of the port");
            return adopt(pd, ah, attr.copy(), st);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    /** ibv_create_ah_from_wc; the caller holds the PD's {@link #enter}. */
    static NativeAh fromWc(NativePd pd, WorkCompletion wc, MemorySegment grh, int port) {
        if (grh == null || grh.byteSize() < 40)
            throw new VerbsException(
                    "ibv_create_ah_from_wc",
                    VerbsException.EINVAL,
                    "the GRH area must be the receive buffer's first 40 bytes");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            GroupLayout L = Layouts.WC;
            MemorySegment w = a.allocate(L);
            w.set(JAVA_LONG, offset(L, "wr_id"), wc.wrId);
            w.set(JAVA_INT, offset(L, "status"), wc.status.code());
            w.set(JAVA_INT, offset(L, "byte_len"), wc.byteLen);
            w.set(JAVA_INT, offset(L, "qp_num"), wc.qpNum);
            w.set(JAVA_INT, offset(L, "src_qp"), wc.srcQp);
            w.set(JAVA_INT, offset(L, "wc_flags"), wc.wcFlags);
            w.set(JAVA_SHORT, offset(L, "pkey_index"), (short) wc.pkeyIndex);
            w.set(JAVA_SHORT, offset(L, "slid"), (short) wc.slid);
            w.set(JAVA_BYTE, offset(L, "sl"), (byte) wc.sl);
            w.set(JAVA_BYTE, offset(L, "dlid_path_bits"), (byte) wc.dlidPathBits);
            MemorySegment g = a.allocate(40, 8);
            MemorySegment.copy(grh, 0, g, 0, 40);
            MemorySegment ah = (MemorySegment) Ibv.Extra.CREATE_AH_FROM_WC.invokeExact(st, pd.pd, w, g, (byte) port);
            if (ah.equals(MemorySegment.NULL))
                throw Errors.verb(
                        "ibv_create_ah_from_wc",
                        Ibv.errno(st),
                        "the completion must be a successful UD receive (with its GRH) on port " + port);
            AhAttr attr = new AhAttr().portNum(port);
            attr.dlid = wc.slid;
            attr.sl = wc.sl;
            if (wc.hasGrh()) attr.global(dev.jrdma.verbs.Grh.sourceGid(grh, 0), 0);
            return adopt(pd, ah, attr, st);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    private static NativeAh adopt(NativePd pd, MemorySegment ah, AhAttr attr, MemorySegment st) throws Throwable {
        try {
            return new NativeAh(pd, ah.reinterpret(Layouts.AH.byteSize()), attr);
        } catch (RuntimeException e) { // the PD closed meanwhile: do not leak the native AH
            int ignored = (int) Ibv.Extra.DESTROY_AH.invokeExact(st, ah);
            throw e;
        }
    }

    /** Writes an {@code ibv_ah_attr}. */
    static void write(AhAttr ah, MemorySegment s) {
        GroupLayout L = Layouts.AH_ATTR;
        MemorySegment.copy(ah.dgid.toByteArray(), 0, s, JAVA_BYTE, offset(L, "grh.dgid"), 16);
        s.set(JAVA_INT, offset(L, "grh.flow_label"), ah.flowLabel);
        s.set(JAVA_BYTE, offset(L, "grh.sgid_index"), (byte) ah.sgidIndex);
        s.set(JAVA_BYTE, offset(L, "grh.hop_limit"), (byte) ah.hopLimit);
        s.set(JAVA_BYTE, offset(L, "grh.traffic_class"), (byte) ah.trafficClass);
        s.set(JAVA_SHORT, offset(L, "dlid"), (short) ah.dlid);
        s.set(JAVA_BYTE, offset(L, "sl"), (byte) ah.sl);
        s.set(JAVA_BYTE, offset(L, "src_path_bits"), (byte) ah.srcPathBits);
        s.set(JAVA_BYTE, offset(L, "static_rate"), (byte) ah.staticRate);
        s.set(JAVA_BYTE, offset(L, "is_global"), (byte) (ah.isGlobal ? 1 : 0));
        s.set(JAVA_BYTE, offset(L, "port_num"), (byte) ah.portNum);
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public AhAttr attr() {
        return attr.copy();
    }

    @Override
    protected void free() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Extra.DESTROY_AH.invokeExact(st, ah);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_destroy_ah", Errors.errno(rc, st), "UD sends may still name this address handle");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what();
    }
}
