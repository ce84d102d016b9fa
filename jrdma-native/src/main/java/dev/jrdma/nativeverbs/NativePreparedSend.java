package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.PreparedSend;
import dev.jrdma.verbs.QueuePair;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A chain of send work requests written once into native memory by {@link NativeQp#prepareSend}, all checks done
 * then except those that can change, which {@link NativeQp#postPrepared} makes under the send queue's gate before each
 * post, as {@link NativeQp#postSend} would: the QP is open, no region its SGEs name is open over freed memory (a closed
 * region's lkey the device itself refuses), a region inline data is copied from is open and its memory alive (the
 * CPU copies it at the post), and the address handles of its UD requests are open. Its memory comes from an automatic arena: it lives as long as this object, which a
 * post in flight keeps reachable.
 */
final class NativePreparedSend implements PreparedSend {
    private final NativeQp qp;

    @SuppressWarnings("unused") // keeps the memory alive: the hot path uses its address
    private final MemorySegment memory;
    /** The address of the first {@code ibv_send_wr}; the others follow it, then the SGEs. */
    final long wrs;

    final int count;
    private final long wrId;
    /** The regions the SGEs name (inline ones: hold), each once; most requests name one, kept apart from the array. */
    private NativeMr region;

    private NativeMr[] more = new NativeMr[0];
    /** UD: the address handles, each once (held during each post). */
    NativeAh[] ahs = new NativeAh[0];
    /** Whether a request copies inline data: then every region must be open with its memory alive. */
    private boolean inline;

    NativePreparedSend(NativeQp qp, int count, long bytes, long wrId) {
        this.qp = qp;
        this.count = count;
        this.wrId = wrId;
        memory = Arena.ofAuto().allocate(bytes, 8);
        wrs = memory.address();
    }

    void addRegion(NativeMr m, boolean inlineData) {
        inline |= inlineData;
        if (m == null || m == region || Arrays.asList(more).contains(m))
            return; // an unknown lkey: the device refuses it
        if (region == null) region = m;
        else more = append(more, m);
    }

    void addAh(NativeAh ah) {
        if (!Arrays.asList(ahs).contains(ah)) ahs = append(ahs, ah);
    }

    private static <T> T[] append(T[] a, T x) {
        T[] b = Arrays.copyOf(a, a.length + 1);
        b[a.length] = x;
        return b;
    }

    /** Whether the regions may be posted from now (what a post checks first). */
    boolean regionsUsable() {
        if (region != null && !usable(region)) return false;
        for (NativeMr m : more) if (!usable(m)) return false;
        return true;
    }

    private boolean usable(NativeMr m) {
        return inline ? !m.isClosed() && m.segmentAlive() : m.isClosed() || m.segmentAlive();
    }

    /** The message for a post refused by {@link #regionsUsable}. */
    String unusableRegion() {
        NativeMr bad = region;
        for (NativeMr m : more) if (!usable(m)) bad = m;
        return bad.what() + (bad.isClosed() ? " was closed" : "'s segment is no longer alive (its arena was closed)")
                + " after the request was prepared" + (inline ? " and the request copies inline data from it" : "");
    }

    @Override
    public QueuePair qp() {
        return qp;
    }

    @Override
    public void post() {
        qp.postPrepared(this, wrId);
    }

    @Override
    public void post(long wrId) {
        qp.postPrepared(this, wrId);
    }

    @Override
    public String toString() {
        return "PreparedSend[" + count + " request(s) on " + qp.what() + "]";
    }
}
