package dev.jrdma.soft;

import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
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
}
