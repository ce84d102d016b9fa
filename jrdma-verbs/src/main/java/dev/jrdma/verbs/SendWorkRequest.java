package dev.jrdma.verbs;

import java.util.EnumSet;

/**
 * A send work request ({@code struct ibv_send_wr}). Create once, mutate in place and post again: posting
 * copies what the provider needs (inline data included), so nothing is allocated per post.
 * Fields not used by the opcode are ignored.
 */
public final class SendWorkRequest {
    /** The caller's identifier, returned in the {@link WorkCompletion#wrId} of this request ({@code wr_id}). */
    public long wrId;
    /** The next request of a chain posted with one call, or null. */
    public SendWorkRequest next;
    /** The operation ({@code opcode}); SEND by default. */
    public WrOpcode opcode = WrOpcode.SEND;
    /** Send flags; mutate this set in place (it is never replaced). */
    public final EnumSet<SendFlag> flags = EnumSet.noneOf(SendFlag.class);
    /** Immediate data (SEND_WITH_IMM, RDMA_WRITE_WITH_IMM), in host order; it travels big-endian. */
    public int immData;
    /** The rkey to invalidate (LOCAL_INV, SEND_WITH_INV). */
    public int invalidateRkey;
    /**
     * RDMA and atomic operations: the remote address ({@code wr.rdma.remote_addr} / {@code wr.atomic.remote_addr}), inside
     * the region or window the peer handed out with {@link #rkey}.
     */
    public long remoteAddr;
    /** RDMA and atomic operations: the peer's remote key for {@link #remoteAddr} ({@code rkey}). */
    public int rkey;
    /**
     * Atomics: the compare value (ATOMIC_CMP_AND_SWP) or the addend (ATOMIC_FETCH_AND_ADD) ({@code compare_add}). The
     * remote word is 8 bytes, 8-byte aligned; its original value lands in the local SGE (8 bytes) in host byte order, on
     * every provider.
     */
    public long compareAdd;
    /** ATOMIC_CMP_AND_SWP: the value written when the remote word equals {@link #compareAdd} ({@code swap}). */
    public long swap;
    /** BIND_MW (type 2 windows): the window to bind ({@code bind_mw.mw}). */
    public MemoryWindow bindMw;
    /**
     * BIND_MW: the window's new rkey ({@code bind_mw.rkey}). It keeps the window's index (upper 24 bits) and changes the
     * key byte (lower 8 bits); 0 lets the provider pick the next key ({@code ibv_inc_rkey}).
     * {@link MemoryWindow#rkey()} returns the key of the last bind posted.
     */
    public int bindRkey;
    /** BIND_MW: the memory region the window opens onto ({@code bind_info.mr}); it needs {@link Access#MW_BIND}. */
    public MemoryRegion bindMr;
    /** BIND_MW: the start address of the window, inside {@link #bindMr} ({@code bind_info.addr}). */
    public long bindAddr;
    /** BIND_MW: the length of the window in bytes ({@code bind_info.length}). */
    public long bindLength;
    /**
     * BIND_MW: what the window grants the peer ({@code bind_info.mw_access_flags}), at most what the region grants; mutate
     * this set in place.
     */
    public final EnumSet<Access> bindAccess = EnumSet.noneOf(Access.class);

    /** UD: the address handle of the destination port ({@code wr.ud.ah}). */
    public AddressHandle ah;
    /** UD: the destination QP number ({@code wr.ud.remote_qpn}), 24 bits. */
    public int remoteQpn;
    /** UD: the Q_Key the destination QP expects ({@code wr.ud.remote_qkey}). */
    public int remoteQkey;

    private final Sge[] sges;
    private int numSge;

    /** A request with room for one SGE, which is in use ({@code num_sge} = 1). */
    public SendWorkRequest() {
        this(1);
    }

    /**
     * A request with room for {@code maxSge} SGEs, the first in use.
     *
     * @param maxSge the most SGEs it can carry; at most the QP's {@code max_send_sge} when posted
     */
    public SendWorkRequest(int maxSge) {
        sges = new Sge[maxSge];
        for (int i = 0; i < maxSge; i++) sges[i] = new Sge();
        numSge = Math.min(1, maxSge);
    }

    /**
     * One scatter/gather element, to fill in place.
     *
     * @param i its index, 0 .. {@link #maxSge()} - 1
     * @return the element
     * @throws ArrayIndexOutOfBoundsException when {@code i} is outside 0 .. {@link #maxSge()} - 1
     */
    public Sge sge(int i) {
        return sges[i];
    }

    /** {@return how many SGEs, from the first, the request uses ({@code num_sge})} */
    public int numSge() {
        return numSge;
    }

    /**
     * Sets how many SGEs, from the first, the request uses ({@code num_sge}).
     *
     * @param n 0 .. {@link #maxSge()}
     * @return this
     * @throws IllegalArgumentException when {@code n} is outside 0 .. {@link #maxSge()}
     */
    public SendWorkRequest numSge(int n) {
        if (n < 0 || n > sges.length)
            throw new IllegalArgumentException(
                    "num_sge " + n + " outside 0.." + sges.length + " (created with maxSge " + sges.length + ")");
        numSge = n;
        return this;
    }

    /** {@return the number of SGEs the request was created with room for} */
    public int maxSge() {
        return sges.length;
    }

    /** {@return the total bytes of the SGEs in use} */
    public long totalLength() {
        long n = 0;
        for (int i = 0; i < numSge; i++) n += Integer.toUnsignedLong(sges[i].length);
        return n;
    }

    /**
     * UD: where the datagram goes.
     *
     * @param ah         the handle of the peer's port
     * @param remoteQpn  the peer's QP number; only its low 24 bits are kept
     * @param remoteQkey the Q_Key the peer's QP expects
     * @return this
     */
    public SendWorkRequest ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn & 0xFFFFFF;
        this.remoteQkey = remoteQkey;
        return this;
    }

    /**
     * Sets {@link #wrId}.
     *
     * @param id the identifier its completion carries
     * @return this
     */
    public SendWorkRequest wrId(long id) {
        wrId = id;
        return this;
    }

    /**
     * Sets {@link #opcode}.
     *
     * @param op the operation
     * @return this
     */
    public SendWorkRequest opcode(WrOpcode op) {
        opcode = op;
        return this;
    }

    /**
     * Adds or removes {@link SendFlag#SIGNALED}: whether a successful request produces a completion.
     *
     * @param on true to ask for a completion
     * @return this
     */
    public SendWorkRequest signaled(boolean on) {
        if (on) flags.add(SendFlag.SIGNALED);
        else flags.remove(SendFlag.SIGNALED);
        return this;
    }

    /**
     * Adds or removes one send flag.
     *
     * @param f  the flag
     * @param on true to add it, false to remove it
     * @return this
     */
    public SendWorkRequest flag(SendFlag f, boolean on) {
        if (on) flags.add(f);
        else flags.remove(f);
        return this;
    }

    /**
     * One local buffer: sets SGE 0 and {@code num_sge} = 1.
     *
     * @param mr     the registered region holding the data (its lkey is used)
     * @param offset where the buffer starts, in bytes from the region's start
     * @param length the buffer's length in bytes
     * @return this
     */
    public SendWorkRequest buffer(MemoryRegion mr, long offset, int length) {
        sges[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    /**
     * No local buffer (a zero-length message): {@code num_sge} = 0.
     *
     * @return this
     */
    public SendWorkRequest noBuffer() {
        numSge = 0;
        return this;
    }

    /**
     * RDMA operations: the remote buffer.
     *
     * @param addr the remote address ({@link #remoteAddr})
     * @param rkey the peer's remote key ({@link #rkey})
     * @return this
     */
    public SendWorkRequest remote(long addr, int rkey) {
        this.remoteAddr = addr;
        this.rkey = rkey;
        return this;
    }

    /**
     * Sets {@link #immData}.
     *
     * @param imm the immediate data, in host order
     * @return this
     */
    public SendWorkRequest immData(int imm) {
        this.immData = imm;
        return this;
    }

    /**
     * Atomics: the remote word and the operands.
     *
     * @param remoteAddr the remote 8-byte word, 8-byte aligned
     * @param rkey       the peer's remote key
     * @param compareAdd the compare value (compare-and-swap) or the addend (fetch-and-add)
     * @param swap       the value compare-and-swap writes on a match
     * @return this
     */
    public SendWorkRequest atomic(long remoteAddr, int rkey, long compareAdd, long swap) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    /**
     * Sets {@link #next}.
     *
     * @param n the next request of the chain, or null to end it here
     * @return this
     */
    public SendWorkRequest next(SendWorkRequest n) {
        next = n;
        return this;
    }

    /** {@return {@link #flags} as {@code IBV_SEND_*} bits ({@code send_flags}), computed without allocating} */
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
