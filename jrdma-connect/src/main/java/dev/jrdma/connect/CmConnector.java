package dev.jrdma.connect;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import dev.jrdma.cm.ConnParam;
import dev.jrdma.cm.PortSpace;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.UnaryOperator;

/**
 * Connection set-up through rdma_cm for native devices: the same endpoints, the same failure reasons as the TCP
 * exchange. The endpoint settings travel as private data (31 bytes, then up to 20 bytes of the user's):
 * {@code 'J' 'R' version kind, u16 credits, u32 messageSize, u64 exportAddr, u32 exportRkey, u64 exportLength, u8 userLength}.
 * A reject carries {@code 'J' 'R' version kind(1 reject, 2 version) u8 n, reason[n]}.
 */
final class CmConnector {
    private CmConnector() {}

    static final int HEADER = 31, MAX_USER = 20, VERSION = 1, KIND_HELLO = 0, KIND_REJECT = 1, KIND_VERSION = 2;
    /** IB CM reject reasons. */
    static final int REJ_INVALID_SERVICE_ID = 8, REJ_CONSUMER_DEFINED = 28;

    /** Whether a connection with this config goes through rdma_cm. */
    static boolean useCm(EndpointConfig cfg) throws RdmaConnectException {
        switch (cfg.connectionManager()) {
            case TCP:
                return false;
            case RDMA_CM:
                if (CmEventChannel.unavailableReason().isPresent()) {
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.DEVICE_ERROR,
                            "rdma_cm is not available: "
                                    + CmEventChannel.unavailableReason().get());
                }
                return true;
            default:
                try {
                    Device d = cfg.device() != null ? Verbs.device(cfg.device()) : Verbs.defaultDevice();
                    return d.provider().equals("native")
                            && CmEventChannel.unavailableReason().isEmpty();
                } catch (RuntimeException e) {
                    return false;
                }
        }
    }

    static byte[] hello(EndpointConfig cfg, RemoteBuffer export) throws RdmaConnectException {
        // export: this connection's own window (or region) over the exported range, or null
        byte[] user = cfg.privateData();
        if (user.length > MAX_USER) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "rdma_cm carries at most " + MAX_USER + " bytes of private data, not " + user.length
                            + " (the TCP exchange takes up to " + EndpointConfig.MAX_PRIVATE_DATA + ")");
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER + user.length);
        b.put((byte) 'J').put((byte) 'R').put((byte) VERSION).put((byte) KIND_HELLO);
        b.putShort((short) cfg.recvQueueDepth()).putInt(cfg.messageSize());
        b.putLong(export == null ? 0 : export.address())
                .putInt(export == null ? 0 : export.rkey())
                .putLong(export == null ? 0 : export.length());
        b.put((byte) user.length).put(user);
        return b.array();
    }

    static byte[] reject(int kind, String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(r.length, 130);
        ByteBuffer b = ByteBuffer.allocate(5 + n);
        b.put((byte) 'J')
                .put((byte) 'R')
                .put((byte) VERSION)
                .put((byte) kind)
                .put((byte) n)
                .put(r, 0, n);
        return b.array();
    }

    record Hello(int credits, int messageSize, RemoteBuffer export, byte[] user) {}

    static Hello parseHello(byte[] p, String who) throws RdmaConnectException {
        if (p.length < 4 || p[0] != 'J' || p[1] != 'R') {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the " + who + " is not a jrdma endpoint (its rdma_cm private data does not start with \"JR\")");
        }
        if (p[2] != VERSION) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.VERSION_MISMATCH,
                    "version mismatch: the " + who + " speaks rdma_cm handshake version " + p[2]
                            + ", this side version " + VERSION + " (run the same jrdma version on both sides)");
        }
        if (p.length < HEADER)
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the " + who + " sent " + p.length + " bytes of private data, fewer than " + HEADER);
        ByteBuffer b = ByteBuffer.wrap(p);
        b.position(4);
        int credits = Short.toUnsignedInt(b.getShort());
        int size = b.getInt();
        long addr = b.getLong();
        int rkey = b.getInt();
        long len = b.getLong();
        int n = Byte.toUnsignedInt(b.get());
        if (credits < 1
                || size < 1
                || size > EndpointConfig.MAX_MESSAGE_SIZE
                || len < 0
                || n > MAX_USER
                || HEADER + n > p.length) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the " + who + " sent invalid endpoint settings in its private data (credits " + credits
                            + ", message size " + Integer.toUnsignedString(size) + " of 1.."
                            + EndpointConfig.MAX_MESSAGE_SIZE + ", export length " + Long.toUnsignedString(len) + ")");
        }
        return new Hello(
                credits,
                size,
                len > 0 ? new RemoteBuffer(addr, rkey, len) : null,
                Arrays.copyOfRange(p, HEADER, HEADER + n));
    }

    private static CmEvent await(
            CmEventChannel ch, Clock clock, long deadline, String what, String where, java.time.Duration timeout)
            throws RdmaConnectException, CmException {
        long left = (deadline - clock.nanoTime()) / 1_000_000;
        CmEvent e = left > 0 ? ch.next(left) : null;
        if (e == null) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.TIMEOUT,
                    "timed out after " + timeout.toMillis() + " ms waiting for " + what + " from " + where);
        }
        return e;
    }

    private static RdmaConnectException translate(CmException e, String where) {
        RdmaConnectException.Reason r = switch (e.errno()) {
            case 99, 98, 19, 101, 113, 22 ->
                RdmaConnectException.Reason
                        .ADDRESS_ERROR; // EADDRNOTAVAIL, EADDRINUSE, ENODEV, ENETUNREACH, EHOSTUNREACH, EINVAL
            case 110 -> RdmaConnectException.Reason.TIMEOUT;
            case 111 -> RdmaConnectException.Reason.NOTHING_LISTENING;
            default -> RdmaConnectException.Reason.DEVICE_ERROR;
        };
        return new RdmaConnectException(r, e.getMessage() + " for " + where, e);
    }

    private static String status(int s) {
        return s < 0 ? CmException.errnoName(-s) : "status " + s;
    }

    // ---- client ---------------------------------------------------------------------------------------------

    static Endpoint connect(String host, int port, EndpointConfig cfg, EndpointGroup group, ExportedRange range)
            throws RdmaConnectException {
        Clock clock = Clock.of(group);
        long deadline = clock.nanoTime() + cfg.timeout().toNanos();
        String where = host + ":" + port;
        InetAddress addr;
        try {
            addr = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR,
                    "cannot resolve host '" + host + "': check the name (or use an IP address)",
                    e);
        }
        hello(cfg, null); // checks the private data before anything is set up
        boolean ownsGroup = group == null;
        CmEventChannel ch = null;
        CmId id = null;
        Endpoint ep = null;
        try {
            ch = CmEventChannel.create();
            id = CmId.create(ch, PortSpace.TCP);
            id.resolveAddress(
                    cfg.localAddress() == null ? null : new InetSocketAddress(cfg.localAddress(), 0),
                    new InetSocketAddress(addr, port),
                    cfg.timeout());
            CmEvent e = await(ch, clock, deadline, "address resolution", where, cfg.timeout());
            if (e.type() != CmEventType.ADDR_RESOLVED) {
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.ADDRESS_ERROR,
                        "address resolution of " + where + " failed ("
                                + e.type().cName() + ", " + status(e.status())
                                + "): no RDMA device here reaches that address; check the address, the routes and 'jrdma devices'");
            }
            id.resolveRoute(cfg.timeout());
            e = await(ch, clock, deadline, "route resolution", where, cfg.timeout());
            if (e.type() != CmEventType.ROUTE_RESOLVED) {
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.ADDRESS_ERROR,
                        "route resolution to " + where + " failed (" + e.type().cName() + ", " + status(e.status())
                                + ")");
            }
            String devName = id.deviceName();
            try {
                if (ownsGroup) group = EndpointGroup.open(Verbs.device(devName), cfg);
            } catch (RuntimeException ex) {
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.DEVICE_ERROR,
                        "cannot open " + devName + ", the device that reaches " + where + ": " + ex.getMessage(),
                        ex);
            }
            if (!group.device().name().equals(devName)) {
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.DEVICE_ERROR,
                        where + " is reached through " + devName + ", not the group's device "
                                + group.device().name());
            }
            ep = Endpoint.createForCm(group, ownsGroup);
            RemoteBuffer export = ep.cmReserveExport(range);
            ep.cmToInit(id.initQpAttr(QpState.INIT));
            id.connect(connParam(hello(cfg, export), ep));
            e = await(ch, clock, deadline, "the server's answer", where, cfg.timeout());
            switch (e.type()) {
                case CONNECT_RESPONSE -> {}
                case REJECTED -> throw rejected(e, where);
                case UNREACHABLE ->
                    throw new RdmaConnectException(
                            e.status() == -110
                                    ? RdmaConnectException.Reason.TIMEOUT
                                    : RdmaConnectException.Reason.ADDRESS_ERROR,
                            "the server at " + where + " is unreachable (" + status(e.status())
                                    + "): no answer to the connection request");
                case CONNECT_ERROR ->
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.PEER_GONE,
                            "connecting to " + where + " failed (" + status(e.status())
                                    + "): the server went away during the handshake");
                default ->
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.PROTOCOL_ERROR,
                            "unexpected " + e.type().cName() + " while connecting to " + where);
            }
            Hello h = parseHello(e.privateData(), "server at " + where);
            // INIT was the endpoint's own (its rights), so only RTR and RTS take rdma_cm's attributes
            CmId.AppliedAttrs path = id.moveInitQpToRts(ep.qp, UnaryOperator.identity());
            QpAttr rtr = path.rtr(), rts = path.rts();
            ep.cmBindExport(); // before the server learns we are up
            id.establish();
            InetSocketAddress remote = id.remoteAddress();
            ep.cmPeer(
                    params(group, ep, export, rts, rtr, false),
                    params(group, ep, h.export(), rts, rtr, true),
                    h.credits(),
                    h.messageSize(),
                    h.user(),
                    h.export());
            ep.startWith(new CmControl(id, remote));
            return ep;
        } catch (RdmaConnectException ex) {
            abandon(ep, group, ownsGroup, id, ch);
            throw ex;
        } catch (CmException ex) {
            abandon(ep, group, ownsGroup, id, ch);
            throw translate(ex, where);
        } catch (VerbsException | IllegalStateException ex) {
            abandon(ep, group, ownsGroup, id, ch);
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR,
                    "setting up the queue pair failed: " + ex.getMessage(),
                    ex);
        }
    }

    /** The rdma_cm parameters of an endpoint's QP: its read/atomic depth both ways, 7 retries, the RNR retries. */
    private static ConnParam connParam(byte[] hello, Endpoint ep) {
        int rd = ep.rdAtomic();
        int rnr = QpSetup.rnrRetry();
        return new ConnParam()
                .privateData(hello)
                .responderResources(rd)
                .initiatorDepth(rd)
                .retryCount(QpSetup.RETRY_COUNT)
                .rnrRetryCount(rnr)
                .qpNum(ep.qpNum());
    }

    private static RdmaConnectException rejected(CmEvent e, String where) {
        byte[] p = e.privateData();
        if (p.length >= 5 && p[0] == 'J' && p[1] == 'R') {
            int n = Math.min(Byte.toUnsignedInt(p[4]), p.length - 5);
            String reason = new String(p, 5, n, StandardCharsets.UTF_8);
            return new RdmaConnectException(
                    p[3] == KIND_VERSION
                            ? RdmaConnectException.Reason.VERSION_MISMATCH
                            : RdmaConnectException.Reason.REJECTED,
                    "the server at " + where + " rejected the connection: " + reason);
        }
        if (e.status() == REJ_INVALID_SERVICE_ID) {
            return new RdmaConnectException(
                    RdmaConnectException.Reason.NOTHING_LISTENING,
                    "nothing is listening at " + where
                            + " (rdma_cm: invalid service ID): start the server first, or check the host and port");
        }
        return new RdmaConnectException(
                RdmaConnectException.Reason.REJECTED,
                "the server at " + where + " rejected the connection (reason " + e.status() + ")");
    }

    private static ConnParams params(
            EndpointGroup g, Endpoint ep, RemoteBuffer export, QpAttr rts, QpAttr rtr, boolean remoteSide) {
        long addr = export == null ? 0 : export.address();
        int rkey = export == null ? 0 : export.rkey();
        if (remoteSide) {
            Gid gid = rtr.ah() != null && rtr.ah().isGlobal ? rtr.ah().dgid : Gid.ZERO;
            return new ConnParams(
                    addr, rkey, rtr.destQpNum(), rtr.ah() == null ? 0 : rtr.ah().dlid, gid, rtr.rqPsn(), rtr.pathMtu());
        }
        Gid gid = Gid.ZERO;
        try {
            if (rtr.ah() != null) gid = g.context().queryGid(rtr.ah().portNum, rtr.ah().sgidIndex);
        } catch (RuntimeException ignored) {
            // informational only
        }
        return new ConnParams(addr, rkey, ep.qpNum(), 0, gid, rts.sqPsn(), rtr.pathMtu());
    }

    private static void abandon(Endpoint ep, EndpointGroup group, boolean ownsGroup, CmId id, CmEventChannel ch) {
        if (ep != null) {
            ep.cmAbandon();
        } else if (ownsGroup && group != null) {
            group.close();
        }
        if (id != null) id.close();
        if (ch != null) ch.close();
    }

    // ---- server ---------------------------------------------------------------------------------------------

    /** A listening cm_id. */
    static final class Listener implements AutoCloseable {
        final CmEventChannel ch;
        final CmId id;
        final InetSocketAddress local;
        final String deviceName;

        private Listener(CmEventChannel ch, CmId id, InetSocketAddress local, String deviceName) {
            this.ch = ch;
            this.id = id;
            this.local = local;
            this.deviceName = deviceName;
        }

        static Listener bind(InetSocketAddress address) throws RdmaConnectException {
            CmEventChannel ch = null;
            CmId id = null;
            try {
                ch = CmEventChannel.create();
                id = CmId.create(ch, PortSpace.TCP);
                id.bind(address);
                id.listen(128);
                int port = address.getPort() != 0
                        ? address.getPort()
                        : id.localAddress().getPort();
                return new Listener(ch, id, new InetSocketAddress(address.getAddress(), port), id.deviceName());
            } catch (CmException e) {
                if (id != null) id.close();
                if (ch != null) ch.close();
                throw translate(e, "listening on " + address);
            }
        }

        /**
         * The next connection request within {@code timeoutMs}, or null (none, or events of ids whose handshake
         * failed, which are dropped). One thread reads the listener's events; each request's handshake then runs
         * on a thread of its own ({@link ServerEndpoint}).
         */
        CmEvent nextRequest(long timeoutMs) throws RdmaConnectException {
            CmEvent e;
            try {
                e = ch.next(timeoutMs);
            } catch (CmException ex) {
                throw translate(ex, "accept on " + local);
            }
            return e != null && e.type() == CmEventType.CONNECT_REQUEST ? e : null;
        }

        /** Rejects a request before its handshake (a cap is reached): the client reads {@code why} as REJECTED. */
        void refuse(CmEvent req, String why) {
            rejectQuietly(req.id(), reject(KIND_REJECT, why));
            req.id().close();
        }

        /**
         * Completes the handshake of connection request {@code req} within {@code deadline}: screens the client,
         * sets up its endpoint (RTS), accepts, and waits for the client's confirmation on a channel of its own.
         */
        Endpoint handshake(
                EndpointGroup group,
                CmEvent req,
                ExportedRange range,
                ServerEndpoint.ConnectionFilter filter,
                long deadline)
                throws RdmaConnectException {
            return JfrEvents.recordSetup(
                    "server",
                    true,
                    String.valueOf(req.id().remoteAddress()),
                    () -> setUp(group, req, range, filter, deadline));
        }

        private Endpoint setUp(
                EndpointGroup group,
                CmEvent req,
                ExportedRange range,
                ServerEndpoint.ConnectionFilter filter,
                long deadline)
                throws RdmaConnectException {
            EndpointConfig cfg = group.config();
            CmId id = req.id();
            InetSocketAddress remote = id.remoteAddress();
            String where = String.valueOf(remote);
            CmEventChannel connCh = null;
            Endpoint ep = null;
            try {
                Hello h;
                try {
                    h = parseHello(req.privateData(), "client at " + where);
                } catch (RdmaConnectException ex) {
                    byte[] r = reject(
                            ex.reason() == RdmaConnectException.Reason.VERSION_MISMATCH ? KIND_VERSION : KIND_REJECT,
                            ex.getMessage());
                    rejectQuietly(id, r);
                    throw ex;
                }
                String why = Handshake.screen(filter, remote, h.user());
                if (why != null) {
                    rejectQuietly(id, reject(KIND_REJECT, why));
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.REJECTED, "rejected the client at " + where + ": " + why);
                }
                String devName = id.deviceName();
                if (!group.device().name().equals(devName)) {
                    rejectQuietly(
                            id,
                            reject(
                                    KIND_REJECT,
                                    "this server serves device "
                                            + group.device().name() + ", not " + devName));
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.DEVICE_ERROR,
                            "the client at " + where + " came in through " + devName);
                }
                connCh = CmEventChannel.create();
                id.migrate(connCh);
                // the connection cap and a CQ with room first; a client the server cannot take is told why
                ep = Admission.create(
                        group,
                        () -> Endpoint.createForCm(group, false),
                        r -> rejectQuietly(id, reject(KIND_REJECT, r)),
                        where);
                RemoteBuffer export = ep.cmReserveExport(range);
                ep.cmToInit(id.initQpAttr(QpState.INIT));
                // RTS before the accept, as librdmacm's own rdma_accept does: the export's window is bound before the
                // client can use it
                CmId.AppliedAttrs path = id.moveInitQpToRts(ep.qp, UnaryOperator.identity());
                QpAttr rtr = path.rtr(), rts = path.rts();
                ep.cmBindExport();
                id.accept(connParam(hello(cfg, export), ep));
                CmEvent e = await(connCh, group.clock(), deadline, "the client's confirmation", where, cfg.timeout());
                if (e.type() != CmEventType.ESTABLISHED) {
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.PEER_GONE,
                            "the client at " + where + " did not complete the handshake ("
                                    + e.type().cName() + ", " + status(e.status()) + ")");
                }
                ep.cmPeer(
                        params(group, ep, export, rts, rtr, false),
                        params(group, ep, h.export(), rts, rtr, true),
                        h.credits(),
                        h.messageSize(),
                        h.user(),
                        h.export());
                ep.startWith(new CmControl(id, remote));
                return ep;
            } catch (RdmaConnectException ex) {
                abandon(ep, null, false, id, connCh);
                throw ex;
            } catch (CmException ex) {
                abandon(ep, null, false, id, connCh);
                throw translate(ex, where);
            } catch (VerbsException | IllegalStateException ex) {
                abandon(ep, null, false, id, connCh);
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.DEVICE_ERROR,
                        "setting up the queue pair failed: " + ex.getMessage(),
                        ex);
            }
        }

        private static void rejectQuietly(CmId id, byte[] priv) {
            try {
                id.reject(priv);
            } catch (CmException ignored) {
                // the client will time out
            }
        }

        @Override
        public void close() {
            id.close();
            ch.close();
        }
    }
}
