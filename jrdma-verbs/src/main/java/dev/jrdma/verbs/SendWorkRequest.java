package dev.jrdma.verbs;

import java.util.EnumSet;

/**
 * A send work request ({@code struct ibv_send_wr}). Create once, mutate in place and post again: posting
 * copies what the provider needs (inline data included), so nothing is allocated per post.
 * Fields not used by the opcode are ignored.
 */
public final class SendWorkRequest {
    public long wrId;
    /** The next request of a chain posted with one call, or null. */
    public SendWorkRequest next;
    public WrOpcode opcode = WrOpcode.SEND;
    /** Send flags; mutate this set in place (it is never replaced). */
    public final EnumSet<SendFlag> flags = EnumSet.noneOf(SendFlag.class);
    /** Immediate data (SEND_WITH_IMM, RDMA_WRITE_WITH_IMM), in host order; it travels big-endian. */
    public int immData;
    /** The rkey to invalidate (LOCAL_INV, SEND_WITH_INV). */
    public int invalidateRkey;
    /** RDMA and atomic operations: the remote address and rkey. */
    public long remoteAddr;
    public int rkey;
    /**
     * Atomics: compare value (CMP_AND_SWP) or addend (FETCH_AND_ADD), and swap value. The remote word is 8 bytes,
     * 8-byte aligned; its original value lands in the local SGE (8 bytes) in host byte order, on every provider.
     */
    public long compareAdd;
    public long swap;
    /**
     * BIND_MW (type 2 windows): the window, its new rkey, and what it grants. The new rkey keeps the window's
     * index (upper 24 bits) and changes the key byte (lower 8 bits); 0 lets the provider pick the next key
     * ({@code ibv_inc_rkey}). {@link MemoryWindow#rkey()} returns the key of the last bind posted.
     */
    public MemoryWindow bindMw;
    public int bindRkey;
    public MemoryRegion bindMr;
    public long bindAddr;
    public long bindLength;
    public final EnumSet<Access> bindAccess = EnumSet.noneOf(Access.class);

    /** UD: the address handle of the destination port, the destination QP number and its Q_Key. */
    public AddressHandle ah;
    public int remoteQpn;
    public int remoteQkey;

    private final Sge[] sges;
    private int numSge;

    public SendWorkRequest() {
        this(1);
    }

    public SendWorkRequest(int maxSge) {
        sges = new Sge[maxSge];
        for (int i = 0; i < maxSge; i++) sges[i] = new Sge();
        numSge = Math.min(1, maxSge);
    }

    public Sge sge(int i) {
        return sges[i];
    }

    public int numSge() {
        return numSge;
    }

    public SendWorkRequest numSge(int n) {
        if (n < 0 || n > sges.length) throw new IllegalArgumentException("num_sge " + n + " outside 0.." + sges.length + " (created with maxSge " + sges.length + ")");
        numSge = n;
        return this;
    }

    public int maxSge() {
        return sges.length;
    }

    /** Total bytes of the SGEs in use. */
    public long totalLength() {
        long n = 0;
        for (int i = 0; i < numSge; i++) n += Integer.toUnsignedLong(sges[i].length);
        return n;
    }

    /** UD: where the datagram goes (the handle of the peer's port, its QP number and the Q_Key it expects). */
    public SendWorkRequest ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn & 0xFFFFFF;
        this.remoteQkey = remoteQkey;
        return this;
    }

    public SendWorkRequest wrId(long id) {
        wrId = id;
        return this;
    }

    public SendWorkRequest opcode(WrOpcode op) {
        opcode = op;
        return this;
    }

    public SendWorkRequest signaled(boolean on) {
        if (on) flags.add(SendFlag.SIGNALED); else flags.remove(SendFlag.SIGNALED);
        return this;
    }

    public SendWorkRequest flag(SendFlag f, boolean on) {
        if (on) flags.add(f); else flags.remove(f);
        return this;
    }

    /** One local buffer: sets SGE 0 and num_sge = 1. */
    public SendWorkRequest buffer(MemoryRegion mr, long offset, int length) {
        sges[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    /** No local buffer (a zero-length message). */
    public SendWorkRequest noBuffer() {
        numSge = 0;
        return this;
    }

    public SendWorkRequest remote(long addr, int rkey) {
        this.remoteAddr = addr;
        this.rkey = rkey;
        return this;
    }

    public SendWorkRequest immData(int imm) {
        this.immData = imm;
        return this;
    }

    public SendWorkRequest atomic(long remoteAddr, int rkey, long compareAdd, long swap) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    public SendWorkRequest next(SendWorkRequest n) {
        next = n;
        return this;
    }

    /** Encodes {@link #flags} as libibverbs bits without allocating. */
    public int flagBits() {
        int bits = 0;
        if (flags.contains(SendFlag.FENCE)) bits |= SendFlag.FENCE.bit;
        if (flags.contains(SendFlag.SIGNALED)) bits |= SendFlag.SIGNALED.bit;
        if (flags.contains(SendFlag.SOLICITED)) bits |= SendFlag.SOLICITED.bit;
        if (flags.contains(SendFlag.INLINE)) bits |= SendFlag.INLINE.bit;
        if (flags.contains(SendFlag.IP_CSUM)) bits |= SendFlag.IP_CSUM.bit;
        return bits;
    }
}
