package dev.jrdma.soft;

import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.spi.Resource;

/**
 * A memory window. Its binding is an immutable snapshot replaced on bind and invalidate, so the receive
 * thread reads it without a lock. The rkey's index (upper 24 bits) is fixed; its low 8 bits (the key) change
 * with every bind: type 1 windows get a new random key byte, type 2 windows take the key the BIND_MW request names
 * (or a random one when it names none).
 */
final class SoftMw extends Resource implements MemoryWindow {
    /** What a bound window grants: {@code [addr, addr + len)} of {@code mr} with {@code accessBits}; {@code qp} for type 2. */
    record Binding(int rkey, SoftMr mr, long addr, long len, int accessBits, SoftQp qp) {}

    final SoftPd pd;
    final MwType type;
    final int keyIndex;
    volatile int rkey;
    volatile Binding binding;

    SoftMw(SoftPd pd, MwType type) {
        super(pd, "memory window (" + type + ")");
        this.pd = pd;
        this.type = type;
        this.keyIndex = pd.transport().addKey(this);
        this.rkey = pd.transport().freshKey(keyIndex);
    }

    @Override
    public SoftPd pd() {
        return pd;
    }

    @Override
    public MwType type() {
        return type;
    }

    @Override
    public int rkey() {
        checkOpen("ibv_mw rkey");
        return rkey;
    }

    /** The next rkey: same index, a new random key byte (never the previous one); used by type 1 binds and type 2 binds that name no key. */
    int nextRkey() {
        return pd.transport().freshKey(keyIndex);
    }

    @Override
    protected void destroy() {
        binding = null;
        pd.transport().removeKey(keyIndex, this);
    }

    /**
     * Invalidates a type 2 window's rkey (LOCAL_INV, or a peer's SEND_WITH_INV when {@code remote}).
     *
     * @param qp the QP whose request invalidates it (a remote invalidation must come through the QP it is bound to)
     * @param rkey the window's rkey
     * @param remote whether the peer asked (SEND_WITH_INV)
     * @return SUCCESS, or MW_BIND_ERR when the rkey names no window this QP may invalidate
     */
    static WcStatus invalidate(SoftQp qp, int rkey, boolean remote) {
        if (qp.transport().keyOwner(rkey) instanceof SoftMw mw
                && mw.type == MwType.TYPE_2
                && mw.pd == qp.pd()
                && !mw.isClosed()) {
            SoftMw.Binding b = mw.binding;
            if (b != null && b.rkey() == rkey && (!remote || b.qp() == qp)) {
                mw.binding = null;
                return WcStatus.SUCCESS;
            }
        }
        return WcStatus.MW_BIND_ERR;
    }
}
