package dev.jrdma.connect;

import dev.jrdma.verbs.Access;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

/**
 * Settings of endpoints and their group: queue depths, inline size, buffer sizes, poll mode, timeout, device.
 * <pre>{@code
 * EndpointConfig cfg = EndpointConfig.builder().recvQueueDepth(32).messageSize(8192).timeout(Duration.ofSeconds(5)).build();
 * }</pre>
 *
 * @param sendQueueDepth  send work requests in flight per endpoint (more are queued in software)
 * @param recvQueueDepth  receive buffers pre-posted per endpoint; also the send credits the peer gets
 * @param inlineSize      messages up to this size are sent inline (copied into the work request)
 * @param messageSize     the largest message {@code send} accepts: the size of each receive buffer
 * @param slabSize        bytes per registered slab of the buffer pool (a power of two)
 * @param cqSize          completion queue capacity of an endpoint group (shared by its endpoints)
 * @param pollMode        how the completion thread waits
 * @param timeout         how long connect, accept's handshake, and every operation may take before failing
 * @param device          device name, or null: the device that reaches the address (see {@link Devices})
 * @param localAddress    local address a client binds (and whose soft device it uses), or null
 * @param privateData     up to 1024 bytes sent with connect (client) or accept (server)
 * @param retryConnect    keep retrying a refused connect until the timeout (a server that is still starting)
 * @param connectionManager TCP exchange or rdma_cm; AUTO picks rdma_cm for native devices
 * @param remoteAccess    what a peer may do to this side's memory at all (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC):
 *                        the rights of every queue pair, and the most an export or a grant can give. Default: none,
 *                        so a peer can only send messages; a side that exports memory must ask for the rights it grants
 * @param maxConnections  endpoints a server holds at once (accepted or waiting to be accepted); more are rejected
 * @param maxPendingHandshakes handshakes a server runs at once; more clients are rejected until one finishes
 */
public record EndpointConfig(int sendQueueDepth, int recvQueueDepth, int inlineSize, int messageSize, long slabSize,
                             int cqSize, PollMode pollMode, Duration timeout, String device, InetAddress localAddress,
                             byte[] privateData, boolean retryConnect, ConnectionManager connectionManager,
                             Set<Access> remoteAccess, int maxConnections, int maxPendingHandshakes) {
    public static final int MAX_PRIVATE_DATA = 1024;
    public static final int DEFAULT_MAX_CONNECTIONS = 1024, DEFAULT_MAX_PENDING_HANDSHAKES = 64;
    /** The rights {@link #remoteAccess} may hold. */
    public static final Set<Access> REMOTE_RIGHTS = Set.copyOf(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC));

    /** The settings without remote rights (the constructor of the first release). */
    public EndpointConfig(int sendQueueDepth, int recvQueueDepth, int inlineSize, int messageSize, long slabSize,
                          int cqSize, PollMode pollMode, Duration timeout, String device, InetAddress localAddress,
                          byte[] privateData, boolean retryConnect, ConnectionManager connectionManager) {
        this(sendQueueDepth, recvQueueDepth, inlineSize, messageSize, slabSize, cqSize, pollMode, timeout, device, localAddress,
                privateData, retryConnect, connectionManager, Set.of());
    }

    /** The settings without the server's caps (their defaults: 1024 connections, 64 handshakes at once). */
    public EndpointConfig(int sendQueueDepth, int recvQueueDepth, int inlineSize, int messageSize, long slabSize,
                          int cqSize, PollMode pollMode, Duration timeout, String device, InetAddress localAddress,
                          byte[] privateData, boolean retryConnect, ConnectionManager connectionManager, Set<Access> remoteAccess) {
        this(sendQueueDepth, recvQueueDepth, inlineSize, messageSize, slabSize, cqSize, pollMode, timeout, device, localAddress,
                privateData, retryConnect, connectionManager, remoteAccess, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_PENDING_HANDSHAKES);
    }

    public EndpointConfig {
        if (sendQueueDepth < 1 || sendQueueDepth > 16384) throw new IllegalArgumentException("sendQueueDepth must be 1..16384, not " + sendQueueDepth);
        if (recvQueueDepth < 1 || recvQueueDepth > 16384) throw new IllegalArgumentException("recvQueueDepth must be 1..16384, not " + recvQueueDepth);
        if (inlineSize < 0 || inlineSize > 1024) throw new IllegalArgumentException("inlineSize must be 0..1024, not " + inlineSize);
        if (messageSize < 1 || messageSize > (1 << 30)) throw new IllegalArgumentException("messageSize must be 1..2^30, not " + messageSize);
        if (cqSize < 16) throw new IllegalArgumentException("cqSize must be at least 16, not " + cqSize);
        if (timeout == null || timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("timeout must be positive");
        if (pollMode == null) pollMode = PollMode.EVENT;
        if (connectionManager == null) connectionManager = ConnectionManager.AUTO;
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > MAX_PRIVATE_DATA) throw new IllegalArgumentException("private data is limited to " + MAX_PRIVATE_DATA + " bytes, not " + privateData.length);
        if (maxConnections < 1) throw new IllegalArgumentException("maxConnections must be at least 1, not " + maxConnections);
        if (maxPendingHandshakes < 1) throw new IllegalArgumentException("maxPendingHandshakes must be at least 1, not " + maxPendingHandshakes);
        remoteAccess = remoteAccess == null || remoteAccess.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(remoteAccess));
        for (Access a : remoteAccess) {
            if (!REMOTE_RIGHTS.contains(a)) throw new IllegalArgumentException("remoteAccess takes REMOTE_READ, REMOTE_WRITE and REMOTE_ATOMIC, not " + a);
        }
    }

    public static EndpointConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.sendQueueDepth = sendQueueDepth; b.recvQueueDepth = recvQueueDepth; b.inlineSize = inlineSize; b.messageSize = messageSize;
        b.slabSize = slabSize; b.cqSize = cqSize; b.pollMode = pollMode; b.timeout = timeout; b.device = device;
        b.localAddress = localAddress; b.privateData = privateData; b.retryConnect = retryConnect;
        b.connectionManager = connectionManager; b.remoteAccess = remoteAccess;
        b.maxConnections = maxConnections; b.maxPendingHandshakes = maxPendingHandshakes;
        return b;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    /** Builds a config, or connects / binds with it directly. */
    public static final class Builder {
        private int sendQueueDepth = 64, recvQueueDepth = 64, inlineSize = 64, messageSize = 4096, cqSize = 4096;
        private long slabSize = 1 << 20;
        private PollMode pollMode = PollMode.EVENT;
        private Duration timeout = Duration.ofSeconds(10);
        private String device;
        private InetAddress localAddress;
        private byte[] privateData;
        private boolean retryConnect;
        private ConnectionManager connectionManager = ConnectionManager.AUTO;
        private Set<Access> remoteAccess = Set.of();
        private int maxConnections = DEFAULT_MAX_CONNECTIONS, maxPendingHandshakes = DEFAULT_MAX_PENDING_HANDSHAKES;

        private Builder() {}

        public Builder sendQueueDepth(int n) { sendQueueDepth = n; return this; }
        public Builder recvQueueDepth(int n) { recvQueueDepth = n; return this; }
        public Builder inlineSize(int n) { inlineSize = n; return this; }
        public Builder messageSize(int n) { messageSize = n; return this; }
        public Builder slabSize(long n) { slabSize = n; return this; }
        public Builder cqSize(int n) { cqSize = n; return this; }
        public Builder pollMode(PollMode m) { pollMode = m; return this; }
        public Builder timeout(Duration t) { timeout = t; return this; }
        public Builder device(String name) { device = name; return this; }
        public Builder localAddress(InetAddress a) { localAddress = a; return this; }
        public Builder localAddress(String a) {
            try {
                localAddress = a == null ? null : InetAddress.getByName(a);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot resolve local address '" + a + "'", e);
            }
            return this;
        }
        public Builder privateData(byte[] d) { privateData = d; return this; }
        public Builder retryConnect(boolean b) { retryConnect = b; return this; }
        public Builder connectionManager(ConnectionManager m) { connectionManager = m; return this; }
        /** What a peer may do to this side's memory (none by default): see {@link EndpointConfig#remoteAccess()}. */
        public Builder remoteAccess(Access... rights) { remoteAccess = rights.length == 0 ? Set.of() : EnumSet.of(rights[0], rights); return this; }
        public Builder remoteAccess(Set<Access> rights) { remoteAccess = rights; return this; }
        public Builder maxConnections(int n) { maxConnections = n; return this; }
        public Builder maxPendingHandshakes(int n) { maxPendingHandshakes = n; return this; }

        public EndpointConfig build() {
            return new EndpointConfig(sendQueueDepth, recvQueueDepth, inlineSize, messageSize, slabSize, cqSize, pollMode,
                    timeout, device, localAddress, privateData, retryConnect, connectionManager, remoteAccess,
                    maxConnections, maxPendingHandshakes);
        }

        /** Connects a client endpoint with this config. */
        public Endpoint connect(String host, int port) throws RdmaConnectException {
            return Endpoint.connect(host, port, build());
        }

        /** Binds a server endpoint with this config. */
        public ServerEndpoint bind(InetSocketAddress address) throws RdmaConnectException {
            return ServerEndpoint.bind(address, build());
        }
    }
}
