package dev.jrdma.soft;

import dev.jrdma.verbs.MwType;

/**
 * The rkey check of a request a responder executes (WRITE, READ, atomic): the region or window the rkey names, its
 * protection domain, bounds and rights, and the QP's own rights; the region and offset it found. Runs under the QP's
 * monitor.
 */
final class RemoteAccess {
    /** The region the last successful check found (null for a zero-length access). */
    SoftMr mr;
    /** The offset of the checked address in {@link #mr}. */
    long off;

    /** Checks {@code rkey} for {@code [va, va + len)} with the rights {@code need} on {@code qp}; sets {@link #mr}, {@link #off}. */
    boolean resolve(SoftQp qp, int rkey, long va, long len, int need) {
        if ((qp.accessBits & need) == 0) return false;
        if (len == 0) {
            mr = null;
            off = 0;
            return true;
        }
        Object o = qp.transport().keyOwner(rkey);
        SoftPd pd = qp.pd();
        if (o instanceof SoftMr r) {
            if (r.key != rkey || r.isClosed() || r.pd != pd || (r.accessBits & need) == 0 || !r.contains(va, len))
                return false;
            mr = r;
            off = va - r.addr;
            return true;
        }
        if (o instanceof SoftMw mw) {
            SoftMw.Binding b = mw.binding;
            if (b == null
                    || b.rkey() != rkey
                    || mw.isClosed()
                    || mw.pd != pd
                    || (b.accessBits() & need) == 0
                    || b.mr().isClosed()) return false;
            long rel = va - b.addr();
            if (rel < 0 || rel > b.len() || len > b.len() - rel) return false;
            if (mw.type == MwType.TYPE_2 && b.qp() != qp) return false;
            mr = b.mr();
            off = va - b.mr().addr;
            return true;
        }
        return false;
    }
}
