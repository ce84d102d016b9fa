package dev.jrdma.verbs;

/**
 * A receive work request ({@code struct ibv_recv_wr}). Create once, mutate and post again: posting copies
 * what the provider needs, so the object may be changed as soon as {@code postRecv} returns.
 */
public final class RecvWorkRequest {
    /** The caller's identifier, returned in the {@link WorkCompletion#wrId} of this receive ({@code wr_id}). */
    public long wrId;
    /** The next request of a chain posted with one call, or null. */
    public RecvWorkRequest next;

    private final Sge[] sges;
    private int numSge;

    /** A request with room for one SGE, which is in use ({@code num_sge} = 1). */
    public RecvWorkRequest() {
        this(1);
    }

    /**
     * A request with room for {@code maxSge} SGEs, the first in use.
     *
     * @param maxSge the most SGEs it can carry; at most the QP's (or SRQ's) receive SGE limit when posted
     */
    public RecvWorkRequest(int maxSge) {
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
     * Sets how many SGEs, from the first, the request uses ({@code num_sge}); an incoming message fills them in order.
     *
     * @param n 0 .. {@link #maxSge()}
     * @return this
     * @throws IllegalArgumentException when {@code n} is outside 0 .. {@link #maxSge()}
     */
    public RecvWorkRequest numSge(int n) {
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

    /**
     * Sets {@link #wrId}.
     *
     * @param id the identifier its completion carries
     * @return this
     */
    public RecvWorkRequest wrId(long id) {
        wrId = id;
        return this;
    }

    /**
     * One buffer: sets SGE 0 and {@code num_sge} = 1.
     *
     * @param mr     the registered region the message lands in; it needs {@link Access#LOCAL_WRITE}
     * @param offset where the buffer starts, in bytes from the region's start
     * @param length the buffer's length in bytes: the longest message it accepts (plus 40 bytes of GRH on UD)
     * @return this
     */
    public RecvWorkRequest buffer(MemoryRegion mr, long offset, int length) {
        sges[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    /**
     * Sets {@link #next}.
     *
     * @param n the next request of the chain, or null to end it here
     * @return this
     */
    public RecvWorkRequest next(RecvWorkRequest n) {
        next = n;
        return this;
    }
}
