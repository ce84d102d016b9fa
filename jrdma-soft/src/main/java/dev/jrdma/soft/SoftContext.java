package dev.jrdma.soft;

import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.AsyncEvent;
import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.AtomicCap;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.Resource;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/** An open software device. Its children: protection domains, completion channels and completion queues. */
public final class SoftContext extends Resource implements Context {
    static final int MAX_QP_WR = 16384, MAX_SGE = 32, MAX_CQE = 1 << 20, MAX_RD_ATOMIC = 128, MAX_INLINE = 1024;
    /** max_msg_sz: 1 GiB, so a message at the smallest MTU (256) has at most 2^22 packets, a quarter of the PSN space. */
    static final long MAX_MSG = 1L << 30;

    static final long MAX_MR_SIZE = 1L << 32;
    /** The GID table's length, as rxe's (RXE_PORT_GID_TBL_LEN). */
    static final int GID_TABLE_LEN = 1024;

    /** Asynchronous events held for {@link #awaitAsyncEvent}; beyond this many, new ones are counted and dropped. */
    static final int MAX_ASYNC_EVENTS = 4096;

    private final SoftDevice device;
    final Transport transport;
    private final ReentrantLock asyncLock = new ReentrantLock();
    private final Condition asyncReady = asyncLock.newCondition();
    private final ArrayDeque<AsyncEvent> asyncEvents = new ArrayDeque<>();
    private final AtomicLong asyncDropped = new AtomicLong();

    SoftContext(SoftDevice device, Transport transport) {
        super(null, "soft context " + device.name());
        this.device = device;
        this.transport = transport;
    }

    @Override
    public SoftDevice device() {
        return device;
    }

    /** The active MTU of port 1: {@code -Djrdma.soft.mtu} (256..4096) when set, else as rxe sets it from the interface's MTU. */
    Mtu activeMtu() {
        return transport.activeMtu;
    }

    @Override
    public DeviceAttr queryDevice() {
        checkOpen("ibv_query_device");
        int caps = DeviceAttr.CAP_MEM_WINDOW | DeviceAttr.CAP_MEM_WINDOW_TYPE_2B | DeviceAttr.CAP_RC_RNR_NAK_GEN;
        return new DeviceAttr(
                "jrdma-soft 0.1",
                device.nodeGuid(),
                device.nodeGuid(),
                MAX_MR_SIZE,
                4096,
                0,
                0,
                0,
                QpTable.MAX_QPS,
                MAX_QP_WR,
                caps,
                MAX_SGE,
                MAX_SGE,
                65536,
                MAX_CQE,
                KeyTable.MAX_KEYS,
                65536,
                MAX_RD_ATOMIC,
                0,
                MAX_RD_ATOMIC * 1024,
                MAX_RD_ATOMIC,
                0,
                AtomicCap.HCA,
                0,
                0,
                KeyTable.MAX_KEYS,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                1,
                15,
                1);
    }

    @Override
    public PortAttr queryPort(int port) {
        checkOpen("ibv_query_port");
        checkPort("ibv_query_port", port);
        return new PortAttr(
                PortState.ACTIVE,
                Mtu.MTU_4096,
                activeMtu(),
                GID_TABLE_LEN,
                0,
                MAX_MSG,
                0,
                0,
                1,
                0,
                0,
                0,
                1,
                0,
                0,
                0,
                1,
                1,
                5,
                LinkLayer.ETHERNET,
                0);
    }

    static void checkPort(String verb, int port) {
        if (port != 1)
            throw new VerbsException(
                    verb, VerbsException.EINVAL, "the soft device has one port, port 1; got port " + port);
    }

    /**
     * One entry of the GID table ({@link GidTable}: rxe's order for the interface of the device's address);
     * {@link Gid#ZERO} past its end, as rxe's unused entries read.
     */
    @Override
    public Gid queryGid(int port, int index) {
        checkOpen("ibv_query_gid");
        checkPort("ibv_query_gid", port);
        if (index < 0 || index >= GID_TABLE_LEN)
            throw new VerbsException(
                    "ibv_query_gid",
                    VerbsException.EINVAL,
                    "GID index " + index + " outside 0.." + (GID_TABLE_LEN - 1));
        List<Gid> table = GidTable.of(transport.local);
        return index < table.size() ? table.get(index) : Gid.ZERO;
    }

    @Override
    public List<GidEntry> gidTable(int port) {
        checkOpen("ibv_query_gid");
        checkPort("ibv_query_gid", port);
        String netdev = null;
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(transport.local.inet);
            if (ni != null) netdev = ni.getName();
        } catch (SocketException ignored) {
        }
        List<Gid> table = GidTable.of(transport.local);
        List<GidEntry> entries = new java.util.ArrayList<>(table.size());
        for (int i = 0; i < table.size(); i++) entries.add(new GidEntry(1, i, table.get(i), "RoCE v2", netdev));
        return List.copyOf(entries);
    }

    /** The GID of the device's own address, the one GID it can send from (its socket is bound to that address). */
    @Override
    public int defaultGidIndex(int port) {
        checkOpen("ibv_query_gid");
        checkPort("ibv_query_gid", port);
        return ownGidIndex();
    }

    /** The table index of the device's own GID (re-read: interfaces' addresses change). */
    private int ownGidIndex() {
        int i = GidTable.of(transport.local).indexOf(device.gid());
        ownGidIndex = i;
        return i;
    }

    /** The last {@link #ownGidIndex()} found: a route that names it needs no new look at the interfaces. */
    private volatile int ownGidIndex = -1;

    /**
     * Where an address vector sends: the peer's address from its GID, after checking that the vector is global, names
     * the device's own GID as its source (the socket is bound to that address; the interface's other GIDs belong to
     * the soft devices on those addresses) and a peer of the same IP version.
     */
    IpAddress route(AhAttr av, String verb) {
        if (av == null || !av.isGlobal || av.dgid == null || av.dgid.isZero())
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "the soft device routes by GID: set ah.global(peerGid, sgidIndex) with the peer's GID (::ffff:a.b.c.d for IPv4, its IPv6 address for IPv6)");
        if (av.sgidIndex != ownGidIndex && av.sgidIndex != ownGidIndex()) {
            Gid named = av.sgidIndex >= 0 && av.sgidIndex < GID_TABLE_LEN ? queryGid(1, av.sgidIndex) : Gid.ZERO;
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "sgid_index " + av.sgidIndex
                            + (named.isZero()
                                    ? " is not in the GID table"
                                    : " is " + named.toInetAddress().getHostAddress() + ", not this device's address")
                            + ": " + device.name() + " sends from "
                            + transport.local.literal() + " (GID index " + ownGidIndex + ")"
                            + (named.isZero()
                                    ? ""
                                    : "; open soft@"
                                            + IpAddress.of(named.toInetAddress())
                                                    .literal() + " to send from that GID"));
        }
        if ((av.trafficClass & ~0xFF) != 0 || (av.flowLabel & ~0xFFFFF) != 0 || (av.hopLimit & ~0xFF) != 0)
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "traffic_class " + av.trafficClass + ", flow_label " + av.flowLabel + ", hop_limit " + av.hopLimit
                            + ": they must fit 8, 20 and 8 bits, as the IP header's fields");
        IpAddress peer = IpAddress.ofGid(av.dgid, transport.local);
        if (peer.isIpv4() != transport.local.isIpv4())
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "the peer's GID " + av.dgid + " is " + (peer.isIpv4() ? "IPv4" : "IPv6") + " but " + device.name()
                            + " speaks " + (transport.local.isIpv4() ? "IPv4" : "IPv6")
                            + ": use a soft device of the peer's IP version");
        return peer;
    }

    @Override
    public ProtectionDomain allocPd() {
        checkOpen("ibv_alloc_pd");
        enter("ibv_alloc_pd"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftPd(this);
        } finally {
            exit();
        }
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        checkOpen("ibv_create_comp_channel");
        enter("ibv_create_comp_channel"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftChannel(this);
        } finally {
            exit();
        }
    }

    @Override
    public int queryPkey(int port, int index) {
        checkOpen("ibv_query_pkey");
        checkPort("ibv_query_pkey", port);
        if (index != 0)
            throw new VerbsException(
                    "ibv_query_pkey",
                    VerbsException.EINVAL,
                    "the soft device has one P_Key (index 0, the default 0xFFFF); got index " + index);
        return 0xFFFF;
    }

    /** The soft device's completions are signalled by its receive and timer threads: one vector. */
    @Override
    public int numCompVectors() {
        checkOpen("num_comp_vectors");
        return 1;
    }

    @Override
    public CompletionQueue createCq(int cqe, CompletionChannel channel, int compVector) {
        checkOpen("ibv_create_cq");
        if (compVector != 0)
            throw new VerbsException(
                    "ibv_create_cq",
                    VerbsException.EINVAL,
                    "comp_vector " + compVector + " outside 0..0 (the soft device has one completion vector)");
        if (cqe < 1 || cqe > MAX_CQE)
            throw new VerbsException("ibv_create_cq", VerbsException.EINVAL, "cqe " + cqe + " outside 1.." + MAX_CQE);
        SoftChannel ch = null;
        if (channel != null) {
            if (!(channel instanceof SoftChannel sc) || sc.context() != this)
                throw new VerbsException(
                        "ibv_create_cq", VerbsException.EINVAL, "the completion channel belongs to another context");
            sc.checkOpen("ibv_create_cq");
            ch = sc;
        }
        enter("ibv_create_cq"); // a close waits for this creation, so it never sees the child half built
        try {
            return new SoftCq(this, cqe, ch);
        } finally {
            exit();
        }
    }

    // ---- asynchronous events ------------------------------------------------------------------------

    /**
     * Raises an asynchronous event: the device's objects call it where rxe calls the ib_event handler. Never called
     * under a lock that a thread in {@link #awaitAsyncEvent} could hold. Acknowledging a soft event frees nothing:
     * no destroy waits for it.
     */
    void raise(AsyncEventType type, Object element) {
        if (isClosed()) return;
        AsyncEvent event = new AsyncEvent(type, element, () -> {});
        asyncLock.lock();
        try {
            if (asyncEvents.size() >= MAX_ASYNC_EVENTS) {
                asyncDropped.getAndIncrement(); // nobody takes them: keep memory bounded, and say so in counters()
                return;
            }
            asyncEvents.addLast(event);
            asyncReady.signal();
        } finally {
            asyncLock.unlock();
        }
    }

    @Override
    public AsyncEvent awaitAsyncEvent(Duration timeout) {
        checkOpen("ibv_get_async_event");
        long nanos = timeout == null ? Long.MAX_VALUE : timeout.toNanos();
        asyncLock.lock();
        try {
            while (asyncEvents.isEmpty()) {
                if (isClosed()) throw new ClosedException("ibv_get_async_event", what());
                if (nanos <= 0) return null;
                if (timeout == null) asyncReady.await();
                else nanos = asyncReady.awaitNanos(nanos);
            }
            return asyncEvents.pollFirst();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerbsException("ibv_get_async_event", 4, "interrupted while waiting for an asynchronous event");
        } finally {
            asyncLock.unlock();
        }
    }

    /**
     * Packet counters of the device's socket (shared by every context on the same address and port).
     *
     * @return a snapshot of the counters, taken now
     */
    public Stats stats() {
        Counter.Set c = transport.counters;
        return new Stats(
                c.get(Counter.RX_PACKETS),
                c.get(Counter.RX_BAD_ICRC),
                c.get(Counter.RX_MALFORMED),
                c.get(Counter.RX_UNKNOWN_QP),
                c.get(Counter.RX_DROPPED),
                c.get(Counter.TX_PACKETS),
                c.get(Counter.TX_ERRORS),
                c.get(Counter.RETRANSMITS));
    }

    /** Every counter of the device's socket by name, drops included (see {@code Counter}). */
    @Override
    public java.util.Map<String, Long> counters() {
        checkOpen("counters");
        java.util.LinkedHashMap<String, Long> m = new java.util.LinkedHashMap<>(transport.counters.snapshot());
        m.put("async_events_dropped", asyncDropped.get());
        return java.util.Collections.unmodifiableMap(m);
    }

    /** The software device authenticates packets between jrdma peers ({@link PacketAuth}). */
    @Override
    public boolean supportsPacketAuth() {
        return true;
    }

    /** ECN and DCQCN's parameters ({@code -Djrdma.soft.ecn}, {@code -Djrdma.soft.dcqcn.*}). */
    @Override
    public java.util.Map<String, String> providerSettings() {
        java.util.LinkedHashMap<String, String> m = new java.util.LinkedHashMap<>();
        m.put("ecn", Ecn.SEND_ECT ? "ECT(0) sent" : "off");
        m.putAll(Dcqcn.DEFAULTS.describe());
        return m;
    }

    /** The device's link: e.g. "udp 127.0.0.1:4791 (libc) + same-host ring /dev/shm/jrdma-soft-... (to 127.0.0.2:4791 over shm)". */
    @Override
    public String linkDescription() {
        checkOpen("linkDescription");
        return transport.linkName();
    }

    /**
     * A snapshot of the device socket's packet counters.
     *
     * @param rxPackets   packets received
     * @param rxBadIcrc   packets dropped for a bad ICRC
     * @param rxMalformed packets dropped as malformed (headers that do not parse or do not fit)
     * @param rxUnknownQp packets dropped for a destination QP that does not exist here
     * @param rxDropped   packets whose handling failed unexpectedly (a bug; logged, the device keeps serving)
     * @param txPackets   packets sent
     * @param txErrors    sends that failed
     * @param retransmits requests sent again (the requester's retry after a timeout or a NAK)
     */
    public record Stats(
            long rxPackets,
            long rxBadIcrc,
            long rxMalformed,
            long rxUnknownQp,
            long rxDropped,
            long txPackets,
            long txErrors,
            long retransmits) {}

    @Override
    protected void destroy() {
        asyncLock.lock();
        try {
            asyncEvents.clear();
            asyncReady.signalAll(); // a waiter wakes and throws ClosedException
        } finally {
            asyncLock.unlock();
        }
        transport.release();
    }
}
