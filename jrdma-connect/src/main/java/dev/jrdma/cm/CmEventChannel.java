package dev.jrdma.cm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An rdma_cm event channel ({@code rdma_create_event_channel}): the events of the ids created on it (or migrated to
 * it). {@link #next} waits with poll(2), so it never blocks past its timeout; each event is copied and acknowledged
 * before it is returned.
 */
public final class CmEventChannel implements AutoCloseable {
    final MemorySegment ptr;
    private final int fd;
    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private CmEventChannel(MemorySegment ptr) {
        this.ptr = ptr;
        this.fd = ptr.reinterpret(4).get(JAVA_INT, 0);
    }

    /**
     * {@return why rdma_cm cannot be used on this machine (no librdmacm, or no {@code /dev/infiniband/rdma_cm}), or
     * empty when it can}
     */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(Librdmacm.unavailable());
    }

    /**
     * Creates an event channel ({@code rdma_create_event_channel}).
     *
     * @return the new channel; close it after the ids created on it
     * @throws CmException when rdma_cm is not available here ({@link #unavailableReason}, errno 0) or librdmacm
     *                     fails to open {@code /dev/infiniband/rdma_cm}
     */
    public static CmEventChannel create() throws CmException {
        return new CmEventChannel(Librdmacm.callPtr("rdma_create_event_channel", Librdmacm.CREATE_EVENT_CHANNEL));
    }

    /** {@return the channel's file descriptor ({@code rdma_event_channel.fd}), readable when an event is waiting} */
    public int fd() {
        return fd;
    }

    void register(CmId id) {
        ids.put(id.ptr.address(), id);
    }

    void unregister(CmId id) {
        ids.remove(id.ptr.address(), id);
    }

    /**
     * Waits for the next event of any id on this channel ({@code rdma_get_cm_event}, then {@code rdma_ack_cm_event}).
     *
     * @param timeout how long to wait at most; zero or negative: do not wait
     * @return the event, or null when {@code timeout} passed first (or the channel is closed)
     * @throws CmException when librdmacm fails to deliver it
     */
    public CmEvent next(Duration timeout) throws CmException {
        return next(timeout.toMillis());
    }

    /**
     * As {@link #next(Duration)}, with the timeout in milliseconds.
     *
     * @param timeoutMs how long to wait at most, in milliseconds; 0 or negative: do not wait
     * @return the event, or null when the timeout passed first (or the channel is closed)
     * @throws CmException when poll(2) or {@code rdma_get_cm_event} fails
     */
    public synchronized CmEvent next(long timeoutMs) throws CmException {
        if (closed) return null;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment pfd = a.allocate(8, 4);
            pfd.set(JAVA_INT, 0, fd);
            pfd.set(JAVA_SHORT, 4, (short) 1); // POLLIN
            int n = Librdmacm.call(
                    "poll", Librdmacm.POLL, pfd, 1L, (int) Math.max(0, Math.min(Integer.MAX_VALUE, timeoutMs)));
            if (n == 0) return null;
            MemorySegment out = a.allocate(ADDRESS);
            Librdmacm.call("rdma_get_cm_event", Librdmacm.GET_CM_EVENT, ptr, out);
            MemorySegment ev = out.get(ADDRESS, 0).reinterpret(Librdmacm.EV_SIZE);
            try {
                return copy(ev);
            } finally {
                Librdmacm.call("rdma_ack_cm_event", Librdmacm.ACK_CM_EVENT, ev);
            }
        }
    }

    private CmEvent copy(MemorySegment ev) {
        CmEventType type = CmEventType.of(ev.get(JAVA_INT, Librdmacm.EV_EVENT));
        CmId listen = idFor(ev.get(ADDRESS, Librdmacm.EV_LISTEN_ID), null);
        CmId id = idFor(ev.get(ADDRESS, Librdmacm.EV_ID), listen);
        MemorySegment param = ev.asSlice(Librdmacm.EV_PARAM, Librdmacm.UD_SIZE);
        MemorySegment pd = param.get(ADDRESS, Librdmacm.CP_PRIVATE_DATA);
        int len = Librdmacm.u8(param, Librdmacm.CP_PRIVATE_DATA_LEN);
        byte[] priv = pd.equals(MemorySegment.NULL) || len == 0
                ? new byte[0]
                : pd.reinterpret(len).toArray(JAVA_BYTE);
        int status = ev.get(JAVA_INT, Librdmacm.EV_STATUS);
        if (id != null && id.portSpace().isDatagram()) {
            boolean hasPeer = type == CmEventType.ESTABLISHED || type == CmEventType.MULTICAST_JOIN;
            return new CmEvent(
                    type,
                    status,
                    id,
                    listen,
                    priv,
                    0,
                    0,
                    0,
                    0,
                    false,
                    param.get(JAVA_INT, Librdmacm.UD_QP_NUM),
                    hasPeer ? Librdmacm.toAhAttr(param.asSlice(Librdmacm.UD_AH_ATTR, Librdmacm.AH_SIZE)) : null,
                    param.get(JAVA_INT, Librdmacm.UD_QKEY));
        }
        return new CmEvent(
                type,
                status,
                id,
                listen,
                priv,
                Librdmacm.u8(param, Librdmacm.CP_RESPONDER_RESOURCES),
                Librdmacm.u8(param, Librdmacm.CP_INITIATOR_DEPTH),
                Librdmacm.u8(param, Librdmacm.CP_RETRY_COUNT),
                Librdmacm.u8(param, Librdmacm.CP_RNR_RETRY_COUNT),
                Librdmacm.u8(param, Librdmacm.CP_SRQ) != 0,
                param.get(JAVA_INT, Librdmacm.CP_QP_NUM) & 0xFFFFFF,
                null,
                0);
    }

    /** The Java id of a cm_id pointer; a connection request's new id gets one here (on the listener's channel). */
    private CmId idFor(MemorySegment p, CmId listener) {
        if (p.equals(MemorySegment.NULL)) return null;
        CmId known = ids.get(p.address());
        if (known != null) return known;
        CmId fresh = new CmId(
                p,
                this,
                listener != null
                        ? listener.portSpace()
                        : PortSpace.of(p.reinterpret(Librdmacm.ID_SIZE).get(JAVA_INT, Librdmacm.ID_PS)));
        register(fresh);
        return fresh;
    }

    /** {@return whether {@link #close} was called} */
    public boolean isClosed() {
        return closed;
    }

    /** Destroys the channel ({@code rdma_destroy_event_channel}); close its ids first. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        synchronized (this) {
            if (closed) return;
            closed = true;
            Librdmacm.callQuietly(Librdmacm.DESTROY_EVENT_CHANNEL, ptr);
        }
    }

    @Override
    public String toString() {
        return "CmEventChannel{fd=" + fd + (closed ? ", closed" : "") + "}";
    }
}
