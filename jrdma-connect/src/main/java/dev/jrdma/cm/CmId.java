package dev.jrdma.cm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.function.UnaryOperator;

/**
 * An rdma_cm identifier ({@code struct rdma_cm_id}): the rdma_cm counterpart of a socket. A client resolves the
 * address and route, then connects; a server binds, listens and accepts the ids its listener's
 * {@link CmEventType#CONNECT_REQUEST} events carry. The operations return at once; what they lead to arrives as an
 * event on the id's {@link CmEventChannel}.
 *
 * <p>jrdma creates QPs with the verbs API (on the device {@link #deviceName} names), so the QP is moved by the
 * application with the attributes of {@link #initQpAttr}: INIT before connect/accept, RTR and RTS on
 * CONNECT_RESPONSE (client, then {@link #establish}) or before accept (server); {@link #moveQpToRts} walks the whole
 * way as librdmacm's own connect and accept do. For a datagram id only INIT comes
 * from rdma_cm (port, P_Key index, Q_Key); RTR and RTS need only the state (and an SQ PSN).
 */
public final class CmId implements AutoCloseable {
    final MemorySegment ptr;
    private final PortSpace portSpace;
    private volatile CmEventChannel channel;
    private volatile boolean closed;

    CmId(MemorySegment ptr, CmEventChannel channel, PortSpace portSpace) {
        this.ptr = ptr.reinterpret(Librdmacm.ID_SIZE);
        this.channel = channel;
        this.portSpace = portSpace;
    }

    /**
     * Creates an id whose events arrive on {@code channel} ({@code rdma_create_id}).
     *
     * @param channel   the channel for its events (and those of the connection-request ids a listener gets)
     * @param portSpace {@link PortSpace#TCP} for reliable connections, {@link PortSpace#UDP} for datagrams
     * @return the new id; close it before its channel
     * @throws CmException when the channel is closed (errno 0), rdma_cm is not available here, or librdmacm refuses
     */
    public static CmId create(CmEventChannel channel, PortSpace portSpace) throws CmException {
        if (channel.isClosed()) throw new CmException("rdma_create_id", 0, "the event channel is closed");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            Librdmacm.call(
                    "rdma_create_id", Librdmacm.CREATE_ID, channel.ptr, out, MemorySegment.NULL, portSpace.code());
            CmId id = new CmId(out.get(ADDRESS, 0), channel, portSpace);
            channel.register(id);
            return id;
        }
    }

    /** {@return the port space the id was created in (a connection request's id: its listener's)} */
    public PortSpace portSpace() {
        return portSpace;
    }

    /** {@return the channel its events arrive on (the last one {@link #migrate} moved it to)} */
    public CmEventChannel channel() {
        return channel;
    }

    private void open(String call) throws CmException {
        if (closed) throw new CmException(call, 0, "the id is closed");
    }

    /**
     * Binds to a local address ({@code rdma_bind_addr}), which also binds the id to the RDMA device that has it.
     *
     * @param local the address of an RDMA device here (or the wildcard address) and a port; port 0: any free port,
     *              see {@link #localAddress}
     * @throws CmException when the id is closed (errno 0), or librdmacm refuses: EADDRINUSE (the port is taken), EADDRNOTAVAIL (no
     *                     RDMA device has that address)
     */
    public void bind(InetSocketAddress local) throws CmException {
        open("rdma_bind_addr");
        try (Arena a = Arena.ofConfined()) {
            Librdmacm.call("rdma_bind_addr", Librdmacm.BIND_ADDR, ptr, Librdmacm.sockaddr(a, local));
        }
    }

    /**
     * Listens for connection requests ({@code rdma_listen}); bind first. Each request arrives as a
     * {@link CmEventType#CONNECT_REQUEST} event carrying a new id for the connection.
     *
     * @param backlog how many requests may wait to be accepted or rejected (0, negative or above the kernel's limit: that limit, ucma's {@code max_backlog})
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. the id is not bound)
     */
    public void listen(int backlog) throws CmException {
        open("rdma_listen");
        Librdmacm.call("rdma_listen", Librdmacm.LISTEN, ptr, backlog);
    }

    /**
     * Resolves {@code destination} to a local device and port ({@code rdma_resolve_addr}): ADDR_RESOLVED or
     * ADDR_ERROR follows.
     *
     * @param source      the local address to use, or null: the one the IP route to {@code destination} picks
     * @param destination the peer's IP address and rdma_cm port
     * @param timeout     how long resolution may take before ADDR_ERROR (at least 1 ms is passed)
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses at once (e.g. ENETUNREACH, no RDMA device has a route)
     */
    public void resolveAddress(InetSocketAddress source, InetSocketAddress destination, Duration timeout)
            throws CmException {
        open("rdma_resolve_addr");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = source == null ? MemorySegment.NULL : Librdmacm.sockaddr(a, source);
            Librdmacm.call(
                    "rdma_resolve_addr",
                    Librdmacm.RESOLVE_ADDR,
                    ptr,
                    src,
                    Librdmacm.sockaddr(a, destination),
                    millis(timeout));
        }
    }

    /**
     * Resolves the route to the resolved address ({@code rdma_resolve_route}): ROUTE_RESOLVED or ROUTE_ERROR follows.
     *
     * @param timeout how long resolution may take before ROUTE_ERROR (at least 1 ms is passed)
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. the address was not resolved first)
     */
    public void resolveRoute(Duration timeout) throws CmException {
        open("rdma_resolve_route");
        Librdmacm.call("rdma_resolve_route", Librdmacm.RESOLVE_ROUTE, ptr, millis(timeout));
    }

    /**
     * Sets the type of service of the id's connection ({@code rdma_set_option(id, RDMA_OPTION_ID,
     * RDMA_OPTION_ID_TOS)}): on RoCE the traffic class of its packets' GRH (their IP header's TOS byte). Set it
     * after the address is resolved and before the route, as perftest's {@code -T} does: the route takes it from the
     * id.
     *
     * @param tos the TOS byte, 0 to 255 (DSCP in the upper 6 bits, ECN in the lower 2)
     * @throws IllegalArgumentException when {@code tos} is outside 0..255
     * @throws CmException              when the id is closed (errno 0) or librdmacm refuses
     */
    public void setTos(int tos) throws CmException {
        if (tos < 0 || tos > 255) throw new IllegalArgumentException("TOS " + tos + ": a byte, 0 to 255");
        open("rdma_set_option(RDMA_OPTION_ID_TOS)");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment value = a.allocate(JAVA_BYTE);
            value.set(JAVA_BYTE, 0, (byte) tos);
            Librdmacm.call(
                    "rdma_set_option(RDMA_OPTION_ID_TOS)",
                    Librdmacm.SET_OPTION,
                    ptr,
                    Librdmacm.OPT_LEVEL_ID,
                    Librdmacm.OPT_ID_TOS,
                    value,
                    1L);
        }
    }

    /**
     * Sends a connection request for the QP {@code param.qpNum()} ({@code rdma_connect}); the QP must be in INIT.
     * RC: CONNECT_RESPONSE (then move the QP to RTR/RTS and {@link #establish}), REJECTED, UNREACHABLE or
     * CONNECT_ERROR follows. UD: ESTABLISHED with the peer's QPN and Q_Key, REJECTED or UNREACHABLE.
     *
     * @param param the QP number, the read/atomic depths, retry counts and private data (at most 56 bytes for RC,
     *              180 for UD)
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. EINVAL: too much private data, or the route is not
     *                     resolved)
     */
    public void connect(ConnParam param) throws CmException {
        open("rdma_connect");
        try (Arena a = Arena.ofConfined()) {
            Librdmacm.call("rdma_connect", Librdmacm.CONNECT, ptr, param.toNative(a));
        }
    }

    /**
     * Accepts a connection request on the request's id ({@code rdma_accept}); for RC move the QP to RTS first.
     * For RC, ESTABLISHED follows once the client's RTU arrives; a UD accept answers at once (SIDR reply).
     *
     * @param param this side's QP number, depths, retry counts and private data (at most 196 bytes for RC, 136 for
     *              UD)
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. EINVAL: too much private data)
     */
    public void accept(ConnParam param) throws CmException {
        open("rdma_accept");
        try (Arena a = Arena.ofConfined()) {
            Librdmacm.call("rdma_accept", Librdmacm.ACCEPT, ptr, param.toNative(a));
        }
    }

    /**
     * Rejects a connection request ({@code rdma_reject}); the peer gets REJECTED with reason 28 (consumer defined).
     *
     * @param privateData what the peer's REJECTED event carries (at most 148 bytes reach it), may be empty
     * @throws IllegalArgumentException when {@code privateData} is longer than {@link ConnParam#MAX_PRIVATE_DATA}
     * @throws CmException              when the id is closed (errno 0) or librdmacm refuses (e.g. EINVAL: too much private data)
     */
    public void reject(byte[] privateData) throws CmException {
        open("rdma_reject");
        if (privateData.length > ConnParam.MAX_PRIVATE_DATA)
            throw new IllegalArgumentException("private data of " + privateData.length + " bytes: at most 255");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = privateData.length == 0 ? MemorySegment.NULL : ConnParam.bytes(a, privateData);
            Librdmacm.call("rdma_reject", Librdmacm.REJECT, ptr, d, (byte) privateData.length);
        }
    }

    /**
     * Completes the client's side after CONNECT_RESPONSE, once the QP is in RTS ({@code rdma_establish}): sends the
     * RTU, and ESTABLISHED follows.
     *
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. no CONNECT_RESPONSE came)
     */
    public void establish() throws CmException {
        open("rdma_establish");
        Librdmacm.call("rdma_establish", Librdmacm.ESTABLISH, ptr);
    }

    /**
     * Disconnects ({@code rdma_disconnect}). The first call sends a DREQ: the peer gets DISCONNECTED and answers
     * with its own disconnect (a DREP), on which this side gets DISCONNECTED too (or after the CM's DREQ timeout).
     *
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. EINVAL: not connected)
     */
    public void disconnect() throws CmException {
        open("rdma_disconnect");
        Librdmacm.call("rdma_disconnect", Librdmacm.DISCONNECT, ptr);
    }

    /**
     * Moves the id's events to another channel ({@code rdma_migrate_id}), e.g. one per connection.
     *
     * @param to the channel its events arrive on from now
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses; the id stays on its channel then
     */
    public void migrate(CmEventChannel to) throws CmException {
        open("rdma_migrate_id");
        Librdmacm.call("rdma_migrate_id", Librdmacm.MIGRATE_ID, ptr, to.ptr);
        channel.unregister(this);
        channel = to;
        to.register(this);
    }

    /**
     * The QP attributes and mask that move a QP of this connection to {@code target} ({@code rdma_init_qp_attr}),
     * ready for {@code QueuePair.modify}: port, P_Key index and access for INIT; path, destination QPN, PSN and
     * read/atomic depth from the CM exchange for RTR; timeouts and retry counts for RTS.
     *
     * @param target the state the QP moves to next (INIT, RTR or RTS)
     * @return the attributes librdmacm filled in, with exactly the mask bits it set
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (e.g. RTR before the peer's parameters are known)
     */
    public QpAttr initQpAttr(QpState target) throws CmException {
        open("rdma_init_qp_attr");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Librdmacm.QA_SIZE, 8);
            MemorySegment mask = a.allocate(JAVA_INT);
            attr.set(JAVA_INT, Librdmacm.QA_STATE, target.code());
            Librdmacm.call("rdma_init_qp_attr(" + target + ")", Librdmacm.INIT_QP_ATTR, ptr, attr, mask);
            return Librdmacm.toQpAttr(attr, mask.get(JAVA_INT, 0));
        }
    }

    /**
     * Moves the QP of this connection to RTS with the attributes rdma_cm computed ({@link #initQpAttr}): INIT (again,
     * from INIT: with the rights the connection grants), RTR, then RTS, as librdmacm does for a QP of its own. The
     * client calls it on CONNECT_RESPONSE (then {@link #establish}), the server before accept.
     *
     * @param qp the connection's QP, in RESET or INIT
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (the peer's parameters are not known)
     * @throws dev.jrdma.verbs.VerbsException when the device refuses a transition
     */
    public void moveQpToRts(QueuePair qp) throws CmException {
        moveQpToRts(qp, UnaryOperator.identity());
    }

    /**
     * Moves the QP to RTS as {@link #moveQpToRts(QueuePair)} does, with the RTR attributes adjusted first.
     *
     * @param qp  the connection's QP, in RESET or INIT
     * @param rtr adjusts the RTR attributes rdma_cm computed before they are applied (e.g.
     *            {@code a -> a.minRnrTimer(12)}, a setting rdma_cm leaves at its default)
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (the peer's parameters are not known)
     * @throws dev.jrdma.verbs.VerbsException when the device refuses a transition
     */
    public void moveQpToRts(QueuePair qp, UnaryOperator<QpAttr> rtr) throws CmException {
        qp.modify(initQpAttr(QpState.INIT));
        moveInitQpToRts(qp, rtr);
    }

    /**
     * The RTR and RTS attributes a walk applied, for a caller that keeps them (e.g. the path MTU and the PSNs).
     *
     * @param rtr the attributes of the move to RTR
     * @param rts the attributes of the move to RTS
     */
    public record AppliedAttrs(QpAttr rtr, QpAttr rts) {}

    /**
     * Moves a QP already in INIT (with INIT attributes of the caller's own, e.g. narrower rights than rdma_cm's) to RTR
     * and RTS with the attributes rdma_cm computed, the RTR ones adjusted first.
     *
     * @param qp  the connection's QP, in INIT
     * @param rtr adjusts the RTR attributes before they are applied ({@code UnaryOperator.identity()}: as computed)
     * @return the attributes applied
     * @throws CmException when the id is closed (errno 0) or librdmacm refuses (the peer's parameters are not known)
     * @throws dev.jrdma.verbs.VerbsException when the device refuses a transition
     */
    public AppliedAttrs moveInitQpToRts(QueuePair qp, UnaryOperator<QpAttr> rtr) throws CmException {
        QpAttr toRtr = rtr.apply(initQpAttr(QpState.RTR));
        qp.modify(toRtr);
        QpAttr toRts = initQpAttr(QpState.RTS);
        qp.modify(toRts);
        return new AppliedAttrs(toRtr, toRts);
    }

    /**
     * {@return the verbs device the id is bound to (e.g. {@code rxe0}, after bind or address resolution), or null
     * when it is not bound to one}
     *
     * @throws CmException when the id is closed (errno 0) or {@code ibv_get_device_name} fails
     */
    public String deviceName() throws CmException {
        open("ibv_get_device_name");
        return Librdmacm.deviceName(ptr);
    }

    /** {@return the device port the id is bound to, from 1 (0 before bind or address resolution)} */
    public int portNum() {
        return Librdmacm.u8(ptr, Librdmacm.ID_PORT_NUM);
    }

    /** {@return the local address (with the port a bind to port 0 chose), or null before bind/resolution or once closed} */
    public InetSocketAddress localAddress() {
        return closed ? null : Librdmacm.readSockaddr(ptr.asSlice(Librdmacm.ID_SRC_ADDR, 28));
    }

    /** {@return the peer's address (from resolution or the connection request), or null when none or once closed} */
    public InetSocketAddress remoteAddress() {
        return closed ? null : Librdmacm.readSockaddr(ptr.asSlice(Librdmacm.ID_DST_ADDR, 28));
    }

    /** {@return whether {@link #close} was called} */
    public boolean isClosed() {
        return closed;
    }

    /** Destroys the id ({@code rdma_destroy_id}); a connected id should be disconnected first. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        synchronized (this) {
            if (closed) return;
            closed = true;
            channel.unregister(this);
            Librdmacm.callQuietly(Librdmacm.DESTROY_ID, ptr);
        }
    }

    private static int millis(Duration d) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
    }

    @Override
    public String toString() {
        return "CmId{" + portSpace + ", local=" + localAddress() + ", remote=" + remoteAddress()
                + (closed ? ", closed" : "") + "}";
    }
}
