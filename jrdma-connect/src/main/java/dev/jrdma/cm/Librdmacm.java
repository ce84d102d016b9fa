package dev.jrdma.cm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

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

/**
 * librdmacm ({@code librdmacm.so.1}) through FFM: the function handles, the struct offsets and the conversions the
 * public classes of this package share. Struct offsets are those of rdma-core's {@code <rdma/rdma_cma.h>} on 64-bit
 * Linux; {@code CmLayoutTest} compiles a C program against the header and compares every one.
 */
final class Librdmacm {
    private Librdmacm() {}

    // struct rdma_cm_id (416 bytes): route.addr.src_addr at 32, route.addr.dst_addr at 160
    static final long ID_VERBS = 0, ID_SRC_ADDR = 32, ID_DST_ADDR = 160, ID_PS = 344, ID_PORT_NUM = 348, ID_SIZE = 416;
    // struct rdma_cm_event (80 bytes); param is a union of rdma_conn_param and rdma_ud_param
    static final long EV_ID = 0, EV_LISTEN_ID = 8, EV_EVENT = 16, EV_STATUS = 20, EV_PARAM = 24, EV_SIZE = 80;
    // struct rdma_conn_param (24 bytes)
    static final long CP_PRIVATE_DATA = 0,
            CP_PRIVATE_DATA_LEN = 8,
            CP_RESPONDER_RESOURCES = 9,
            CP_INITIATOR_DEPTH = 10,
            CP_FLOW_CONTROL = 11,
            CP_RETRY_COUNT = 12,
            CP_RNR_RETRY_COUNT = 13,
            CP_SRQ = 14,
            CP_QP_NUM = 16,
            CP_SIZE = 24;
    // struct rdma_ud_param (56 bytes): private data as in rdma_conn_param, then an ibv_ah_attr, the QPN and Q_Key
    static final long UD_AH_ATTR = 16, UD_QP_NUM = 48, UD_QKEY = 52, UD_SIZE = 56;
    // struct ibv_qp_attr (144 bytes) and ibv_ah_attr (32 bytes), see shared/notes/verbs-abi.md
    static final long QA_STATE = 0,
            QA_PATH_MTU = 8,
            QA_QKEY = 16,
            QA_RQ_PSN = 20,
            QA_SQ_PSN = 24,
            QA_DEST_QPN = 28,
            QA_ACCESS = 32,
            QA_AH = 56,
            QA_PKEY_INDEX = 120,
            QA_MAX_RD_ATOMIC = 126,
            QA_MAX_DEST_RD_ATOMIC = 127,
            QA_MIN_RNR_TIMER = 128,
            QA_PORT = 129,
            QA_TIMEOUT = 130,
            QA_RETRY_CNT = 131,
            QA_RNR_RETRY = 132,
            QA_SIZE = 144;
    static final long AH_DGID = 0,
            AH_FLOW_LABEL = 16,
            AH_SGID_INDEX = 20,
            AH_HOP_LIMIT = 21,
            AH_TRAFFIC_CLASS = 22,
            AH_DLID = 24,
            AH_SL = 26,
            AH_SRC_PATH_BITS = 27,
            AH_STATIC_RATE = 28,
            AH_IS_GLOBAL = 29,
            AH_PORT = 30,
            AH_SIZE = 32;
    // enum ibv_qp_attr_mask
    static final int M_STATE = 1,
            M_ACCESS = 1 << 3,
            M_PKEY = 1 << 4,
            M_PORT = 1 << 5,
            M_QKEY = 1 << 6,
            M_AV = 1 << 7,
            M_PATH_MTU = 1 << 8,
            M_TIMEOUT = 1 << 9,
            M_RETRY_CNT = 1 << 10,
            M_RNR_RETRY = 1 << 11,
            M_RQ_PSN = 1 << 12,
            M_MAX_QP_RD_ATOMIC = 1 << 13,
            M_MIN_RNR_TIMER = 1 << 15,
            M_SQ_PSN = 1 << 16,
            M_MAX_DEST_RD_ATOMIC = 1 << 17,
            M_DEST_QPN = 1 << 20;
    // rdma_set_option: the level RDMA_OPTION_ID and its option RDMA_OPTION_ID_TOS (a uint8_t)
    static final int OPT_LEVEL_ID = 0, OPT_ID_TOS = 0;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final AddressLayout PTR =
            ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, JAVA_BYTE));

    private static final String UNAVAILABLE;
    static final MethodHandle CREATE_EVENT_CHANNEL,
            DESTROY_EVENT_CHANNEL,
            CREATE_ID,
            DESTROY_ID,
            RESOLVE_ADDR,
            RESOLVE_ROUTE,
            BIND_ADDR,
            LISTEN,
            CONNECT,
            ACCEPT,
            REJECT,
            ESTABLISH,
            DISCONNECT,
            GET_CM_EVENT,
            ACK_CM_EVENT,
            INIT_QP_ATTR,
            MIGRATE_ID,
            GET_SRC_PORT,
            GET_DEVICE_NAME,
            POLL,
            SET_OPTION;

    static {
        String why = null;
        MethodHandle[] h = new MethodHandle[21];
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
            h[i++] = fn(
                    cm,
                    "rdma_set_option",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG));
            if (!Files.exists(Path.of("/dev/infiniband/rdma_cm")))
                why = "/dev/infiniband/rdma_cm does not exist (no rdma_ucm module, or no RDMA device)";
        } catch (IllegalArgumentException | UnsatisfiedLinkError | IllegalCallerException e) {
            why = "librdmacm.so.1 cannot be loaded: " + e.getMessage() + " (install librdmacm1)";
        }
        UNAVAILABLE = why;
        CREATE_EVENT_CHANNEL = h[0];
        DESTROY_EVENT_CHANNEL = h[1];
        CREATE_ID = h[2];
        DESTROY_ID = h[3];
        RESOLVE_ADDR = h[4];
        RESOLVE_ROUTE = h[5];
        BIND_ADDR = h[6];
        LISTEN = h[7];
        CONNECT = h[8];
        ACCEPT = h[9];
        REJECT = h[10];
        ESTABLISH = h[11];
        DISCONNECT = h[12];
        GET_CM_EVENT = h[13];
        ACK_CM_EVENT = h[14];
        INIT_QP_ATTR = h[15];
        MIGRATE_ID = h[16];
        GET_SRC_PORT = h[17];
        GET_DEVICE_NAME = h[18];
        POLL = h[19];
        SET_OPTION = h[20];
    }

    private static MethodHandle fn(SymbolLookup lib, String name, FunctionDescriptor fd) {
        MemorySegment sym = lib.find(name).orElseThrow(() -> new IllegalArgumentException("no symbol " + name));
        return LINKER.downcallHandle(sym, fd, Linker.Option.captureCallState("errno"));
    }

    /** Why rdma_cm cannot be used here, or null when it can. */
    static String unavailable() {
        return UNAVAILABLE;
    }

    static void requireAvailable(String what) throws CmException {
        if (UNAVAILABLE != null) throw new CmException(what, 0, "rdma_cm is not available here: " + UNAVAILABLE);
    }

    /** Calls a function that returns int (0 / -1 + errno), or short; throws with the errno on failure. */
    static int call(String what, MethodHandle h, Object... args) throws CmException {
        requireAvailable(what);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            Object r = h.invokeWithArguments(withState(state, args));
            int rc = r instanceof Integer i ? i : r instanceof Short s ? Short.toUnsignedInt(s) : 0;
            if (rc < 0) throw new CmException(what, (int) ERRNO.get(state, 0L));
            return rc;
        } catch (CmException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what + ": " + t, t);
        }
    }

    /** Calls a function that returns a pointer; NULL is an error with errno. */
    static MemorySegment callPtr(String what, MethodHandle h, Object... args) throws CmException {
        requireAvailable(what);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment r = (MemorySegment) h.invokeWithArguments(withState(state, args));
            if (r.equals(MemorySegment.NULL)) throw new CmException(what, (int) ERRNO.get(state, 0L));
            return r;
        } catch (CmException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what + ": " + t, t);
        }
    }

    /** Calls a void function, ignoring what happens (for closing). */
    static void callQuietly(MethodHandle h, Object... args) {
        try (Arena a = Arena.ofConfined()) {
            h.invokeWithArguments(withState(a.allocate(CALL_STATE), args));
        } catch (Throwable ignored) {
            // closing anyway
        }
    }

    private static Object[] withState(MemorySegment state, Object[] args) {
        Object[] full = new Object[args.length + 1];
        full[0] = state;
        System.arraycopy(args, 0, full, 1, args.length);
        return full;
    }

    /** A struct sockaddr_in / sockaddr_in6 for an address. */
    static MemorySegment sockaddr(Arena arena, InetSocketAddress a) {
        InetAddress ip = a.getAddress();
        if (ip == null) throw new IllegalArgumentException("unresolved address " + a + ": resolve it first");
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

    /** A struct sockaddr_in / sockaddr_in6 as an address; null for AF_UNSPEC (nothing bound or resolved yet). */
    static InetSocketAddress readSockaddr(MemorySegment s) {
        MemorySegment r = s.reinterpret(28);
        int family = r.get(JAVA_SHORT, 0);
        if (family != 2 && family != 10) return null;
        int port = ((r.get(JAVA_BYTE, 2) & 0xFF) << 8) | (r.get(JAVA_BYTE, 3) & 0xFF);
        try {
            byte[] b = family == 2
                    ? r.asSlice(4, 4).toArray(JAVA_BYTE)
                    : r.asSlice(8, 16).toArray(JAVA_BYTE);
            return new InetSocketAddress(InetAddress.getByAddress(b), port);
        } catch (UnknownHostException e) {
            return InetSocketAddress.createUnresolved("?", port);
        }
    }

    /** The device name of a cm_id's verbs context ({@code ibv_get_device_name(id->verbs->device)}), or null. */
    static String deviceName(MemorySegment id) throws CmException {
        MemorySegment verbs = id.reinterpret(ID_SIZE).get(ADDRESS, ID_VERBS);
        if (verbs.equals(MemorySegment.NULL)) return null;
        MemorySegment device = verbs.reinterpret(8).get(ADDRESS, 0);
        return callPtr("ibv_get_device_name", GET_DEVICE_NAME, device).getString(0);
    }

    /** An ibv_qp_attr with the bits of its mask, as a verbs {@link QpAttr}. */
    static QpAttr toQpAttr(MemorySegment a, int m) {
        QpAttr q = new QpAttr();
        if ((m & M_STATE) != 0) q.state(QpState.of(a.get(JAVA_INT, QA_STATE)));
        if ((m & M_ACCESS) != 0) q.access(dev.jrdma.verbs.Access.fromBits(a.get(JAVA_INT, QA_ACCESS)));
        if ((m & M_PKEY) != 0) q.pkeyIndex(Short.toUnsignedInt(a.get(JAVA_SHORT, QA_PKEY_INDEX)));
        if ((m & M_PORT) != 0) q.port(u8(a, QA_PORT));
        if ((m & M_QKEY) != 0) q.qkey(a.get(JAVA_INT, QA_QKEY));
        if ((m & M_AV) != 0) q.ah(toAhAttr(a.asSlice(QA_AH, AH_SIZE)));
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

    /** A struct ibv_ah_attr as a verbs {@link AhAttr}. */
    static AhAttr toAhAttr(MemorySegment ah) {
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
        return av;
    }

    static int u8(MemorySegment s, long off) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, off));
    }
}
