package dev.jrdma.connect;

import dev.jrdma.verbs.VerbsException;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;

/**
 * A listening endpoint: {@link #bind} a TCP address, then {@link #accept} connections, each an {@link Endpoint}
 * on this server's {@link EndpointGroup} (one device, one buffer pool, one completion thread). A client whose
 * handshake fails does not end accept: it is logged and accept waits for the next one until its timeout.
 *
 * <p>From the first {@code accept} on (TCP exchange or rdma_cm), a thread takes connections as they come and runs
 * each handshake on a thread of its own, within one deadline ({@link EndpointConfig#timeout()}): a slow or
 * stalling client delays nobody else. At most {@link EndpointConfig#maxPendingHandshakes()} run at once, at most
 * {@link EndpointConfig#maxPendingHandshakesPerSource()} for one source address, and the server holds at most
 * {@link EndpointConfig#maxConnections()} endpoints, checked before anything is made for a client; clients beyond
 * any of them, or that the device has no room for, are rejected with a reason that says which. Every refusal, every
 * handshake cut off at its deadline and every peer disconnected for junk on its control channel is counted
 * ({@link #counters()}). Endpoints that finished their handshake wait for {@code accept} in arrival order.
 */
public final class ServerEndpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ServerEndpoint.class.getName());

    /** Decides whether to accept a client from its address and private data: null accepts, a reason rejects. */
    @FunctionalInterface
    public interface ConnectionFilter {
        /**
         * Decides about one client, on its handshake's thread, before anything is made for it.
         *
         * @param client      the client's address (its TCP or rdma_cm address)
         * @param privateData what the client sent with connect ({@link EndpointConfig#privateData()}), may be empty
         * @return null to accept; else the reason the client's {@link RdmaConnectException.Reason#REJECTED} carries
         */
        String check(InetSocketAddress client, byte[] privateData);
    }

    private final ServerSocket listener; // the TCP exchange, or
    private final CmConnector.Listener cm; // rdma_cm
    private final EndpointGroup group;
    private final EndpointConfig cfg;
    private volatile ExportedRange export;
    private volatile ConnectionFilter filter;
    private volatile RdmaConnectException lastFailure;
    private final java.util.concurrent.LinkedBlockingQueue<Endpoint> ready =
            new java.util.concurrent.LinkedBlockingQueue<>();
    private final Admission admission;
    private Thread acceptor;
    private volatile boolean closed;

    private ServerEndpoint(ServerSocket listener, CmConnector.Listener cm, EndpointGroup group, EndpointConfig cfg) {
        this.listener = listener;
        this.cm = cm;
        this.group = group;
        this.cfg = cfg;
        this.admission = new Admission(cfg, group.clock());
        group.limitEndpoints(cfg.maxConnections());
    }

    /**
     * Binds with the default settings ({@link EndpointConfig#defaults()}).
     *
     * @param address the local address and port to listen on (port 0: any free port)
     * @return the listening server
     * @throws RdmaConnectException as {@link #bind(InetSocketAddress, EndpointConfig)}
     */
    public static ServerEndpoint bind(InetSocketAddress address) throws RdmaConnectException {
        return bind(address, EndpointConfig.defaults());
    }

    /**
     * Listens on {@code address} (port 0: any free port) and opens the device that serves it: the configured one,
     * the software device of that address, or the default device for a wildcard address. With rdma_cm
     * ({@link EndpointConfig#connectionManager()}) it binds an rdma_cm id instead and uses the device it resolves to.
     *
     * @param address the local address and port to listen on (port 0: any free port, see {@link #port()})
     * @param cfg     the settings of the server and of every endpoint it accepts
     * @return the listening server
     * @throws RdmaConnectException {@link RdmaConnectException.Reason#ADDRESS_ERROR} when the host cannot be resolved,
     *                              the port is in use or the address is not this host's;
     *                              {@link RdmaConnectException.Reason#DEVICE_ERROR} when no RDMA device serves the
     *                              address or it cannot be opened
     */
    public static ServerEndpoint bind(InetSocketAddress address, EndpointConfig cfg) throws RdmaConnectException {
        return bind(address, cfg, false);
    }

    /**
     * Listens as {@link #bind(InetSocketAddress, EndpointConfig)} does, on a group with no thread of its own: the
     * caller drives it through {@code group().invoker()} ({@link EndpointGroup#openInvoked}), and the accepted
     * endpoints' completions run on the invoking thread (a Netty event loop).
     *
     * @param address the local address and port to listen on (port 0: any free port, see {@link #port()})
     * @param cfg     the settings of the server and of every endpoint it accepts
     * @return the listening server
     * @throws RdmaConnectException as {@link #bind(InetSocketAddress, EndpointConfig)}
     */
    public static ServerEndpoint bindInvoked(InetSocketAddress address, EndpointConfig cfg)
            throws RdmaConnectException {
        return bind(address, cfg, true);
    }

    private static ServerEndpoint bind(InetSocketAddress address, EndpointConfig cfg, boolean invoked)
            throws RdmaConnectException {
        if (address.isUnresolved()) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR, "cannot resolve host '" + address.getHostString() + "'");
        }
        if (CmConnector.useCm(cfg)) return bindCm(address, cfg, invoked);
        ServerSocket ss;
        try {
            ss = new ServerSocket();
            ss.setReuseAddress(true);
            ss.bind(address, 128);
        } catch (BindException e) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR,
                    "cannot listen on " + address + ": " + e.getMessage()
                            + " (port in use, or not an address of this host)",
                    e);
        } catch (IOException e) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR, "cannot listen on " + address + ": " + e, e);
        }
        try {
            dev.jrdma.verbs.Device d = Devices.forLocalAddress(address.getAddress(), cfg.device());
            EndpointGroup g = invoked ? EndpointGroup.openInvoked(d, cfg) : EndpointGroup.open(d, cfg);
            return new ServerEndpoint(ss, null, g, cfg);
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            closeQuietly(ss);
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR,
                    "no RDMA device for " + address.getAddress().getHostAddress() + ": " + e.getMessage(),
                    e);
        } catch (RuntimeException e) {
            closeQuietly(ss);
            throw e;
        }
    }

    private static ServerEndpoint bindCm(InetSocketAddress address, EndpointConfig cfg, boolean invoked)
            throws RdmaConnectException {
        CmConnector.Listener l = CmConnector.Listener.bind(address);
        try {
            dev.jrdma.verbs.Device d = l.deviceName != null
                    ? dev.jrdma.verbs.Verbs.device(l.deviceName)
                    : cfg.device() != null
                            ? dev.jrdma.verbs.Verbs.device(cfg.device())
                            : dev.jrdma.verbs.Verbs.defaultDevice();
            return new ServerEndpoint(
                    null, l, invoked ? EndpointGroup.openInvoked(d, cfg) : EndpointGroup.open(d, cfg), cfg);
        } catch (RuntimeException e) {
            l.close();
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR,
                    "no RDMA device for " + address + ": " + e.getMessage(),
                    e);
        }
    }

    private static void closeQuietly(ServerSocket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** {@return the port it listens on (the chosen one after a bind to port 0)} */
    public int port() {
        return cm != null ? cm.local.getPort() : listener.getLocalPort();
    }

    /** {@return the address and port it listens on} */
    public InetSocketAddress localAddress() {
        return cm != null ? cm.local : (InetSocketAddress) listener.getLocalSocketAddress();
    }

    /** {@return how this server sets up connections: {@link ConnectionManager#TCP} or {@link ConnectionManager#RDMA_CM}, never AUTO} */
    public ConnectionManager connectionManager() {
        return cm != null ? ConnectionManager.RDMA_CM : ConnectionManager.TCP;
    }

    /** {@return the group of every endpoint accepted here: its device, buffer pool and completion thread} */
    public EndpointGroup group() {
        return group;
    }

    /** {@return the registered memory of this server's group, where buffers to {@link #export} come from} */
    public BufferPool pool() {
        return group.pool();
    }

    /**
     * Offers {@code buffer}, a buffer of {@link #pool()}, to every client accepted from now on with every right of
     * {@link EndpointConfig#remoteAccess()} (it arrives in the handshake: {@link Endpoint#peerExport()}). Each
     * connection gets a window of its own over exactly this range ({@link Endpoint#localExport()}): the device
     * enforces the bounds, no client can use another's key, and one client's access is revoked without the others'.
     *
     * @param buffer a buffer of {@link #pool()} ({@link RegisteredBuffer#remote()}), or null to stop exporting
     * @return this server
     * @throws IllegalArgumentException when the buffer is empty or not memory of the pool, or
     *                                  {@link EndpointConfig#remoteAccess()} is empty
     */
    public ServerEndpoint export(RemoteBuffer buffer) {
        return export(buffer, cfg.remoteAccess());
    }

    /**
     * Like {@link #export(RemoteBuffer)}, with fewer rights.
     *
     * @param buffer a buffer of {@link #pool()}, or null to stop exporting
     * @param rights what every client may do to it: REMOTE_READ, REMOTE_WRITE and/or REMOTE_ATOMIC, among
     *               {@link EndpointConfig#remoteAccess()}
     * @return this server
     * @throws IllegalArgumentException when the buffer is empty or not memory of the pool, {@code rights} is empty,
     *                                  or it holds a right the configuration does not allow
     */
    public ServerEndpoint export(RemoteBuffer buffer, java.util.Set<dev.jrdma.verbs.Access> rights) {
        this.export = buffer == null ? null : ExportedRange.of(group.pool(), buffer, rights, cfg);
        return this;
    }

    /**
     * Accepts or rejects clients by address and private data, from the next handshake on.
     *
     * @param f the filter, or null to accept every client (up to the caps)
     * @return this server
     */
    public ServerEndpoint filter(ConnectionFilter f) {
        this.filter = f;
        return this;
    }

    /** {@return the last handshake that failed on this server (for diagnostics), or null when none has} */
    public RdmaConnectException lastFailure() {
        return lastFailure;
    }

    /**
     * Waits up to the configured timeout ({@link EndpointConfig#timeout()}) for a client.
     *
     * @return the connected endpoint
     * @throws RdmaConnectException as {@link #accept(Duration)}
     */
    public Endpoint accept() throws RdmaConnectException {
        return accept(cfg.timeout());
    }

    /**
     * Waits up to {@code timeout} for a client that completes the handshake. Clients whose handshake fails are
     * skipped (see {@link #lastFailure()}).
     *
     * @param timeout how long to wait
     * @return the connected endpoint, on this server's {@link #group()}
     * @throws RdmaConnectException {@link RdmaConnectException.Reason#TIMEOUT} when no client completed a handshake
     *                              in time (or the thread was interrupted; the last failure is suppressed in it);
     *                              {@link RdmaConnectException.Reason#ADDRESS_ERROR} when the server is closed or its
     *                              listening socket failed
     */
    public Endpoint accept(Duration timeout) throws RdmaConnectException {
        Clock clock = group.clock();
        long deadline = clock.nanoTime() + timeout.toNanos();
        while (true) {
            long left = (deadline - clock.nanoTime()) / 1_000_000;
            if (left <= 0) {
                RdmaConnectException e = new RdmaConnectException(
                        RdmaConnectException.Reason.TIMEOUT,
                        "no client connected to " + localAddress() + " within " + timeout.toMillis() + " ms"
                                + (lastFailure == null
                                        ? ""
                                        : " (last failed attempt: " + lastFailure.getMessage() + ")"));
                if (lastFailure != null) e.addSuppressed(lastFailure);
                throw e;
            }
            startAcceptor();
            try {
                // in slices: a server closed meanwhile ends the wait at once, not at the timeout
                Endpoint ep = ready.poll(Math.min(left, SWEEP_MS), java.util.concurrent.TimeUnit.MILLISECONDS);
                if (ep != null) return ep;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.TIMEOUT, "interrupted while accepting on " + localAddress());
            }
            if (closed)
                throw new RdmaConnectException(
                        RdmaConnectException.Reason.ADDRESS_ERROR, "the server at " + localAddress() + " is closed");
        }
    }

    /** {@return the handshakes in progress} */
    public int pendingHandshakes() {
        return admission.pending();
    }

    /** {@return what this server refused or cut off so far: each kind of drop, counted} */
    public AdmissionCounters counters() {
        return admission.counters(group);
    }

    /** Tests: the clock of the admission deadlines that {@link #sweepDeadlines} enforces (by default the group's). */
    void clock(Clock nanoTime) {
        admission.clock(nanoTime);
    }

    /** Disconnects the handshakes past their deadline (the acceptor does it every {@value #SWEEP_MS} ms; tests). */
    int sweepDeadlines() {
        return admission.sweep();
    }

    /** How often the TCP acceptor looks for handshakes past their deadline while no connection comes. */
    private static final int SWEEP_MS = 100;

    private synchronized void startAcceptor() {
        if (acceptor == null && !closed) {
            acceptor = Thread.ofPlatform()
                    .daemon()
                    .name("jrdma-acceptor-" + port())
                    .start(cm != null ? this::cmAcceptLoop : this::acceptLoop);
        }
    }

    private void acceptLoop() {
        try {
            listener.setSoTimeout(SWEEP_MS);
        } catch (IOException ignored) {
            // the handshakes' own reads still keep the deadline
        }
        while (!closed) {
            Socket s;
            try {
                admission.sweep();
                s = listener.accept();
            } catch (SocketTimeoutException e) {
                continue;
            } catch (IOException e) {
                if (!closed) {
                    lastFailure = new RdmaConnectException(
                            RdmaConnectException.Reason.ADDRESS_ERROR,
                            "accept on " + localAddress() + " failed: " + e.getMessage(),
                            e);
                    LOG.log(System.Logger.Level.WARNING, lastFailure.getMessage());
                    closeQuietly(listener);
                    closed = true;
                }
                return;
            }
            try {
                s.setTcpNoDelay(true);
            } catch (IOException e) {
                Handshake.closeQuietly(s); // already gone
                continue;
            }
            Admission.Ticket t = admission.enter(s.getInetAddress(), s);
            if (t.refusal() != null) {
                if (admission.startRefusal()) {
                    Thread.ofVirtual().name("jrdma-refuse").start(() -> refuse(s, t.refusal()));
                } else {
                    Handshake.closeQuietly(s); // a flood: counted, not told
                }
                continue;
            }
            long deadline = group.clock().nanoTime() + cfg.timeout().toNanos();
            Thread.ofVirtual()
                    .name("jrdma-handshake-" + s.getRemoteSocketAddress())
                    .start(() -> handshake(s, deadline, t));
        }
    }

    /** How long the rdma_cm acceptor waits for an event before it looks whether the server was closed. */
    private static final long CM_ACCEPT_SLICE_MS = 100;

    /** The rdma_cm acceptor: the same caps and the same one-thread-per-handshake as the TCP exchange's. */
    private void cmAcceptLoop() {
        while (!closed) {
            dev.jrdma.cm.CmEvent req;
            try {
                req = cm.nextRequest(CM_ACCEPT_SLICE_MS);
            } catch (RdmaConnectException e) {
                if (!closed) {
                    lastFailure = e;
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "accepting on " + localAddress() + " stopped: " + e.getMessage());
                    closed = true;
                }
                return;
            }
            if (req == null) continue;
            java.net.InetSocketAddress from = req.id().remoteAddress();
            // rdma_cm keeps its own deadline (the handshake waits for the client's confirmation until it): not swept
            Admission.Ticket t =
                    admission.enter(from == null ? java.net.InetAddress.getLoopbackAddress() : from.getAddress(), null);
            if (t.refusal() != null) {
                lastFailure = new RdmaConnectException(
                        RdmaConnectException.Reason.REJECTED, "rejected " + from + ": " + t.refusal());
                LOG.log(System.Logger.Level.INFO, lastFailure.getMessage());
                cm.refuse(req, t.refusal());
                continue;
            }
            long deadline = group.clock().nanoTime() + cfg.timeout().toNanos();
            // a platform thread: the handshake blocks in native calls (poll on its event channel), which would pin a
            // virtual thread's carrier for as long as a stalling client makes it wait
            Thread.ofPlatform()
                    .daemon()
                    .name("jrdma-cm-handshake-" + req.id().remoteAddress())
                    .start(() -> handshake(
                            () -> cm.handshake(group, req, export, filter, deadline), String.valueOf(from), t));
        }
    }

    /** One handshake, TCP or rdma_cm. */
    private interface Handshaker {
        Endpoint run() throws RdmaConnectException;
    }

    private void handshake(Socket s, long deadline, Admission.Ticket t) {
        handshake(
                () -> TcpConnector.accept(group, s, export, filter, deadline),
                String.valueOf(s.getRemoteSocketAddress()),
                t);
    }

    private void handshake(Handshaker h, String client, Admission.Ticket t) {
        Endpoint ep = null;
        try {
            ep = h.run();
        } catch (RdmaConnectException e) {
            if (t.expired() && e.reason() != RdmaConnectException.Reason.TIMEOUT) {
                // disconnected by the sweep: its read failed on the closed socket
                e = new RdmaConnectException(
                        RdmaConnectException.Reason.TIMEOUT,
                        "the client at " + client + " did not complete its handshake within "
                                + cfg.timeout().toMillis() + " ms: disconnected",
                        e);
            }
            admission.countFailure(e, t);
            lastFailure = e;
            LOG.log(System.Logger.Level.INFO, "handshake failed: " + e.getMessage());
        } catch (RuntimeException | Error e) {
            lastFailure = new RdmaConnectException(
                    RdmaConnectException.Reason.DEVICE_ERROR, "handshake with " + client + " failed: " + e, e);
            LOG.log(System.Logger.Level.WARNING, "handshake failed", e);
        } finally {
            t.close(); // before the endpoint is handed out: accept's caller sees it counted no more
        }
        if (ep == null) return;
        ready.add(ep);
        if (closed) ep.close();
    }

    /**
     * Rejects a connection before its handshake (a cap is reached): the client reads the reason as REJECTED. Its
     * HELLO is read and dropped first (at most a HELLO's size, for at most a second): closing a socket with unread
     * bytes resets it, and the client would see the reset instead of the reason.
     */
    private void refuse(Socket s, String reason) {
        lastFailure = new RdmaConnectException(
                RdmaConnectException.Reason.REJECTED, "rejected " + s.getRemoteSocketAddress() + ": " + reason);
        LOG.log(System.Logger.Level.INFO, lastFailure.getMessage());
        try {
            Handshake.writeReject(new java.io.DataOutputStream(s.getOutputStream()), Endpoint.VERDICT_REJECT, reason);
            s.shutdownOutput();
            java.io.InputStream in =
                    Handshake.input(s, group.clock(), group.clock().nanoTime() + 1_000_000_000L);
            byte[] sink = new byte[256];
            for (int total = 0, n; total < Handshake.MAX_HELLO && (n = in.read(sink)) > 0; total += n) {
                // dropped
            }
        } catch (IOException ignored) {
            // the client sees the connection end
        } finally {
            Handshake.closeQuietly(s);
            admission.endRefusal();
        }
    }

    /** Stops listening and closes every endpoint accepted here, then the device. */
    @Override
    public void close() {
        closed = true;
        if (listener != null) closeQuietly(listener);
        if (cm != null) cm.close();
        group.close();
    }
}
