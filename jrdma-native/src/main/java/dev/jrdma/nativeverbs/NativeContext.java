package dev.jrdma.nativeverbs;

import static dev.jrdma.nativeverbs.Layouts.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.jrdma.verbs.AsyncEvent;
import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.AtomicCap;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.DeviceAttrEx;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.VerbsException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/** An open device ({@code struct ibv_context*}); holds the ops-table pointers of the inline verbs. */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class NativeContext extends NativeResource implements Context {
    final NativeDevice device;
    final MemorySegment ctx;
    /** Function pointers of ibv_context_ops (NULL when the provider lacks the verb). */
    final MemorySegment opsPollCq,
            opsReqNotifyCq,
            opsPostSend,
            opsPostRecv,
            opsAllocMw,
            opsBindMw,
            opsDeallocMw,
            opsPostSrqRecv;
    /** CQs by native address, to map ibv_get_cq_event's answer back to the Java object. */
    final ConcurrentHashMap<Long, NativeCq> cqs = new ConcurrentHashMap<>();
    /** QPs and SRQs by native address, to map ibv_get_async_event's element back to the Java object. */
    final ConcurrentHashMap<Long, NativeQp> qps = new ConcurrentHashMap<>();

    final ConcurrentHashMap<Long, NativeSrq> srqs = new ConcurrentHashMap<>();
    /**
     * Held from ibv_get_async_event until the event is registered on its QP, CQ or SRQ, and by their free while it
     * acknowledges what is left and leaves the maps: an event read but neither registered nor acknowledged would
     * make ibv_destroy_qp/cq/srq wait for good.
     */
    final Object asyncLock = new Object();

    private final int asyncFd;
    /** Set once the async fd was made non-blocking (on the first wait: a context nobody waits on is left as it is). */
    private volatile boolean asyncFdNonBlocking;

    private volatile DeviceAttr attr;

    NativeContext(NativeDevice device, MemorySegment ctx) {
        super(null, "context of " + device.name());
        this.device = device;
        this.ctx = ctx;
        opsPollCq = op("poll_cq");
        opsReqNotifyCq = op("req_notify_cq");
        opsPostSend = op("post_send");
        opsPostRecv = op("post_recv");
        opsAllocMw = op("alloc_mw");
        opsBindMw = op("bind_mw");
        opsDeallocMw = op("dealloc_mw");
        opsPostSrqRecv = op("post_srq_recv");
        asyncFd = ctx.get(JAVA_INT, offset(Layouts.CONTEXT, "async_fd"));
    }

    private MemorySegment op(String name) {
        return ctx.get(ADDRESS, offset(Layouts.CONTEXT, "ops." + name));
    }

    @Override
    public Device device() {
        return device;
    }

    /** Cached device attributes (queried once). */
    DeviceAttr attr() {
        DeviceAttr a = attr;
        if (a == null) attr = a = queryDevice();
        return a;
    }

    @Override
    public DeviceAttr queryDevice() {
        return underUse("ibv_query_device", (a, st) -> {
            MemorySegment s = a.allocate(Layouts.DEVICE_ATTR);
            int rc = (int) Ibv.Fn.QUERY_DEVICE.invokeExact(st, ctx, s);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_query_device",
                        Errors.errno(rc, st),
                        "check the device " + device.name() + " is still present (dmesg)");
            var L = Layouts.DEVICE_ATTR;
            DeviceAttr d = new DeviceAttr(
                    Ibv.cString(s, 0, 64),
                    Long.reverseBytes(s.get(JAVA_LONG, offset(L, "node_guid"))),
                    Long.reverseBytes(s.get(JAVA_LONG, offset(L, "sys_image_guid"))),
                    s.get(JAVA_LONG, offset(L, "max_mr_size")),
                    s.get(JAVA_LONG, offset(L, "page_size_cap")),
                    i(s, L, "vendor_id"),
                    i(s, L, "vendor_part_id"),
                    i(s, L, "hw_ver"),
                    i(s, L, "max_qp"),
                    i(s, L, "max_qp_wr"),
                    i(s, L, "device_cap_flags"),
                    i(s, L, "max_sge"),
                    i(s, L, "max_sge_rd"),
                    i(s, L, "max_cq"),
                    i(s, L, "max_cqe"),
                    i(s, L, "max_mr"),
                    i(s, L, "max_pd"),
                    i(s, L, "max_qp_rd_atom"),
                    i(s, L, "max_ee_rd_atom"),
                    i(s, L, "max_res_rd_atom"),
                    i(s, L, "max_qp_init_rd_atom"),
                    i(s, L, "max_ee_init_rd_atom"),
                    AtomicCap.of(i(s, L, "atomic_cap")),
                    i(s, L, "max_ee"),
                    i(s, L, "max_rdd"),
                    i(s, L, "max_mw"),
                    i(s, L, "max_raw_ipv6_qp"),
                    i(s, L, "max_raw_ethy_qp"),
                    i(s, L, "max_mcast_grp"),
                    i(s, L, "max_mcast_qp_attach"),
                    i(s, L, "max_total_mcast_qp_attach"),
                    i(s, L, "max_ah"),
                    i(s, L, "max_fmr"),
                    i(s, L, "max_map_per_fmr"),
                    i(s, L, "max_srq"),
                    i(s, L, "max_srq_wr"),
                    i(s, L, "max_srq_sge"),
                    Short.toUnsignedInt(s.get(JAVA_SHORT, offset(L, "max_pkeys"))),
                    u8(s, L, "local_ca_ack_delay"),
                    u8(s, L, "phys_port_cnt"));
            attr = d;
            return d;
        });
    }

    /**
     * {@code ibv_query_device_ex} as verbs.h's inline function does it: through the provider's
     * {@code verbs_context.query_device_ex} when the context is a verbs_context large enough to have one, else (or
     * when it answers EOPNOTSUPP/ENOSYS) the legacy path, {@code ibv_query_device} with every extended field 0.
     */
    @Override
    public DeviceAttrEx queryDeviceEx() {
        MemorySegment fn = queryDeviceExOp();
        if (fn == null) return legacyEx();
        return underUse("ibv_query_device_ex", (a, st) -> {
            MemorySegment s = a.allocate(Layouts.DEVICE_ATTR_EX);
            int rc = (int) Ibv.Extra.VCTX_QUERY_DEVICE_EX.invokeExact(
                    fn, ctx, MemorySegment.NULL, s, Layouts.DEVICE_ATTR_EX.byteSize());
            if (rc == 95 /* EOPNOTSUPP */ || rc == 38 /* ENOSYS */) return legacyEx();
            if (rc != 0)
                throw Errors.verb(
                        "ibv_query_device_ex", rc, "check the device " + device.name() + " is still present (dmesg)");
            var L = Layouts.DEVICE_ATTR_EX;
            return new DeviceAttrEx(
                    s.get(JAVA_LONG, offset(L, "odp_caps.general_caps")),
                    i(s, L, "odp_caps.per_transport_caps.rc_odp_caps"),
                    i(s, L, "odp_caps.per_transport_caps.uc_odp_caps"),
                    i(s, L, "odp_caps.per_transport_caps.ud_odp_caps"),
                    i(s, L, "xrc_odp_caps"),
                    s.get(JAVA_LONG, offset(L, "completion_timestamp_mask")),
                    s.get(JAVA_LONG, offset(L, "hca_core_clock")),
                    s.get(JAVA_LONG, offset(L, "device_cap_flags_ex")),
                    i(s, L, "tso_caps.max_tso"),
                    i(s, L, "tso_caps.supported_qpts"),
                    i(s, L, "rss_caps.supported_qpts"),
                    i(s, L, "rss_caps.max_rwq_indirection_tables"),
                    i(s, L, "rss_caps.max_rwq_indirection_table_size"),
                    s.get(JAVA_LONG, offset(L, "rss_caps.rx_hash_fields_mask")),
                    u8(s, L, "rss_caps.rx_hash_function"),
                    i(s, L, "max_wq_type_rq"),
                    i(s, L, "packet_pacing_caps.qp_rate_limit_min"),
                    i(s, L, "packet_pacing_caps.qp_rate_limit_max"),
                    i(s, L, "packet_pacing_caps.supported_qpts"),
                    i(s, L, "raw_packet_caps"),
                    i(s, L, "tm_caps.max_rndv_hdr_size"),
                    i(s, L, "tm_caps.max_num_tags"),
                    i(s, L, "tm_caps.flags"),
                    i(s, L, "tm_caps.max_ops"),
                    i(s, L, "tm_caps.max_sge"),
                    u16(s, L, "cq_mod_caps.max_cq_count"),
                    u16(s, L, "cq_mod_caps.max_cq_period"),
                    s.get(JAVA_LONG, offset(L, "max_dm_size")),
                    u16(s, L, "pci_atomic_caps.fetch_add"),
                    u16(s, L, "pci_atomic_caps.swap"),
                    u16(s, L, "pci_atomic_caps.compare_swap"),
                    i(s, L, "phys_port_cnt_ex"));
        });
    }

    /** libibverbs' legacy path of ibv_query_device_ex: the base attributes, every extended field 0. */
    private DeviceAttrEx legacyEx() {
        queryDevice();
        return new DeviceAttrEx(
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * verbs.h's {@code verbs_get_ctx_op(ctx, query_device_ex)}: the entry point, or null when the context is not a
     * verbs_context (abi_compat), the provider's verbs_context is too small to hold it (sz), or it is not set.
     */
    private MemorySegment queryDeviceExOp() {
        if (ctx.get(JAVA_LONG, offset(Layouts.CONTEXT, "abi_compat")) != Layouts.VERBS_ABI_IS_EXTENDED) return null;
        long back = Layouts.VCTX_QUERY_DEVICE_EX_BACK;
        MemorySegment tail = MemorySegment.ofAddress(ctx.address() - back).reinterpret(back);
        long sz = tail.get(JAVA_LONG, back - Layouts.VCTX_SZ_BACK);
        if (sz < back + Layouts.CONTEXT.byteSize()) return null;
        MemorySegment fn = tail.get(ADDRESS, 0);
        return fn.address() == 0 ? null : fn;
    }

    private static int i(MemorySegment s, java.lang.foreign.GroupLayout l, String f) {
        return s.get(JAVA_INT, offset(l, f));
    }

    private static int u8(MemorySegment s, java.lang.foreign.GroupLayout l, String f) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, offset(l, f)));
    }

    private static int u16(MemorySegment s, java.lang.foreign.GroupLayout l, String f) {
        return Short.toUnsignedInt(s.get(JAVA_SHORT, offset(l, f)));
    }

    private void checkPort(String verb, int port) {
        int n = attr().physPortCnt();
        if (port < 1 || port > n) {
            throw new VerbsException(
                    verb,
                    VerbsException.EINVAL,
                    "port " + port + " does not exist on " + device.name() + ": ports are numbered 1.." + n);
        }
    }

    @Override
    public PortAttr queryPort(int port) {
        checkOpen("ibv_query_port");
        checkPort("ibv_query_port", port);
        return underUse("ibv_query_port", (a, st) -> {
            MemorySegment s = a.allocate(64, 8); // 52 bytes and room for a newer library's additions
            int rc = (int) Ibv.Fn.QUERY_PORT.invokeExact(st, ctx, (byte) port, s);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_query_port", Errors.errno(rc, st), "check port " + port + " of " + device.name());
            var L = Layouts.PORT_ATTR;
            return new PortAttr(
                    PortState.of(i(s, L, "state")),
                    mtu(i(s, L, "max_mtu")),
                    mtu(i(s, L, "active_mtu")),
                    i(s, L, "gid_tbl_len"),
                    i(s, L, "port_cap_flags"),
                    Integer.toUnsignedLong(i(s, L, "max_msg_sz")),
                    i(s, L, "bad_pkey_cntr"),
                    i(s, L, "qkey_viol_cntr"),
                    u16(s, L, "pkey_tbl_len"),
                    u16(s, L, "lid"),
                    u16(s, L, "sm_lid"),
                    u8(s, L, "lmc"),
                    u8(s, L, "max_vl_num"),
                    u8(s, L, "sm_sl"),
                    u8(s, L, "subnet_timeout"),
                    u8(s, L, "init_type_reply"),
                    u8(s, L, "active_width"),
                    u8(s, L, "active_speed"),
                    u8(s, L, "phys_state"),
                    LinkLayer.of(u8(s, L, "link_layer")),
                    u16(s, L, "port_cap_flags2"));
        });
    }

    private static Mtu mtu(int code) {
        return code >= 1 && code <= 5 ? Mtu.of(code) : Mtu.MTU_256;
    }

    @Override
    public Gid queryGid(int port, int index) {
        checkOpen("ibv_query_gid");
        checkPort("ibv_query_gid", port);
        return underUse("ibv_query_gid", (a, st) -> {
            MemorySegment g = a.allocate(16, 8);
            int rc = (int) Ibv.Fn.QUERY_GID.invokeExact(st, ctx, (byte) port, index, g);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_query_gid",
                        Errors.errno(rc, st),
                        "GID index " + index + " of port " + port
                                + " is out of range or unreadable: the table has gid_tbl_len entries (jrdma ports "
                                + device.name() + ")");
            return Gid.of(g.toArray(JAVA_BYTE));
        });
    }

    /** The valid GIDs with their types (sysfs gid_attrs, else _ibv_query_gid_ex) and netdevs. */
    @Override
    public List<GidEntry> gidTable(int port) {
        checkOpen("ibv_query_gid");
        int n = queryPort(port).gidTblLen();
        List<GidEntry> list = new ArrayList<>();
        Path attrs = Path.of(
                device.ibdevPath().isEmpty() ? "/sys/class/infiniband/" + device.name() : device.ibdevPath(),
                "ports",
                Integer.toString(port),
                "gid_attrs");
        for (int i = 0; i < n; i++) {
            Gid g;
            try {
                g = queryGid(port, i);
            } catch (VerbsException e) {
                continue; // unset entries may fail to read on RoCE
            }
            if (g.isZero()) continue;
            String type = sysfs(attrs.resolve("types").resolve(Integer.toString(i)));
            String ndev = sysfs(attrs.resolve("ndevs").resolve(Integer.toString(i)));
            if (type == null) type = gidTypeEx(port, i);
            list.add(new GidEntry(port, i, g, type, ndev));
        }
        return list;
    }

    private static String sysfs(Path p) {
        try {
            String s = Files.readString(p).trim();
            return s.isEmpty() ? null : s;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private String gidTypeEx(int port, int index) {
        if (Ibv.Fn.QUERY_GID_EX.isEmpty()) return null;
        enter("_ibv_query_gid_ex");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment e = a.allocate(Layouts.GID_ENTRY);
            int rc = (int)
                    Ibv.Fn.QUERY_GID_EX.get().invokeExact(st, ctx, port, index, e, 0, Layouts.GID_ENTRY.byteSize());
            if (rc != 0) return null;
            return switch (e.get(JAVA_INT, offset(Layouts.GID_ENTRY, "gid_type"))) {
                case 0 -> "IB";
                case 1 -> "IB/RoCE v1";
                case 2 -> "RoCE v2";
                default -> null;
            };
        } catch (Throwable t) {
            return null;
        } finally {
            exit();
        }
    }

    @Override
    public ProtectionDomain allocPd() {
        return underUse("ibv_alloc_pd", (a, st) -> {
            MemorySegment pd = (MemorySegment) Ibv.Fn.ALLOC_PD.invokeExact(st, ctx);
            if (pd.equals(MemorySegment.NULL))
                throw Errors.verb(
                        "ibv_alloc_pd", Ibv.errno(st), "the device ran out of protection domains (max_pd) or memory");
            try {
                return new NativePd(this, pd.reinterpret(Layouts.PD.byteSize()));
            } catch (RuntimeException e) { // closed meanwhile: do not leak the native PD
                int ignored = (int) Ibv.Fn.DEALLOC_PD.invokeExact(st, pd);
                throw e;
            }
        });
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        return underUse("ibv_create_comp_channel", (a, st) -> {
            MemorySegment ch = (MemorySegment) Ibv.Fn.CREATE_COMP_CHANNEL.invokeExact(st, ctx);
            if (ch.equals(MemorySegment.NULL))
                throw Errors.verb("ibv_create_comp_channel", Ibv.errno(st), "check the open file limit (ulimit -n)");
            int wakeFd = -1;
            try {
                wakeFd = Ibv.eventFd("ibv_create_comp_channel");
                return new NativeChannel(this, ch.reinterpret(Layouts.COMP_CHANNEL.byteSize()), wakeFd);
            } catch (RuntimeException e) { // no eventfd, or closed meanwhile: do not leak the native channel
                if (wakeFd >= 0) Ibv.closeFd(wakeFd);
                int ignored = (int) Ibv.Fn.DESTROY_COMP_CHANNEL.invokeExact(st, ch);
                throw e;
            }
        });
    }

    @Override
    public int queryPkey(int port, int index) {
        checkOpen("ibv_query_pkey");
        checkPort("ibv_query_pkey", port);
        return underUse("ibv_query_pkey", (a, st) -> {
            MemorySegment p = a.allocate(JAVA_SHORT);
            int rc = (int) Ibv.Extra.QUERY_PKEY.invokeExact(st, ctx, (byte) port, index, p);
            if (rc != 0)
                throw Errors.verb(
                        "ibv_query_pkey",
                        Errors.errno(rc, st),
                        "P_Key index " + index + " of port " + port
                                + " is out of range: the table has pkey_tbl_len entries (Context.queryPort)");
            return Short.toUnsignedInt(Short.reverseBytes(p.get(JAVA_SHORT, 0))); // __be16
        });
    }

    @Override
    public int numCompVectors() {
        checkOpen("num_comp_vectors");
        return ctx.get(JAVA_INT, offset(Layouts.CONTEXT, "num_comp_vectors"));
    }

    @Override
    public CompletionQueue createCq(int cqe, CompletionChannel channel, int compVector) {
        checkOpen("ibv_create_cq");
        if (cqe < 1)
            throw new VerbsException("ibv_create_cq", VerbsException.EINVAL, "cqe must be at least 1, not " + cqe);
        int vectors = numCompVectors();
        if (compVector < 0 || compVector >= vectors)
            throw new VerbsException(
                    "ibv_create_cq",
                    VerbsException.EINVAL,
                    "comp_vector " + compVector + " outside 0.." + (vectors - 1) + " (num_comp_vectors of "
                            + device.name() + ")");
        NativeChannel ch = null;
        if (channel != null) {
            if (!(channel instanceof NativeChannel nc) || nc.context != this) {
                throw new VerbsException(
                        "ibv_create_cq",
                        VerbsException.EINVAL,
                        "the completion channel belongs to another context or provider");
            }
            nc.checkOpen("ibv_create_cq");
            ch = nc;
        }
        int max = attr().maxCqe();
        if (max > 0 && cqe > max) {
            throw new VerbsException(
                    "ibv_create_cq", VerbsException.EINVAL, "cqe " + cqe + " exceeds the device's max_cqe " + max);
        }
        enter("ibv_create_cq");
        try {
            if (ch != null) ch.enter("ibv_create_cq");
        } catch (RuntimeException e) {
            exit();
            throw e;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment chPtr =
                    ch == null ? MemorySegment.NULL : ch.ch; // a local: a conditional argument would be typed Object
            MemorySegment cq =
                    (MemorySegment) Ibv.Fn.CREATE_CQ.invokeExact(st, ctx, cqe, MemorySegment.NULL, chPtr, compVector);
            if (cq.equals(MemorySegment.NULL))
                throw Errors.verb(
                        "ibv_create_cq", Ibv.errno(st), "check cqe against max_cqe and the memlock limit (ulimit -l)");
            NativeCq c;
            try {
                c = new NativeCq(this, ch, cq.reinterpret(Layouts.CQ.byteSize()));
            } catch (RuntimeException e) { // closed meanwhile: do not leak the native CQ
                int ignored = (int) Ibv.Fn.DESTROY_CQ.invokeExact(st, cq);
                throw e;
            }
            if (ch != null && ch.isClosed()) { // the channel began closing and may have missed this CQ among its CQs
                c.close();
                throw new ClosedException("ibv_create_cq", ch.what());
            }
            return c;
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        } finally {
            if (ch != null) ch.exit();
            exit();
        }
    }

    // ---------------------------------------------------------------- asynchronous events
    private static final short POLLIN = 1;
    /** Longest single poll(2): a close by another thread waits for the slice in flight, then the waiter throws. */
    private static final int SLICE_MS = 100;

    private static final long EVENT_ELEMENT = offset(Layouts.ASYNC_EVENT, "element"),
            EVENT_TYPE = offset(Layouts.ASYNC_EVENT, "event_type");

    @Override
    public AsyncEvent awaitAsyncEvent(Duration timeout) {
        checkOpen("ibv_get_async_event");
        if (!asyncFdNonBlocking) { // as ibv_get_async_event(3) suggests: a read never blocks under asyncLock
            Ibv.setNonBlocking(asyncFd);
            asyncFdNonBlocking = true;
        }
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + Math.max(0, timeout.toNanos());
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment pfd = a.allocate(Layouts.POLLFD);
            while (true) {
                enter("ibv_get_async_event"); // the fd stays open until exit(): close waits (< one slice)
                try {
                    long left = deadline == Long.MAX_VALUE ? SLICE_MS : (deadline - System.nanoTime()) / 1_000_000L;
                    if (left < 0) return null;
                    pfd.set(JAVA_INT, 0, asyncFd);
                    pfd.set(JAVA_SHORT, 4, POLLIN);
                    pfd.set(JAVA_SHORT, 6, (short) 0);
                    int rc = (int) Ibv.Fn.POLL.invokeExact(st, pfd, 1L, (int) Math.min(left, SLICE_MS));
                    if (rc < 0) {
                        int e = Ibv.errno(st);
                        if (e == 4) continue; // EINTR
                        throw Errors.verb("poll", e, "waiting on the context's async_fd " + asyncFd + " failed");
                    }
                    if (rc == 0) {
                        if (deadline != Long.MAX_VALUE && System.nanoTime() >= deadline) return null;
                        continue;
                    }
                    AsyncEvent event = readAsyncEvent(st);
                    if (event != null) return event;
                } finally {
                    exit();
                }
            }
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    /** Reads one event (null when another thread took it, or when it is about nothing jrdma knows: then acked here). */
    private AsyncEvent readAsyncEvent(MemorySegment st) throws Throwable {
        // the struct outlives this call: ibv_ack_async_event reads it when the user acknowledges
        MemorySegment raw = Arena.ofAuto().allocate(Layouts.ASYNC_EVENT);
        synchronized (asyncLock) {
            int g = (int) Ibv.Extra.GET_ASYNC_EVENT.invokeExact(st, ctx, raw);
            if (g != 0) {
                int e = Errors.errno(g, st);
                if (e == VerbsException.EAGAIN || e == 4) return null;
                throw Errors.verb("ibv_get_async_event", e, "reading the async events of " + device.name() + " failed");
            }
            AsyncEventType type = AsyncEventType.of(raw.get(JAVA_INT, EVENT_TYPE));
            long element = raw.get(ADDRESS, EVENT_ELEMENT).address();
            Runnable ack = () -> ackAsync(raw);
            if (type == null) {
                ack.run(); // a kind newer than this binding: nothing to hand out
                return null;
            }
            switch (type.scope) {
                case PORT:
                    return new AsyncEvent(type, raw.get(JAVA_INT, EVENT_ELEMENT), ack);
                case DEVICE:
                    return new AsyncEvent(type, null, ack);
                case QP: {
                    NativeQp qp = qps.get(element);
                    if (qp != null) return qp.asyncEvents.register(type, qp, ack);
                    break;
                }
                case CQ: {
                    NativeCq cq = cqs.get(element);
                    if (cq != null) return cq.asyncEvents.register(type, cq, ack);
                    break;
                }
                case SRQ: {
                    NativeSrq srq = srqs.get(element);
                    if (srq != null) return srq.asyncEvents.register(type, srq, ack);
                    break;
                }
                default:
                    break;
            }
            ack.run(); // about an object destroyed, created outside jrdma, or a WQ: its destroy waits for this ack
            return null;
        }
    }

    private static void ackAsync(MemorySegment raw) {
        try {
            Ibv.Extra.ACK_ASYNC_EVENT.invokeExact(raw);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    protected void free() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            int rc = (int) Ibv.Fn.CLOSE_DEVICE.invokeExact(st, ctx);
            if (rc != 0)
                throw Errors.verb("ibv_close_device", Errors.errno(rc, st), "objects of this context may still exist");
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return what();
    }
}
