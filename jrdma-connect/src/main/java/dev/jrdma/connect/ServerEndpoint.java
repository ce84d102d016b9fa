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
 */
public final class ServerEndpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ServerEndpoint.class.getName());

    /** Decides whether to accept a client from its address and private data: null accepts, a reason rejects. */
    @FunctionalInterface
    public interface ConnectionFilter {
        String check(InetSocketAddress client, byte[] privateData);
    }

    private final ServerSocket listener;          // the TCP exchange, or
    private final CmConnector.Listener cm;        // rdma_cm
    private final EndpointGroup group;
    private final EndpointConfig cfg;
    private volatile ExportedRange export;
    private volatile ConnectionFilter filter;
    private volatile RdmaConnectException lastFailure;

    private ServerEndpoint(ServerSocket listener, CmConnector.Listener cm, EndpointGroup group, EndpointConfig cfg) {
        this.listener = listener;
        this.cm = cm;
        this.group = group;
        this.cfg = cfg;
    }

    /** Binds with the default settings. */
    public static ServerEndpoint bind(InetSocketAddress address) throws RdmaConnectException {
        return bind(address, EndpointConfig.defaults());
    }

    /**
     * Listens on {@code address} (port 0: any free port) and opens the device that serves it: the configured one,
     * the software device of that address, or the default device for a wildcard address.
     */
    public static ServerEndpoint bind(InetSocketAddress address, EndpointConfig cfg) throws RdmaConnectException {
        if (address.isUnresolved()) {
            throw new RdmaConnectException(RdmaConnectException.Reason.ADDRESS_ERROR, "cannot resolve host '" + address.getHostString() + "'");
        }
        if (CmConnector.useCm(cfg)) return bindCm(address, cfg);
        ServerSocket ss;
        try {
            ss = new ServerSocket();
            ss.setReuseAddress(true);
            ss.bind(address, 128);
        } catch (BindException e) {
            throw new RdmaConnectException(RdmaConnectException.Reason.ADDRESS_ERROR,
                    "cannot listen on " + address + ": " + e.getMessage() + " (port in use, or not an address of this host)", e);
        } catch (IOException e) {
            throw new RdmaConnectException(RdmaConnectException.Reason.ADDRESS_ERROR, "cannot listen on " + address + ": " + e, e);
        }
        try {
            EndpointGroup g = EndpointGroup.forLocalAddress(address.getAddress(), cfg);
            return new ServerEndpoint(ss, null, g, cfg);
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            closeQuietly(ss);
            throw new RdmaConnectException(RdmaConnectException.Reason.DEVICE_ERROR, "no RDMA device for " + address.getAddress().getHostAddress() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(ss);
            throw e;
        }
    }

    private static ServerEndpoint bindCm(InetSocketAddress address, EndpointConfig cfg) throws RdmaConnectException {
        CmConnector.Listener l = CmConnector.Listener.bind(address);
        try {
            dev.jrdma.verbs.Device d = l.deviceName != null ? dev.jrdma.verbs.Verbs.device(l.deviceName)
                    : cfg.device() != null ? dev.jrdma.verbs.Verbs.device(cfg.device()) : dev.jrdma.verbs.Verbs.defaultDevice();
            return new ServerEndpoint(null, l, EndpointGroup.open(d, cfg), cfg);
        } catch (RuntimeException e) {
            l.close();
            throw new RdmaConnectException(RdmaConnectException.Reason.DEVICE_ERROR, "no RDMA device for " + address + ": " + e.getMessage(), e);
        }
    }

    private static void closeQuietly(ServerSocket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    public int port() {
        return cm != null ? cm.local.getPort() : listener.getLocalPort();
    }

    public InetSocketAddress localAddress() {
        return cm != null ? cm.local : (InetSocketAddress) listener.getLocalSocketAddress();
    }

    /** TCP or RDMA_CM: how this server sets up connections. */
    public ConnectionManager connectionManager() {
        return cm != null ? ConnectionManager.RDMA_CM : ConnectionManager.TCP;
    }

    public EndpointGroup group() {
        return group;
    }

    /** Registered memory of this server's group. */
    public BufferPool pool() {
        return group.pool();
    }

    /**
     * Offers {@code buffer}, a buffer of {@link #pool()}, to every client accepted from now on with every right of
     * {@link EndpointConfig#remoteAccess()} (it arrives in the handshake: {@link Endpoint#peerExport()}). Each
     * connection gets a window of its own over exactly this range ({@link Endpoint#localExport()}): the device
     * enforces the bounds, no client can use another's key, and one client's access is revoked without the others'.
     */
    public ServerEndpoint export(RemoteBuffer buffer) {
        return export(buffer, cfg.remoteAccess());
    }

    /** Like {@link #export(RemoteBuffer)}, with {@code rights} (among {@link EndpointConfig#remoteAccess()}). */
    public ServerEndpoint export(RemoteBuffer buffer, java.util.Set<dev.jrdma.verbs.Access> rights) {
        this.export = buffer == null ? null : ExportedRange.of(group.pool(), buffer, rights, cfg);
        return this;
    }

    /** Accepts or rejects clients by address and private data. */
    public ServerEndpoint filter(ConnectionFilter f) {
        this.filter = f;
        return this;
    }

    /** The last handshake that failed on this server (for diagnostics), or null. */
    public RdmaConnectException lastFailure() {
        return lastFailure;
    }

    /** Waits up to the configured timeout for a client. */
    public Endpoint accept() throws RdmaConnectException {
        return accept(cfg.timeout());
    }

    /** Waits up to {@code timeout} for a client that completes the handshake. */
    public Endpoint accept(Duration timeout) throws RdmaConnectException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                RdmaConnectException e = new RdmaConnectException(RdmaConnectException.Reason.TIMEOUT,
                        "no client connected to " + localAddress() + " within " + timeout.toMillis() + " ms"
                                + (lastFailure == null ? "" : " (last failed attempt: " + lastFailure.getMessage() + ")"));
                if (lastFailure != null) e.addSuppressed(lastFailure);
                throw e;
            }
            if (cm != null) {
                try {
                    Endpoint ep = cm.accept(group, export, filter, deadline);
                    if (ep != null) return ep;
                } catch (RdmaConnectException e) {
                    lastFailure = e;
                    LOG.log(System.Logger.Level.INFO, "handshake failed: " + e.getMessage());
                }
                continue;
            }
            Socket s;
            try {
                listener.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
                s = listener.accept();
                s.setTcpNoDelay(true);
            } catch (SocketTimeoutException e) {
                continue;
            } catch (IOException e) {
                throw new RdmaConnectException(RdmaConnectException.Reason.ADDRESS_ERROR, "accept on " + localAddress() + " failed: " + e.getMessage(), e);
            }
            long handshakeDeadline = System.nanoTime() + cfg.timeout().toNanos();
            try {
                return Endpoint.accept(group, s, export, filter, handshakeDeadline);
            } catch (RdmaConnectException e) {
                lastFailure = e;
                LOG.log(System.Logger.Level.INFO, "handshake failed: " + e.getMessage());
            }
        }
    }

    /** Stops listening and closes every endpoint accepted here, then the device. */
    @Override
    public void close() {
        if (listener != null) closeQuietly(listener);
        if (cm != null) cm.close();
        group.close();
    }
}
