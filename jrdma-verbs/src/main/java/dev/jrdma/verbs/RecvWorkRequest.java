package dev.jrdma.verbs;

/**
 * A receive work request ({@code struct ibv_recv_wr}). Create once, mutate and post again: posting copies
 * what the provider needs, so the object may be changed as soon as {@code postRecv} returns.
 */
public final class RecvWorkRequest {
    public long wrId;
    /** The next request of a chain posted with one call, or null. */
    public RecvWorkRequest next;
    private final Sge[] sges;
    private int numSge;

    public RecvWorkRequest() {
        this(1);
    }

    public RecvWorkRequest(int maxSge) {
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

    public RecvWorkRequest numSge(int n) {
        if (n < 0 || n > sges.length) throw new IllegalArgumentException("num_sge " + n + " outside 0.." + sges.length + " (created with maxSge " + sges.length + ")");
        numSge = n;
        return this;
    }

    public int maxSge() {
        return sges.length;
    }

    public RecvWorkRequest wrId(long id) {
        wrId = id;
        return this;
    }

    /** One buffer: sets SGE 0 and num_sge = 1. */
    public RecvWorkRequest buffer(MemoryRegion mr, long offset, int length) {
        sges[0].set(mr, offset, length);
        numSge = 1;
        return this;
    }

    public RecvWorkRequest next(RecvWorkRequest n) {
        next = n;
        return this;
    }
}
