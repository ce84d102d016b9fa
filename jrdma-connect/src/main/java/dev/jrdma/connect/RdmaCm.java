package dev.jrdma.connect;

import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * librdmacm ({@code librdmacm.so.1}) through FFM: event channels, cm_ids, address and route resolution,
 * listen/connect/accept/reject with private data, disconnect, events, and {@code rdma_init_qp_attr}.
 * jrdma drives rdma_cm without a QP on the cm_id ({@code conn_param.qp_num}): the verbs QP of the native provider
 * is walked RESET->INIT->RTR->RTS with the attributes rdma_cm computes.
 *
 * <p>Struct offsets are those of rdma-core's {@code <rdma/rdma_cma.h>} on 64-bit Linux (checked against the header).
 */
final class RdmaCm {
    private RdmaCm() {}

    static final int RDMA_PS_TCP = 0x0106;
    static final int EV_ADDR_RESOLVED = 0, EV_ADDR_ERROR = 1, EV_ROUTE_RESOLVED = 2, EV_ROUTE_ERROR = 3,
            EV_CONNECT_REQUEST = 4, EV_CONNECT_RESPONSE = 5, EV_CONNECT_ERROR = 6, EV_UNREACHABLE = 7, EV_REJECTED = 8,
            EV_ESTABLISHED = 9, EV_DISCONNECTED = 10, EV_DEVICE_REMOVAL = 11, EV_TIMEWAIT_EXIT = 15;
    static final String[] EVENT_NAMES = {"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
            "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
            "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT"};

    // struct rdma_cm_id
    static final long ID_VERBS = 0, ID_PORT_NUM = 348;
    // struct rdma_cm_event
    static final long EV_ID = 0, EV_LISTEN_ID = 8, EV_EVENT = 16, EV_STATUS = 20, EV_PARAM = 24;
    // struct rdma_conn_param (24 bytes)
    static final long CP_PRIVATE_DATA = 0, CP_PRIVATE_DATA_LEN = 8, CP_RESPONDER_RESOURCES = 9, CP_INITIATOR_DEPTH = 10,
            CP_FLOW_CONTROL = 11, CP_RETRY_COUNT = 12, CP_RNR_RETRY_COUNT = 13, CP_SRQ = 14, CP_QP_NUM = 16, CP_SIZE = 24;
    // struct ibv_qp_attr (144 bytes) and ibv_ah_attr (32 bytes), see shared/notes/verbs-abi.md
    static final long QA_STATE = 0, QA_PATH_MTU = 8, QA_RQ_PSN = 20, QA_SQ_PSN = 24, QA_DEST_QPN = 28, QA_ACCESS = 32,
            QA_AH = 56, QA_PKEY_INDEX = 120, QA_MAX_RD_ATOMIC = 126, QA_MAX_DEST_RD_ATOMIC = 127, QA_MIN_RNR_TIMER = 128,
            QA_PORT = 129, QA_TIMEOUT = 130, QA_RETRY_CNT = 131, QA_RNR_RETRY = 132, QA_SIZE = 144;
    static final long AH_DGID = 0, AH_FLOW_LABEL = 16, AH_SGID_INDEX = 20, AH_HOP_LIMIT = 21, AH_TRAFFIC_CLASS = 22,
            AH_DLID = 24, AH_SL = 26, AH_SRC_PATH_BITS = 27, AH_STATIC_RATE = 28, AH_IS_GLOBAL = 29, AH_PORT = 30;
    // enum ibv_qp_attr_mask
    static final int M_STATE = 1, M_ACCESS = 1 << 3, M_PKEY = 1 << 4, M_PORT = 1 << 5, M_AV = 1 << 7, M_PATH_MTU = 1 << 8,
            M_TIMEOUT = 1 << 9, M_RETRY_CNT = 1 << 10, M_RNR_RETRY = 1 << 11, M_RQ_PSN = 1 << 12, M_MAX_QP_RD_ATOMIC = 1 << 13,
            M_MIN_RNR_TIMER = 1 << 15, M_SQ_PSN = 1 << 16, M_MAX_DEST_RD_ATOMIC = 1 << 17, M_DEST_QPN = 1 << 20;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final AddressLayout PTR = ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, JAVA_BYTE));

    private static final String UNAVAILABLE;
    static final MethodHandle CREATE_EVENT_CHANNEL, DESTROY_EVENT_CHANNEL, CREATE_ID, DESTROY_ID, RESOLVE_ADDR, RESOLVE_ROUTE,
            BIND_ADDR, LISTEN, CONNECT, ACCEPT, REJECT, ESTABLISH, DISCONNECT, GET_CM_EVENT, ACK_CM_EVENT, INIT_QP_ATTR,
            MIGRATE_ID, GET_SRC_PORT, GET_DEVICE_NAME, POLL;

    static {
        String why = null;
        MethodHandle[] h = new MethodHandle[20];
        try {
            SymbolLookup cm = SymbolLookup.libraryLookup("librdmacm.so.1", Arena.global());
            SymbolLookup ibv = SymbolLookup.libraryLookup("libibverbs.so.1", Arena.global());
            SymbolLookup libc = LINKER.defaultLookup();
            int i = 0;
            h[i++] = fn(cm, "rdma_create_event_channel", FunctionDescriptor.of(ADDRESS));
            h[i++] = fn(cm, "rdma_destroy_event_channel", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = fn(cm, "rdma_create_id", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
            h[i++] = fn(cm, "rdma_destroy_id", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = fn(cm, "rdma_resolve_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
            h[i++] = fn(cm, "rdma_resolve_route", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            h[i++] = fn(cm, "rdma_bind_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_listen", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            h[i++] = fn(cm, "rdma_connect", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_accept", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_reject", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_BYTE));
            h[i++] = fn(cm, "rdma_establish", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = fn(cm, "rdma_disconnect", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = fn(cm, "rdma_get_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_ack_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = fn(cm, "rdma_init_qp_attr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_migrate_id", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = fn(cm, "rdma_get_src_port", FunctionDescriptor.of(JAVA_SHORT, ADDRESS));
            h[i++] = fn(ibv, "ibv_get_device_name", FunctionDescriptor.of(PTR, ADDRESS));
            h[i++] = fn(libc, "poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
            if (!Files.exists(Path.of("/dev/infiniband/rdma_cm"))) why = "/dev/infiniband/rdma_cm does not exist (no rdma_ucm module, or no RDMA device)";
        } catch (IllegalArgumentException | UnsatisfiedLinkError | IllegalCallerException e) {
            why = "librdmacm.so.1 cannot be loaded: " + e.getMessage() + " (install librdmacm1)";
        }
        UNAVAILABLE = why;
        CREATE_EVENT_CHANNEL = h[0]; DESTROY_EVENT_CHANNEL = h[1]; CREATE_ID = h[2]; DESTROY_ID = h[3]; RESOLVE_ADDR = h[4];
        RESOLVE_ROUTE = h[5]; BIND_ADDR = h[6]; LISTEN = h[7]; CONNECT = h[8]; ACCEPT = h[9]; REJECT = h[10]; ESTABLISH = h[11];
        DISCONNECT = h[12]; GET_CM_EVENT = h[13]; ACK_CM_EVENT = h[14]; INIT_QP_ATTR = h[15]; MIGRATE_ID = h[16];
        GET_SRC_PORT = h[17]; GET_DEVICE_NAME = h[18]; POLL = h[19];
    }

    private static MethodHandle fn(SymbolLookup lib, String name, FunctionDescriptor fd) {
        MemorySegment sym = lib.find(name).orElseThrow(() -> new IllegalArgumentException("no symbol " + name));
        return LINKER.downcallHandle(sym, fd, Linker.Option.captureCallState("errno"));
    }

    /** Why rdma_cm cannot be used here, or empty when it can. */
    static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /** Calls a function that returns int (0 / -1 + errno); throws with the errno on failure. */
    static int call(String what, MethodHandle h, Object... args) throws CmException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            Object[] full = new Object[args.length + 1];
            full[0] = state;
            System.arraycopy(args, 0, full, 1, args.length);
            Object r = h.invokeWithArguments(full);
            int rc = r instanceof Integer i ? i : 0;
            if (rc < 0) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new CmException(what, errno);
            }
            return rc;
        } catch (CmException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what + ": " + t, t);
        }
    }

    /** Calls a function that returns a pointer; NULL is an error with errno. */
    static MemorySegment callPtr(String what, MethodHandle h, Object... args) throws CmException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            Object[] full = new Object[args.length + 1];
            full[0] = state;
            System.arraycopy(args, 0, full, 1, args.length);
            MemorySegment r = (MemorySegment) h.invokeWithArguments(full);
            if (r.equals(MemorySegment.NULL)) throw new CmException(what, (int) ERRNO.get(state, 0L));
            return r;
        } catch (CmException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what + ": " + t, t);
        }
    }

    /** A failed rdma_cm call, with its errno. */
    static final class CmException extends Exception {
        final String call;
        final int errno;

        CmException(String call, int errno) {
            super(call + " failed (" + errnoName(errno) + ")");
            this.call = call;
            this.errno = errno;
        }
    }

    static String errnoName(int errno) {
        return switch (errno) {
            case 98 -> "EADDRINUSE, address already in use";
            case 99 -> "EADDRNOTAVAIL, the address is not on an RDMA device here";
            case 101 -> "ENETUNREACH, network unreachable: no RDMA device has a route to it";
            case 113 -> "EHOSTUNREACH, no route to host";
            case 104 -> "ECONNRESET, connection reset";
            default -> dev.jrdma.verbs.VerbsException.errnoName(errno);
        };
    }

    /** A struct sockaddr_in / sockaddr_in6 for an address. */
    static MemorySegment sockaddr(Arena arena, InetSocketAddress a) {
        InetAddress ip = a.getAddress();
        if (ip instanceof Inet4Address) {
            MemorySegment s = arena.allocate(16, 4);
            s.set(JAVA_SHORT, 0, (short) 2); // AF_INET
            s.set(JAVA_BYTE, 2, (byte) (a.getPort() >> 8));
            s.set(JAVA_BYTE, 3, (byte) a.getPort());
            MemorySegment.copy(ip.getAddress(), 0, s, JAVA_BYTE, 4, 4);
            return s;
        }
        MemorySegment s = arena.allocate(28, 4);
        s.set(JAVA_SHORT, 0, (short) 10); // AF_INET6
        s.set(JAVA_BYTE, 2, (byte) (a.getPort() >> 8));
        s.set(JAVA_BYTE, 3, (byte) a.getPort());
        MemorySegment.copy(ip.getAddress(), 0, s, JAVA_BYTE, 8, 16);
        if (ip instanceof Inet6Address v6) s.set(JAVA_INT, 24, v6.getScopeId());
        return s;
    }

    static InetSocketAddress readSockaddr(MemorySegment s) {
        MemorySegment r = s.reinterpret(28);
        int family = r.get(JAVA_SHORT, 0);
        int port = ((r.get(JAVA_BYTE, 2) & 0xFF) << 8) | (r.get(JAVA_BYTE, 3) & 0xFF);
        try {
            byte[] b = family == 2 ? r.asSlice(4, 4).toArray(JAVA_BYTE) : r.asSlice(8, 16).toArray(JAVA_BYTE);
            return new InetSocketAddress(InetAddress.getByAddress(b), port);
        } catch (UnknownHostException e) {
            return InetSocketAddress.createUnresolved("?", port);
        }
    }

    /** The device name of a cm_id's verbs context ({@code ibv_get_device_name(id->verbs->device)}), or null. */
    static String deviceName(MemorySegment id) throws CmException {
        MemorySegment idS = id.reinterpret(416);
        MemorySegment verbs = idS.get(ADDRESS, ID_VERBS);
        if (verbs.equals(MemorySegment.NULL)) return null;
        MemorySegment device = verbs.reinterpret(8).get(ADDRESS, 0);
        MemorySegment name = callPtr("ibv_get_device_name", GET_DEVICE_NAME, device);
        return name.getString(0);
    }

    static int portNum(MemorySegment id) {
        return Byte.toUnsignedInt(id.reinterpret(416).get(JAVA_BYTE, ID_PORT_NUM));
    }

    /** {@code rdma_init_qp_attr} for the given target state, as a verbs {@link QpAttr}. */
    static QpAttr initQpAttr(MemorySegment id, QpState target) throws CmException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(QA_SIZE, 8);
            MemorySegment mask = a.allocate(JAVA_INT);
            attr.set(JAVA_INT, QA_STATE, target.code());
            call("rdma_init_qp_attr(" + target + ")", INIT_QP_ATTR, id, attr, mask);
            return toQpAttr(attr, mask.get(JAVA_INT, 0));
        }
    }

    static QpAttr toQpAttr(MemorySegment a, int m) {
        QpAttr q = new QpAttr();
        if ((m & M_STATE) != 0) q.state(QpState.of(a.get(JAVA_INT, QA_STATE)));
        if ((m & M_ACCESS) != 0) q.access(dev.jrdma.verbs.Access.fromBits(a.get(JAVA_INT, QA_ACCESS)));
        if ((m & M_PKEY) != 0) q.pkeyIndex(Short.toUnsignedInt(a.get(JAVA_SHORT, QA_PKEY_INDEX)));
        if ((m & M_PORT) != 0) q.port(u8(a, QA_PORT));
        if ((m & M_AV) != 0) {
            MemorySegment ah = a.asSlice(QA_AH, 32);
            AhAttr av = new AhAttr();
            av.dlid = Short.toUnsignedInt(ah.get(JAVA_SHORT, AH_DLID));
            av.sl = u8(ah, AH_SL);
            av.srcPathBits = u8(ah, AH_SRC_PATH_BITS);
            av.staticRate = u8(ah, AH_STATIC_RATE);
            av.portNum = u8(ah, AH_PORT);
            if (u8(ah, AH_IS_GLOBAL) != 0) {
                av.global(Gid.of(ah.asSlice(AH_DGID, 16).toArray(JAVA_BYTE)), u8(ah, AH_SGID_INDEX));
                av.hopLimit(u8(ah, AH_HOP_LIMIT));
                av.flowLabel = ah.get(JAVA_INT, AH_FLOW_LABEL);
                av.trafficClass = u8(ah, AH_TRAFFIC_CLASS);
            }
            q.ah(av);
        }
        if ((m & M_PATH_MTU) != 0) q.pathMtu(Mtu.of(a.get(JAVA_INT, QA_PATH_MTU)));
        if ((m & M_TIMEOUT) != 0) q.timeout(u8(a, QA_TIMEOUT));
        if ((m & M_RETRY_CNT) != 0) q.retryCnt(u8(a, QA_RETRY_CNT));
        if ((m & M_RNR_RETRY) != 0) q.rnrRetry(u8(a, QA_RNR_RETRY));
        if ((m & M_RQ_PSN) != 0) q.rqPsn(a.get(JAVA_INT, QA_RQ_PSN));
        if ((m & M_SQ_PSN) != 0) q.sqPsn(a.get(JAVA_INT, QA_SQ_PSN));
        if ((m & M_MAX_QP_RD_ATOMIC) != 0) q.maxRdAtomic(u8(a, QA_MAX_RD_ATOMIC));
        if ((m & M_MAX_DEST_RD_ATOMIC) != 0) q.maxDestRdAtomic(u8(a, QA_MAX_DEST_RD_ATOMIC));
        if ((m & M_MIN_RNR_TIMER) != 0) q.minRnrTimer(u8(a, QA_MIN_RNR_TIMER));
        if ((m & M_DEST_QPN) != 0) q.destQpNum(a.get(JAVA_INT, QA_DEST_QPN));
        return q;
    }

    private static int u8(MemorySegment s, long off) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, off));
    }

    /** One event, copied out of librdmacm's struct before it is acknowledged. */
    record Event(int type, int status, MemorySegment id, MemorySegment listenId, byte[] privateData,
                 int responderResources, int initiatorDepth, int qpNum) {
        String name() {
            return type >= 0 && type < EVENT_NAMES.length ? "RDMA_CM_EVENT_" + EVENT_NAMES[type] : "event " + type;
        }
    }

    /** An event channel; {@link #next} waits for an event with poll(2), so it never blocks past its deadline. */
    static final class Channel implements AutoCloseable {
        final MemorySegment ptr;
        private final int fd;
        private volatile boolean closed;

        Channel() throws CmException {
            ptr = callPtr("rdma_create_event_channel", CREATE_EVENT_CHANNEL);
            fd = ptr.reinterpret(4).get(JAVA_INT, 0);
        }

        /** The next event, or null when {@code timeoutMs} passed first. Acknowledges it. */
        synchronized Event next(long timeoutMs) throws CmException {
            if (closed) return null;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment pfd = a.allocate(8, 4);
                pfd.set(JAVA_INT, 0, fd);
                pfd.set(JAVA_SHORT, 4, (short) 1); // POLLIN
                int n = call("poll", POLL, pfd, 1L, (int) Math.max(0, Math.min(Integer.MAX_VALUE, timeoutMs)));
                if (n == 0) return null;
                MemorySegment out = a.allocate(ADDRESS);
                call("rdma_get_cm_event", GET_CM_EVENT, ptr, out);
                MemorySegment ev = out.get(ADDRESS, 0).reinterpret(80);
                try {
                    MemorySegment pd = ev.get(ADDRESS, EV_PARAM + CP_PRIVATE_DATA);
                    int len = Byte.toUnsignedInt(ev.get(JAVA_BYTE, EV_PARAM + CP_PRIVATE_DATA_LEN));
                    byte[] priv = pd.equals(MemorySegment.NULL) || len == 0 ? new byte[0] : pd.reinterpret(len).toArray(JAVA_BYTE);
                    int type = ev.get(JAVA_INT, EV_EVENT);
                    return new Event(type, ev.get(JAVA_INT, EV_STATUS), ev.get(ADDRESS, EV_ID), ev.get(ADDRESS, EV_LISTEN_ID), priv,
                            u8(ev, EV_PARAM + CP_RESPONDER_RESOURCES), u8(ev, EV_PARAM + CP_INITIATOR_DEPTH),
                            ev.get(JAVA_INT, EV_PARAM + CP_QP_NUM));
                } finally {
                    call("rdma_ack_cm_event", ACK_CM_EVENT, ev);
                }
            }
        }

        @Override
        public void close() {
            if (closed) return;
            synchronized (this) {
                closed = true;
                try {
                    try (Arena a = Arena.ofConfined()) {
                        DESTROY_EVENT_CHANNEL.invokeWithArguments(a.allocate(CALL_STATE), ptr);
                    }
                } catch (Throwable ignored) {
                    // closing anyway
                }
            }
        }
    }

    /** A struct rdma_conn_param. */
    static MemorySegment connParam(Arena a, byte[] priv, int resources, int depth, int retry, int rnrRetry, int qpNum) {
        MemorySegment p = a.allocate(CP_SIZE, 8);
        if (priv.length > 0) {
            MemorySegment d = a.allocate(priv.length);
            MemorySegment.copy(priv, 0, d, JAVA_BYTE, 0, priv.length);
            p.set(ADDRESS, CP_PRIVATE_DATA, d);
        }
        p.set(JAVA_BYTE, CP_PRIVATE_DATA_LEN, (byte) priv.length);
        p.set(JAVA_BYTE, CP_RESPONDER_RESOURCES, (byte) resources);
        p.set(JAVA_BYTE, CP_INITIATOR_DEPTH, (byte) depth);
        p.set(JAVA_BYTE, CP_FLOW_CONTROL, (byte) 1);
        p.set(JAVA_BYTE, CP_RETRY_COUNT, (byte) retry);
        p.set(JAVA_BYTE, CP_RNR_RETRY_COUNT, (byte) rnrRetry);
        p.set(JAVA_INT, CP_QP_NUM, qpNum);
        return p;
    }
}
