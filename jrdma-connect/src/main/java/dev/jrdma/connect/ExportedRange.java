package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import java.util.EnumSet;
import java.util.Set;

/**
 * What a side offers its peers: a range of a region of its pool and the rights on it. No peer ever gets the
 * region's own key: each connection gets a window (or a region) of its own over exactly this range, so the device
 * enforces the bounds and rights, and one peer's access can be revoked without touching the others'.
 */
record ExportedRange(MemoryRegion region, long address, long length, Set<Access> rights) {
    ExportedRange {
        rights = Set.copyOf(rights);
    }

    /** The range {@code buffer} names in {@code pool}, with {@code rights} (within what {@code cfg} allows). */
    static ExportedRange of(BufferPool pool, RemoteBuffer buffer, Set<Access> rights, EndpointConfig cfg) {
        if (buffer.length() == 0) throw new IllegalArgumentException("an export must have at least one byte");
        MemoryRegion region = pool.regionFor(buffer.address(), buffer.rkey(), buffer.length());
        if (region == null) {
            throw new IllegalArgumentException(
                    buffer + " is not memory of this side's buffer pool: export a buffer allocated from pool()");
        }
        return new ExportedRange(region, buffer.address(), buffer.length(), checkRights(rights, cfg, "export"));
    }

    /** {@code rights} when the configuration allows them all, else an exception that says what to set. */
    static Set<Access> checkRights(Set<Access> rights, EndpointConfig cfg, String what) {
        if (rights.isEmpty()) {
            throw new IllegalArgumentException(
                    what + " without any right: give REMOTE_READ, REMOTE_WRITE and/or REMOTE_ATOMIC");
        }
        EnumSet<Access> missing = EnumSet.copyOf(rights);
        missing.removeAll(cfg.remoteAccess());
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(
                    what + " with " + missing + ", which this side's queue pairs do not allow (they allow "
                            + (cfg.remoteAccess().isEmpty() ? "no remote access" : cfg.remoteAccess())
                            + "): add them to EndpointConfig.remoteAccess");
        }
        return rights;
    }
}
