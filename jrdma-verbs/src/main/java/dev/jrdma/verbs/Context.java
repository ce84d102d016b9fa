package dev.jrdma.verbs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** An open device ({@code struct ibv_context}). Closing it closes everything created from it. */
public interface Context extends AutoCloseable {
    Device device();

    /** {@code ibv_query_device}. */
    DeviceAttr queryDevice();

    /** {@code ibv_query_port}; ports are numbered from 1. */
    PortAttr queryPort(int port);

    /** {@code ibv_query_gid}. */
    Gid queryGid(int port, int index);

    /** {@code ibv_query_pkey}: the P_Key at {@code index} of the port's table (0xFFFF is the default, full-member key). */
    int queryPkey(int port, int index);

    /** {@code num_comp_vectors}: how many completion vectors (interrupt sources) a CQ may be bound to, 0 .. n-1. */
    int numCompVectors();

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
    default CompletionQueue createCq(int cqe, CompletionChannel channel) {
        return createCq(cqe, channel, 0);
    }

    /**
     * {@code ibv_create_cq} with its completion vector.
     *
     * @param compVector the completion vector its events are signalled on, 0 .. {@link #numCompVectors()} - 1
     */
    CompletionQueue createCq(int cqe, CompletionChannel channel, int compVector);

    /**
     * {@code ibv_get_async_event}: waits for the next asynchronous event of this device (a QP, CQ or SRQ error, a
     * port going up or down, an SRQ's limit...). Acknowledge each event with {@link AsyncEvent#ack()}.
     * Take events either here or with {@link #onAsyncEvent}, not both.
     *
     * @return the event, or null when the timeout passed first (null timeout: wait for good)
     */
    AsyncEvent awaitAsyncEvent(Duration timeout);

    /**
     * Calls {@code listener} on a thread of its own for every asynchronous event, acknowledging each after the
     * listener returns, until the returned dispatcher or this context is closed.
     */
    default AsyncEventDispatcher onAsyncEvent(Consumer<AsyncEvent> listener) {
        return AsyncEventDispatcher.start(this, listener);
    }

    boolean isClosed();

    /** {@code ibv_close_device}, after closing every object created from this context. Idempotent. */
    @Override
    void close();
}
