package dev.jrdma.verbs;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** An open device ({@code struct ibv_context}). Closing it closes everything created from it. */
public interface Context extends AutoCloseable {
    Device device();

    /** {@code ibv_query_device}. */
    DeviceAttr queryDevice();

    /** {@code ibv_query_port}; ports are numbered from 1. */
    PortAttr queryPort(int port);

    /** {@code ibv_query_gid}. */
    Gid queryGid(int port, int index);

    /** The valid (non-zero) GIDs of a port with their types, like {@code ibv_devinfo -v} lists them. */
    default List<GidEntry> gidTable(int port) {
        List<GidEntry> list = new ArrayList<>();
        int n = queryPort(port).gidTblLen();
        for (int i = 0; i < n; i++) {
            Gid g;
            try {
                g = queryGid(port, i);
            } catch (VerbsException unset) {
                continue; // on RoCE an unused entry may fail to read: it is simply not part of the table
            }
            if (!g.isZero()) list.add(new GidEntry(port, i, g, null, null));
        }
        return list;
    }

    /**
     * The device's counters by name (packets, drops, retransmissions...): the soft device's own, or for a
     * kernel device its sysfs {@code counters} and {@code hw_counters}. Empty when the provider has none.
     */
    default Map<String, Long> counters() {
        return Map.of();
    }

    /** {@code ibv_alloc_pd}. */
    ProtectionDomain allocPd();

    /** {@code ibv_create_comp_channel}: lets a thread block until a completion queue has an event. */
    CompletionChannel createCompletionChannel();

    /**
     * {@code ibv_create_cq}.
     *
     * @param cqe     the minimum number of completions it must hold
     * @param channel where its events are delivered after {@link CompletionQueue#requestNotify}, or null
     */
    CompletionQueue createCq(int cqe, CompletionChannel channel);

    boolean isClosed();

    /** {@code ibv_close_device}, after closing every object created from this context. Idempotent. */
    @Override
    void close();
}
