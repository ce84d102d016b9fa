package dev.jrdma.connect;

import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.VerbsException;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

/**
 * Connection set-up over a TCP exchange (the software device, and any device without rdma_cm), beside
 * {@link CmConnector}: the versioned handshake of {@link Handshake} on a socket, both queue pairs to RTS, then the
 * socket stays as the connection's control channel ({@link TcpControl}: goodbyes). It hands {@link Endpoint} a
 * connected queue pair; whatever fails on the way frees all that was made for it.
 */
final class TcpConnector {
    private static final System.Logger LOG = System.getLogger(TcpConnector.class.getName());

    private TcpConnector() {}

    /**
     * Connects to {@code host:port} within {@link EndpointConfig#timeout()}; a server at its handshake limits is asked
     * again, with backoff, within that time.
     */
    static Endpoint connect(String host, int port, EndpointConfig cfg, EndpointGroup group, ExportedRange range)
            throws RdmaConnectException {
        Clock clock = Clock.of(group);
        long deadline = clock.nanoTime() + cfg.timeout().toNanos();
        // a server that runs as many handshakes as it allows (in all, or for this host) says so and to try again later:
        // a burst of connects from one host (a pool opening 100 connections) waits its turn within the timeout, as a
        // TCP backlog would make it, instead of failing; the server's limits still bound what it holds at once
        RdmaConnectException refused = null; // the server's last refusal for a handshake limit
        for (long backoffNanos = 1_000_000; ; backoffNanos = Math.min(backoffNanos * 2, 50_000_000)) {
            try {
                return connectOnce(host, port, cfg, group, range, deadline);
            } catch (RdmaConnectException e) {
                if (refused != null && e.reason() == RdmaConnectException.Reason.TIMEOUT)
                    throw refusedUntilTheTimeout(refused, e);
                long wait = backoffNanos / 2
                        + java.util.concurrent.ThreadLocalRandom.current().nextLong(backoffNanos / 2 + 1);
                if (!isHandshakeLimit(e) || clock.nanoTime() + wait - deadline >= 0) throw e;
                refused = e;
                java.util.concurrent.locks.LockSupport.parkNanos(wait);
                if (Thread.currentThread().isInterrupted()) throw e;
            }
        }
    }

    /**
     * The attempt after a refusal for a handshake limit ran into the deadline (on a loaded machine the server may not
     * get to it in time): the server did answer, and its refusal is why the client never got in, so that is the
     * reason the caller gets, with the timeout attached.
     */
    private static RdmaConnectException refusedUntilTheTimeout(
            RdmaConnectException refused, RdmaConnectException last) {
        RdmaConnectException e = new RdmaConnectException(
                RdmaConnectException.Reason.REJECTED,
                refused.getMessage() + " (asked again until the timeout; the last attempt: " + last.getMessage() + ")",
                refused);
        e.addSuppressed(last);
        return e;
    }

    /** A REJECT for a handshake limit of the server ({@link Admission}: its reasons name the setting). */
    private static boolean isHandshakeLimit(RdmaConnectException e) {
        String m = e.getMessage();
        return e.reason() == RdmaConnectException.Reason.REJECTED
                && m != null
                && (m.contains("(maxPendingHandshakes)") || m.contains("(maxPendingHandshakesPerSource)"));
    }

    private static Endpoint connectOnce(
            String host, int port, EndpointConfig cfg, EndpointGroup group, ExportedRange range, long deadline)
            throws RdmaConnectException {
        try {
            return connectTcp(host, port, cfg, group, range, deadline, true);
        } catch (Handshake.VersionRefused e) {
            // a server of handshake version 1 (an older jrdma) refuses the version that offers packet authentication:
            // again, plain (version 1); a server of another version still refuses, and says so
            LOG.log(
                    System.Logger.Level.DEBUG,
                    "connecting to " + host + ":" + port + " again without packet authentication: " + e.getMessage());
            return connectTcp(host, port, cfg, group, range, deadline, false);
        }
    }

    private static Endpoint connectTcp(
            String host,
            int port,
            EndpointConfig cfg,
            EndpointGroup group,
            ExportedRange range,
            long deadline,
            boolean mayOfferAuth)
            throws RdmaConnectException {
        Socket s = Handshake.openSocket(host, port, cfg, Clock.of(group), deadline);
        boolean ownsGroup = group == null;
        Endpoint ep = null;
        try {
            if (ownsGroup) {
                try {
                    group = EndpointGroup.forLocalAddress(s.getLocalAddress(), cfg);
                } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
                    throw new RdmaConnectException(
                            RdmaConnectException.Reason.DEVICE_ERROR,
                            "no RDMA device for local address "
                                    + s.getLocalAddress().getHostAddress() + ": " + e.getMessage(),
                            e);
                }
            }
            ep = Endpoint.createForTcp(group, ownsGroup, s);
            clientHandshake(ep, s, host + ":" + port, range, deadline, mayOfferAuth);
            return ep;
        } catch (RdmaConnectException e) {
            cleanupFailed(ep, group, ownsGroup, s);
            throw e;
        } catch (VerbsException | IllegalStateException e) {
            cleanupFailed(ep, group, ownsGroup, s);
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR, "setting up the queue pair failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            cleanupFailed(ep, group, ownsGroup, s);
            throw e;
        }
    }

    private static void cleanupFailed(Endpoint ep, EndpointGroup group, boolean ownsGroup, Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        if (ep != null) ep.releaseResources();
        if (ownsGroup && group != null) group.close();
    }

    /**
     * Server side: the handshake of an accepted TCP connection, within one deadline. The client's HELLO is read and
     * screened (filter, connection cap, room in a CQ: {@link Admission}) before anything is made for it; whatever fails
     * frees all of it.
     */
    static Endpoint accept(
            EndpointGroup group, Socket s, ExportedRange export, ServerEndpoint.ConnectionFilter filter, long deadline)
            throws RdmaConnectException {
        return JfrEvents.recordSetup(
                "server",
                false,
                String.valueOf(s.getRemoteSocketAddress()),
                () -> acceptTcp(group, s, export, filter, deadline));
    }

    private static Endpoint acceptTcp(
            EndpointGroup group, Socket s, ExportedRange export, ServerEndpoint.ConnectionFilter filter, long deadline)
            throws RdmaConnectException {
        String where = String.valueOf(s.getRemoteSocketAddress());
        EndpointConfig cfg = group.config();
        Endpoint ep = null;
        try {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = Handshake.input(s, group.clock(), deadline);
            Handshake.Hello hello = Handshake.readHello(in, out, where);
            String rejection =
                    Handshake.screen(filter, (InetSocketAddress) s.getRemoteSocketAddress(), hello.privateData());
            if (rejection != null) {
                Handshake.writeReject(out, Endpoint.VERDICT_REJECT, rejection);
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.REJECTED, "rejected the client at " + where + ": " + rejection);
            }
            // the connection cap and a CQ with room first; a client the server cannot take is told why
            ep = Admission.create(
                    group,
                    () -> Endpoint.createForTcp(group, false, s),
                    why -> Handshake.writeReject(out, Endpoint.VERDICT_REJECT, why),
                    where);
            serverHandshake(ep, s, hello, in, out, export, where);
            return ep;
        } catch (RdmaConnectException e) {
            cleanupFailed(ep, group, false, s);
            throw e;
        } catch (IOException e) {
            cleanupFailed(ep, group, false, s);
            throw Handshake.translate(e, where, cfg.timeout(), "the client");
        } catch (VerbsException | IllegalStateException e) {
            cleanupFailed(ep, group, false, s);
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR, "setting up the queue pair failed: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            cleanupFailed(ep, group, false, s);
            throw e;
        }
    }

    /** The client's half of the exchange on {@code socket}: HELLO, the server's reply, both QPs to RTS, READY. */
    private static void clientHandshake(
            Endpoint ep, Socket socket, String where, ExportedRange range, long deadline, boolean mayOfferAuth)
            throws RdmaConnectException {
        EndpointGroup group = ep.group();
        EndpointConfig cfg = group.config();
        QueuePair qp = ep.queuePair();
        RemoteBuffer export = ep.reserveExport(range);
        ConnParams local = QpSetup.localParams(group, qp, export);
        ep.setLocalParams(local);
        ep.toInit(0, EndpointGroup.PORT);
        Control control;
        PacketAuthAgreement agreement =
                mayOfferAuth && PacketAuthAgreement.possible(cfg, group) ? new PacketAuthAgreement() : null;
        byte[] offered = agreement == null ? null : agreement.publicKey;
        try {
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = Handshake.input(socket, group.clock(), deadline);
            // the HELLO in one write: a server of version 1 answers a HELLO of version 2 from its first six bytes and
            // closes;
            // a HELLO still arriving then would meet its reset (a lost write) instead of its refusal being read
            java.io.ByteArrayOutputStream hello = new java.io.ByteArrayOutputStream(Handshake.MAX_HELLO);
            Handshake.writeHello(
                    new DataOutputStream(hello),
                    local,
                    cfg.recvQueueDepth(),
                    cfg.messageSize(),
                    export == null ? 0 : export.length(),
                    cfg.privateData(),
                    offered);
            hello.writeTo(out);
            out.flush();
            Handshake.Reply reply = Handshake.readReply(
                    in, where, offered == null ? Endpoint.HANDSHAKE_MIN_VERSION : Endpoint.HANDSHAKE_VERSION);
            ep.applyPeer(
                    reply.params(),
                    reply.credits(),
                    reply.messageSize(),
                    reply.privateData(),
                    exported(reply.params(), reply.exportLength()));
            byte[] key = null;
            if (reply.authPublicKey()
                    != null) { // the server took the offer (it never turns the mode on unasked: version 1 has no room
                // for it)
                key = agreement.key(
                        reply.authPublicKey(),
                        local.qpNum(),
                        ep.remoteParams().qpNum(),
                        offered,
                        reply.authPublicKey());
            }
            QpSetup.toRtr(qp, group, local, ep.remoteParams(), key);
            ep.setPacketAuthenticated(key != null);
            QpSetup.toRts(qp, group, local);
            ep.bindExport();
            out.writeByte(Endpoint.READY);
            out.flush();
            control = new TcpControl(socket, out, cfg.timeout());
        } catch (Handshake.VersionRefused e) {
            if (offered != null) throw e; // the caller tries again without the offer
            throw new RdmaConnectException(e.reason(), e.getMessage(), e);
        } catch (RdmaConnectException e) {
            throw e;
        } catch (IOException e) {
            throw Handshake.translate(e, where, cfg.timeout(), "the server");
        }
        ep.startWith(control);
    }

    /** The buffer a TCP handshake's peer exports (its address and key travel in its parameters), or null. */
    private static RemoteBuffer exported(ConnParams params, long length) {
        return length > 0 ? new RemoteBuffer(params.addr(), params.rkey(), length) : null;
    }

    /** The server's half, after the client's HELLO was read and screened: both QPs to RTS, ACCEPT, then READY. */
    private static void serverHandshake(
            Endpoint ep,
            Socket socket,
            Handshake.Hello hello,
            DataInputStream in,
            DataOutputStream out,
            ExportedRange range,
            String where)
            throws RdmaConnectException {
        EndpointGroup group = ep.group();
        EndpointConfig cfg = group.config();
        QueuePair qp = ep.queuePair();
        Control control;
        try {
            ep.applyPeer(
                    hello.params(),
                    hello.credits(),
                    hello.messageSize(),
                    hello.privateData(),
                    exported(hello.params(), hello.exportLength()));
            RemoteBuffer export = ep.reserveExport(range);
            ConnParams local = QpSetup.localParams(group, qp, export);
            ep.setLocalParams(local);
            ep.toInit(0, EndpointGroup.PORT);
            // the client offered packet authentication and this side may: agree the key, tell the client in ACCEPT
            PacketAuthAgreement agreement = hello.authPublicKey() != null && PacketAuthAgreement.possible(cfg, group)
                    ? new PacketAuthAgreement()
                    : null;
            byte[] key = agreement == null
                    ? null
                    : agreement.key(
                            hello.authPublicKey(),
                            ep.remoteParams().qpNum(),
                            local.qpNum(),
                            hello.authPublicKey(),
                            agreement.publicKey);
            QpSetup.toRtr(qp, group, local, ep.remoteParams(), key);
            ep.setPacketAuthenticated(key != null);
            // RTS before ACCEPT: the export's window must be bound before the client can use it (nothing is sent before
            // READY)
            QpSetup.toRts(qp, group, local);
            ep.bindExport();
            Handshake.writeAccept(
                    out,
                    hello.version(),
                    local,
                    cfg.recvQueueDepth(),
                    cfg.messageSize(),
                    export == null ? 0 : export.length(),
                    cfg.privateData(),
                    agreement == null ? null : agreement.publicKey);
            int ready = in.read();
            if (ready < 0) throw new EOFException();
            if (ready != Endpoint.READY)
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.PROTOCOL_ERROR,
                        "the client at " + where + " sent 0x" + Integer.toHexString(ready) + " instead of READY");
            control = new TcpControl(socket, out, cfg.timeout());
        } catch (RdmaConnectException e) {
            throw e;
        } catch (IOException e) {
            throw Handshake.translate(e, where, cfg.timeout(), "the client");
        }
        ep.startWith(control);
    }
}
