package dev.jrdma.verbs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * An open device ({@code struct ibv_context}). Closing it closes everything created from it. Every verb throws
 * {@link ClosedException} once the context is closed, and {@link VerbsException} naming the verb and errno when the
 * provider refuses.
 */
public interface Context extends AutoCloseable {
    /** {@return the device this context was opened from} */
    Device device();

    /**
     * {@code ibv_query_device}: the device's attributes and limits.
     *
     * @return the attributes
     */
    DeviceAttr queryDevice();

    /**
     * Queries the extended device attributes ({@code ibv_query_device_ex}): on-demand paging, timestamps, TSO, RSS,
     * packet pacing, tag matching, CQ moderation, device memory. A provider without them reports each feature absent,
     * as libibverbs does for a provider without {@code query_device_ex}.
     *
     * @return the extended attributes
     * @throws VerbsException when the device cannot be queried
     */
    default DeviceAttrEx queryDeviceEx() {
        return DeviceAttrEx.without(queryDevice());
    }

    /**
     * {@code ibv_query_port}: a port's state, MTUs and table sizes.
     *
     * @param port the port number, from 1 to {@link DeviceAttr#physPortCnt()}
     * @return the port's attributes
     * @throws VerbsException (EINVAL) for a port the device does not have
     */
    PortAttr queryPort(int port);

    /**
     * {@code ibv_query_gid}: one entry of a port's GID table.
     *
     * @param port  the port number, from 1
     * @param index the entry, 0 .. {@link PortAttr#gidTblLen()} - 1
     * @return the GID; {@link Gid#ZERO} or an exception for an unused entry, depending on the device
     * @throws VerbsException (EINVAL) for a port or index outside the table
     */
    Gid queryGid(int port, int index);

    /**
     * {@code ibv_query_pkey}: one entry of a port's P_Key table.
     *
     * @param port  the port number, from 1
     * @param index the entry, 0 .. {@link PortAttr#pkeyTblLen()} - 1
     * @return the 16-bit P_Key (0xFFFF is the default, full-member key)
     * @throws VerbsException (EINVAL) for a port or index outside the table
     */
    int queryPkey(int port, int index);

    /** {@return how many completion vectors (interrupt sources) a CQ may be bound to ({@code num_comp_vectors})} */
    int numCompVectors();

    /**
     * The valid (non-zero) GIDs of a port with their types, like {@code ibv_devinfo -v} lists them.
     *
     * @param port the port number, from 1
     * @return the entries in table order; an entry that cannot be read is left out
     */
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
     * The GID index a RoCE application sends from when it is not told one (perftest's choice without {@code -x}):
     * the first IPv4-mapped GID of type RoCE v2 (or of no stated type), else the first RoCE v2 GID, else the first
     * entry, else 0. A device that can
     * send from one GID only (the software device: its socket's address) returns that one.
     *
     * @param port the port number, from 1
     * @return the index
     */
    default int defaultGidIndex(int port) {
        List<GidEntry> table;
        try {
            table = gidTable(port);
        } catch (VerbsException e) {
            return 0; // a device without a readable GID table: GID 0
        }
        for (GidEntry g : table) if (g.gid().isIpv4Mapped() && (g.type() == null || g.isRoceV2())) return g.index();
        for (GidEntry g : table) if (g.isRoceV2()) return g.index();
        return table.isEmpty() ? 0 : table.getFirst().index();
    }

    /**
     * The device's counters by name (packets, drops, retransmissions...): the soft device's own, or for a kernel device
     * its sysfs {@code counters} and {@code hw_counters}.
     *
     * @return a snapshot of the counters; empty when the provider has none
     */
    default Map<String, Long> counters() {
        return Map.of();
    }

    /**
     * Whether QPs of this device take {@link QpAttr#packetAuthKey(byte[])}: jrdma's authenticated mode, a MAC on every
     * packet between two jrdma software devices. Kernel and hardware devices (rxe, NICs) cannot: they speak plain RoCEv2.
     *
     * @return true for the software device
     */
    default boolean supportsPacketAuth() {
        return false;
    }

    /**
     * What carries the device's packets, for people ({@code jrdma devinfo}): for the software device its UDP socket,
     * and its same-host ring with the peers it reaches through rings now; empty for a kernel device.
     *
     * @return a one-line description, or the empty string
     */
    default String linkDescription() {
        return "";
    }

    /**
     * The provider's own settings, for people ({@code jrdma devinfo -v}): for the software device its congestion
     * control (ECN, DCQCN's parameters, each settable by the system property {@code jrdma.soft.NAME}); empty for a
     * kernel device.
     *
     * @return each setting's name and value, in the order to show them
     */
    default java.util.Map<String, String> providerSettings() {
        return java.util.Map.of();
    }

    /**
     * {@code ibv_alloc_pd}: a new protection domain.
     *
     * @return the protection domain, closed with this context
     */
    ProtectionDomain allocPd();

    /**
     * {@code ibv_create_comp_channel}: lets a thread block until a completion queue has an event.
     *
     * @return the channel, closed with this context
     */
    CompletionChannel createCompletionChannel();

    /**
     * {@code ibv_create_cq} on completion vector 0.
     *
     * @param cqe     the minimum number of completions it must hold, from 1 to {@link DeviceAttr#maxCqe()}
     * @param channel where its events are delivered after {@link CompletionQueue#requestNotify}, or null
     * @return the completion queue, closed with this context
     * @throws VerbsException (EINVAL) for a {@code cqe} out of range or a channel of another context
     */
    default CompletionQueue createCq(int cqe, CompletionChannel channel) {
        return createCq(cqe, channel, 0);
    }

    /**
     * {@code ibv_create_cq} with its completion vector.
     *
     * @param cqe        the minimum number of completions it must hold, from 1 to {@link DeviceAttr#maxCqe()}
     * @param channel    where its events are delivered after {@link CompletionQueue#requestNotify}, or null
     * @param compVector the completion vector its events are signalled on, 0 .. {@link #numCompVectors()} - 1
     * @return the completion queue, closed with this context
     * @throws VerbsException (EINVAL) for a {@code cqe} or vector out of range, or a channel of another context
     */
    CompletionQueue createCq(int cqe, CompletionChannel channel, int compVector);

    /**
     * {@code ibv_get_async_event}: waits for the next asynchronous event of this device (a QP, CQ or SRQ error, a
     * port going up or down, an SRQ's limit...). Acknowledge each event with {@link AsyncEvent#ack()}.
     * Take events either here or with {@link #onAsyncEvent}, not both.
     *
     * @param timeout how long to wait; null waits for good
     * @return the event, or null when the timeout passed first
     */
    AsyncEvent awaitAsyncEvent(Duration timeout);

    /**
     * Calls {@code listener} on a thread of its own for every asynchronous event, acknowledging each after the
     * listener returns, until the returned dispatcher or this context is closed.
     *
     * @param listener what to do with each event; an exception it throws is logged and does not stop the thread
     * @return the running dispatcher; close it to stop
     */
    default AsyncEventDispatcher onAsyncEvent(Consumer<AsyncEvent> listener) {
        return AsyncEventDispatcher.start(this, listener);
    }

    /** {@return whether {@link #close()} was called} */
    boolean isClosed();

    /** {@code ibv_close_device}, after closing every object created from this context. Idempotent. */
    @Override
    void close();
}
