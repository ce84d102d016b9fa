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
 * @param cqSize          entries of each completion queue of an endpoint group (shared by its endpoints; the group
 *                        makes another when none has room for a new endpoint)
 * @param pollMode        how the completion thread waits
 * @param timeout         how long connect, accept's handshake, and every operation may take before failing (default
 *                        10 s, or {@code -Djrdma.connect.timeoutMs}: e.g. on an emulated machine where set-up is slow)
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
 * @param maxPendingHandshakesPerSource handshakes a server runs at once for one source address; more connections from
 *                        it are rejected until one finishes, so one host cannot take every handshake slot
 * @param packetAuth      offer (client) or take (server) jrdma's authenticated mode in the TCP handshake: a MAC on
 *                        every packet under a key agreed with X25519, on when both sides' devices support it (the
 *                        software device; never rxe or a NIC) and both configs ask for it; default off
 *                        ({@code -Djrdma.connect.packetAuth=true} turns the default on): every byte is hashed on each
 *                        side (64 KiB write_bw at 0.4-0.9x of plain), and the checks that cost nothing (the peer's
 *                        port, responses that must fit a request, forgery bursts) are on either way.
 *                        rdma_cm connections are always plain. See {@link Endpoint#packetAuthenticated()}
 */
public record EndpointConfig(
        int sendQueueDepth,
        int recvQueueDepth,
        int inlineSize,
        int messageSize,
        long slabSize,
        int cqSize,
        PollMode pollMode,
        Duration timeout,
        String device,
        InetAddress localAddress,
        byte[] privateData,
        boolean retryConnect,
        ConnectionManager connectionManager,
        Set<Access> remoteAccess,
        int maxConnections,
        int maxPendingHandshakes,
        int maxPendingHandshakesPerSource,
        boolean packetAuth) {
    /** The most private data the TCP exchange carries, in bytes (rdma_cm carries at most 20 of the user's). */
    public static final int MAX_PRIVATE_DATA = 1024;
    /** The largest {@link #messageSize}, 2^30 bytes: also the most a peer may announce in a handshake. */
    public static final int MAX_MESSAGE_SIZE = 1 << 30;
    /** The default of {@link #maxConnections}. */
    public static final int DEFAULT_MAX_CONNECTIONS = 1024;
    /** The default of {@link #maxPendingHandshakes}. */
    public static final int DEFAULT_MAX_PENDING_HANDSHAKES = 64;
    /** The default of {@link #maxPendingHandshakesPerSource}. */
    public static final int DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE = 8;
    /** The rights {@link #remoteAccess} may hold. */
    public static final Set<Access> REMOTE_RIGHTS =
            Set.copyOf(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC));

    /**
     * The settings without remote rights (the constructor of the first release): a peer may only send messages.
     *
     * @param sendQueueDepth    send work requests in flight per endpoint, 1..16384
     * @param recvQueueDepth    receive buffers pre-posted per endpoint, 1..16384
     * @param inlineSize        the inline threshold in bytes, 0..1024
     * @param messageSize       each receive buffer's size in bytes, 1..2^30
     * @param slabSize          bytes per slab of the buffer pool, a power of two of at least 4096
     * @param cqSize            an endpoint group's completion queue capacity, at least 16
     * @param pollMode          how the completion thread waits; null: {@link PollMode#EVENT}
     * @param timeout           the set-up and operation timeout, positive
     * @param device            device name, or null
     * @param localAddress      local address of a client, or null
     * @param privateData       private data for the peer, or null for none
     * @param retryConnect      whether a refused connect is retried until the timeout
     * @param connectionManager TCP exchange or rdma_cm; null: {@link ConnectionManager#AUTO}
     * @throws IllegalArgumentException when a value is out of its range
     */
    public EndpointConfig(
            int sendQueueDepth,
            int recvQueueDepth,
            int inlineSize,
            int messageSize,
            long slabSize,
            int cqSize,
            PollMode pollMode,
            Duration timeout,
            String device,
            InetAddress localAddress,
            byte[] privateData,
            boolean retryConnect,
            ConnectionManager connectionManager) {
        this(
                sendQueueDepth,
                recvQueueDepth,
                inlineSize,
                messageSize,
                slabSize,
                cqSize,
                pollMode,
                timeout,
                device,
                localAddress,
                privateData,
                retryConnect,
                connectionManager,
                Set.of());
    }

    /**
     * The settings without the server's caps (their defaults: 1024 connections, 64 handshakes at once).
     *
     * @param sendQueueDepth    send work requests in flight per endpoint, 1..16384
     * @param recvQueueDepth    receive buffers pre-posted per endpoint, 1..16384
     * @param inlineSize        the inline threshold in bytes, 0..1024
     * @param messageSize       each receive buffer's size in bytes, 1..2^30
     * @param slabSize          bytes per slab of the buffer pool, a power of two of at least 4096
     * @param cqSize            an endpoint group's completion queue capacity, at least 16
     * @param pollMode          how the completion thread waits; null: {@link PollMode#EVENT}
     * @param timeout           the set-up and operation timeout, positive
     * @param device            device name, or null
     * @param localAddress      local address of a client, or null
     * @param privateData       private data for the peer, or null for none
     * @param retryConnect      whether a refused connect is retried until the timeout
     * @param connectionManager TCP exchange or rdma_cm; null: {@link ConnectionManager#AUTO}
     * @param remoteAccess      what a peer may do to this side's memory: a subset of {@link #REMOTE_RIGHTS}; null: none
     * @throws IllegalArgumentException when a value is out of its range
     */
    public EndpointConfig(
            int sendQueueDepth,
            int recvQueueDepth,
            int inlineSize,
            int messageSize,
            long slabSize,
            int cqSize,
            PollMode pollMode,
            Duration timeout,
            String device,
            InetAddress localAddress,
            byte[] privateData,
            boolean retryConnect,
            ConnectionManager connectionManager,
            Set<Access> remoteAccess) {
        this(
                sendQueueDepth,
                recvQueueDepth,
                inlineSize,
                messageSize,
                slabSize,
                cqSize,
                pollMode,
                timeout,
                device,
                localAddress,
                privateData,
                retryConnect,
                connectionManager,
                remoteAccess,
                DEFAULT_MAX_CONNECTIONS,
                DEFAULT_MAX_PENDING_HANDSHAKES);
    }

    /**
     * The settings with the server's caps, without the per-source one (its default:
     * {@value #DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE} handshakes at once from one address, or fewer when
     * {@code maxPendingHandshakes} is lower).
     *
     * @param sendQueueDepth       send work requests in flight per endpoint, 1..16384
     * @param recvQueueDepth       receive buffers pre-posted per endpoint, 1..16384
     * @param inlineSize           the inline threshold in bytes, 0..1024
     * @param messageSize          each receive buffer's size in bytes, 1..2^30
     * @param slabSize             bytes per slab of the buffer pool, a power of two of at least 4096
     * @param cqSize               an endpoint group's completion queue capacity, at least 16
     * @param pollMode             how the completion thread waits; null: {@link PollMode#EVENT}
     * @param timeout              the set-up and operation timeout, positive
     * @param device               device name, or null
     * @param localAddress         local address of a client, or null
     * @param privateData          private data for the peer, or null for none
     * @param retryConnect         whether a refused connect is retried until the timeout
     * @param connectionManager    TCP exchange or rdma_cm; null: {@link ConnectionManager#AUTO}
     * @param remoteAccess         what a peer may do to this side's memory: a subset of {@link #REMOTE_RIGHTS}; null: none
     * @param maxConnections       endpoints a server holds at once, at least 1
     * @param maxPendingHandshakes handshakes a server runs at once, at least 1
     * @throws IllegalArgumentException when a value is out of its range
     */
    public EndpointConfig(
            int sendQueueDepth,
            int recvQueueDepth,
            int inlineSize,
            int messageSize,
            long slabSize,
            int cqSize,
            PollMode pollMode,
            Duration timeout,
            String device,
            InetAddress localAddress,
            byte[] privateData,
            boolean retryConnect,
            ConnectionManager connectionManager,
            Set<Access> remoteAccess,
            int maxConnections,
            int maxPendingHandshakes) {
        this(
                sendQueueDepth,
                recvQueueDepth,
                inlineSize,
                messageSize,
                slabSize,
                cqSize,
                pollMode,
                timeout,
                device,
                localAddress,
                privateData,
                retryConnect,
                connectionManager,
                remoteAccess,
                maxConnections,
                maxPendingHandshakes,
                defaultMaxPendingHandshakesPerSource(maxPendingHandshakes));
    }

    /**
     * The settings before packet authentication: it is neither offered nor taken ({@link #packetAuth} false, the default).
     *
     * @param sendQueueDepth       send work requests in flight per endpoint, 1..16384
     * @param recvQueueDepth       receive buffers pre-posted per endpoint, 1..16384
     * @param inlineSize           the inline threshold in bytes, 0..1024
     * @param messageSize          each receive buffer's size in bytes, 1..2^30
     * @param slabSize             bytes per slab of the buffer pool, a power of two of at least 4096
     * @param cqSize               an endpoint group's completion queue capacity, at least 16
     * @param pollMode             how the completion thread waits; null: {@link PollMode#EVENT}
     * @param timeout              the set-up and operation timeout, positive
     * @param device               device name, or null
     * @param localAddress         local address of a client, or null
     * @param privateData          private data for the peer, or null for none
     * @param retryConnect         whether a refused connect is retried until the timeout
     * @param connectionManager    TCP exchange or rdma_cm; null: {@link ConnectionManager#AUTO}
     * @param remoteAccess         what a peer may do to this side's memory: a subset of {@link #REMOTE_RIGHTS}; null: none
     * @param maxConnections       endpoints a server holds at once, at least 1
     * @param maxPendingHandshakes handshakes a server runs at once, at least 1
     * @param maxPendingHandshakesPerSource handshakes a server runs at once for one source address, at least 1
     * @throws IllegalArgumentException when a value is out of its range
     */
    public EndpointConfig(
            int sendQueueDepth,
            int recvQueueDepth,
            int inlineSize,
            int messageSize,
            long slabSize,
            int cqSize,
            PollMode pollMode,
            Duration timeout,
            String device,
            InetAddress localAddress,
            byte[] privateData,
            boolean retryConnect,
            ConnectionManager connectionManager,
            Set<Access> remoteAccess,
            int maxConnections,
            int maxPendingHandshakes,
            int maxPendingHandshakesPerSource) {
        this(
                sendQueueDepth,
                recvQueueDepth,
                inlineSize,
                messageSize,
                slabSize,
                cqSize,
                pollMode,
                timeout,
                device,
                localAddress,
                privateData,
                retryConnect,
                connectionManager,
                remoteAccess,
                maxConnections,
                maxPendingHandshakes,
                maxPendingHandshakesPerSource,
                false);
    }

    /**
     * Checks every setting and fills in the defaults of the null ones (poll mode EVENT, connection manager AUTO, no
     * private data, no remote rights). The slab size is checked when a group's pool is made.
     *
     * @throws IllegalArgumentException when a depth is outside 1..16384, the inline size outside 0..1024, the message
     *                                  size outside 1..2^30, the CQ smaller than 16, the timeout not positive, the
     *                                  private data longer than {@link #MAX_PRIVATE_DATA}, a cap below 1, or
     *                                  {@code remoteAccess} holds a right not in {@link #REMOTE_RIGHTS}
     */
    public EndpointConfig {
        if (sendQueueDepth < 1 || sendQueueDepth > 16384)
            throw new IllegalArgumentException("sendQueueDepth must be 1..16384, not " + sendQueueDepth);
        if (recvQueueDepth < 1 || recvQueueDepth > 16384)
            throw new IllegalArgumentException("recvQueueDepth must be 1..16384, not " + recvQueueDepth);
        if (inlineSize < 0 || inlineSize > 1024)
            throw new IllegalArgumentException("inlineSize must be 0..1024, not " + inlineSize);
        if (messageSize < 1 || messageSize > MAX_MESSAGE_SIZE)
            throw new IllegalArgumentException("messageSize must be 1..2^30, not " + messageSize);
        if (cqSize < 16) throw new IllegalArgumentException("cqSize must be at least 16, not " + cqSize);
        if (timeout == null || timeout.isNegative() || timeout.isZero())
            throw new IllegalArgumentException("timeout must be positive");
        if (pollMode == null) pollMode = PollMode.EVENT;
        if (connectionManager == null) connectionManager = ConnectionManager.AUTO;
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > MAX_PRIVATE_DATA)
            throw new IllegalArgumentException(
                    "private data is limited to " + MAX_PRIVATE_DATA + " bytes, not " + privateData.length);
        if (maxConnections < 1)
            throw new IllegalArgumentException("maxConnections must be at least 1, not " + maxConnections);
        if (maxPendingHandshakes < 1)
            throw new IllegalArgumentException("maxPendingHandshakes must be at least 1, not " + maxPendingHandshakes);
        if (maxPendingHandshakesPerSource < 1)
            throw new IllegalArgumentException(
                    "maxPendingHandshakesPerSource must be at least 1, not " + maxPendingHandshakesPerSource);
        remoteAccess =
                remoteAccess == null || remoteAccess.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(remoteAccess));
        for (Access a : remoteAccess) {
            if (!REMOTE_RIGHTS.contains(a))
                throw new IllegalArgumentException(
                        "remoteAccess takes REMOTE_READ, REMOTE_WRITE and REMOTE_ATOMIC, not " + a);
        }
    }

    /**
     * {@return the defaults: queue depths 64, inline 64 bytes, messages of 4096 bytes, 1 MiB slabs, a CQ of 4096,
     * EVENT polling, a 10 s timeout (or {@code -Djrdma.connect.timeoutMs}), the device that reaches the address, AUTO
     * connection manager, no remote rights, 1024 connections, 64 handshakes at once and 8 at once from one address, packet authentication offered}
     */
    public static EndpointConfig defaults() {
        return builder().build();
    }

    /** {@return a builder that starts from the {@link #defaults()}} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a builder that starts from these settings} */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.sendQueueDepth = sendQueueDepth;
        b.recvQueueDepth = recvQueueDepth;
        b.inlineSize = inlineSize;
        b.messageSize = messageSize;
        b.slabSize = slabSize;
        b.cqSize = cqSize;
        b.pollMode = pollMode;
        b.timeout = timeout;
        b.device = device;
        b.localAddress = localAddress;
        b.privateData = privateData;
        b.retryConnect = retryConnect;
        b.connectionManager = connectionManager;
        b.remoteAccess = remoteAccess;
        b.maxConnections = maxConnections;
        b.maxPendingHandshakes = maxPendingHandshakes;
        b.packetAuth = packetAuth;
        // the derived default stays derived: a later maxPendingHandshakes(n) moves it along
        b.maxPendingHandshakesPerSource =
                maxPendingHandshakesPerSource == defaultMaxPendingHandshakesPerSource(maxPendingHandshakes)
                        ? -1
                        : maxPendingHandshakesPerSource;
        return b;
    }

    /** The per-source cap unless set: {@value #DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE}, or the overall cap when lower. */
    private static int defaultMaxPendingHandshakesPerSource(int maxPendingHandshakes) {
        return Math.min(DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE, Math.max(1, maxPendingHandshakes));
    }

    /** {@return a copy of the private data sent with connect or accept (empty when none)} */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    /**
     * Equal when every setting is, the private data compared by content: a record compares an array by identity, and
     * every {@link #toBuilder()} copy then differed from its original, so each Netty client channel that set its local
     * address got an endpoint group of its own on its event loop (which sleeps on one group's completion channel only).
     *
     * @param other the object to compare with
     * @return whether {@code other} is a config with the same settings
     */
    @Override
    public boolean equals(Object other) {
        return other instanceof EndpointConfig c
                && sendQueueDepth == c.sendQueueDepth
                && recvQueueDepth == c.recvQueueDepth
                && inlineSize == c.inlineSize
                && messageSize == c.messageSize
                && slabSize == c.slabSize
                && cqSize == c.cqSize
                && pollMode == c.pollMode
                && timeout.equals(c.timeout)
                && java.util.Objects.equals(device, c.device)
                && java.util.Objects.equals(localAddress, c.localAddress)
                && java.util.Arrays.equals(privateData, c.privateData)
                && retryConnect == c.retryConnect
                && connectionManager == c.connectionManager
                && remoteAccess.equals(c.remoteAccess)
                && maxConnections == c.maxConnections
                && maxPendingHandshakes == c.maxPendingHandshakes
                && maxPendingHandshakesPerSource == c.maxPendingHandshakesPerSource
                && packetAuth == c.packetAuth;
    }

    /** {@return a hash of every setting, the private data's by content (as {@link #equals})} */
    @Override
    public int hashCode() {
        return java.util.Objects.hash(
                                sendQueueDepth,
                                recvQueueDepth,
                                inlineSize,
                                messageSize,
                                slabSize,
                                cqSize,
                                pollMode,
                                timeout,
                                device,
                                localAddress,
                                retryConnect,
                                connectionManager,
                                remoteAccess,
                                maxConnections,
                                maxPendingHandshakes,
                                maxPendingHandshakesPerSource,
                                packetAuth)
                        * 31
                + java.util.Arrays.hashCode(privateData);
    }

    /** Builds a config, or connects / binds with it directly. */
    public static final class Builder {
        private int sendQueueDepth = 64, recvQueueDepth = 64, inlineSize = 64, messageSize = 4096, cqSize = 4096;
        private long slabSize = 1 << 20;
        private PollMode pollMode = PollMode.EVENT;
        private Duration timeout = Duration.ofMillis(Long.getLong("jrdma.connect.timeoutMs", 10_000));
        private String device;
        private InetAddress localAddress;
        private byte[] privateData;
        private boolean retryConnect;
        private boolean packetAuth = Boolean.parseBoolean(System.getProperty("jrdma.connect.packetAuth", "false"));
        private ConnectionManager connectionManager = ConnectionManager.AUTO;
        private Set<Access> remoteAccess = Set.of();
        private int maxConnections = DEFAULT_MAX_CONNECTIONS, maxPendingHandshakes = DEFAULT_MAX_PENDING_HANDSHAKES;
        private int maxPendingHandshakesPerSource =
                -1; // default: DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE, at most maxPendingHandshakes

        private Builder() {}

        /**
         * Sets {@link EndpointConfig#sendQueueDepth()} (default 64).
         *
         * @param n send work requests in flight per endpoint, 1..16384 (checked by {@link #build})
         * @return this builder
         */
        public Builder sendQueueDepth(int n) {
            sendQueueDepth = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#recvQueueDepth()} (default 64).
         *
         * @param n receive buffers pre-posted per endpoint and credits granted to the peer, 1..16384
         * @return this builder
         */
        public Builder recvQueueDepth(int n) {
            recvQueueDepth = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#inlineSize()} (default 64).
         *
         * @param n bytes, 0..1024; the device's own limit applies too
         * @return this builder
         */
        public Builder inlineSize(int n) {
            inlineSize = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#messageSize()} (default 4096).
         *
         * @param n the size of each receive buffer in bytes, 1..2^30
         * @return this builder
         */
        public Builder messageSize(int n) {
            messageSize = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#slabSize()} (default 1 MiB).
         *
         * @param n bytes per slab, a power of two of at least 4096
         * @return this builder
         */
        public Builder slabSize(long n) {
            slabSize = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#cqSize()} (default 4096).
         *
         * @param n completion queue entries of a group, at least 16
         * @return this builder
         */
        public Builder cqSize(int n) {
            cqSize = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#pollMode()} (default {@link PollMode#EVENT}).
         *
         * @param m how the completion thread waits
         * @return this builder
         */
        public Builder pollMode(PollMode m) {
            pollMode = m;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#timeout()} (default 10 s, or {@code -Djrdma.connect.timeoutMs} milliseconds).
         *
         * @param t how long set-up and each operation may take, positive
         * @return this builder
         */
        public Builder timeout(Duration t) {
            timeout = t;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#device()} (default null: the device that reaches the address).
         *
         * @param name a device name such as {@code rxe0} or {@code soft@127.0.0.1}, or null
         * @return this builder
         */
        public Builder device(String name) {
            device = name;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#localAddress()} (default null: the route decides).
         *
         * @param a the local address a client binds, or null
         * @return this builder
         */
        public Builder localAddress(InetAddress a) {
            localAddress = a;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#localAddress()} from a name or literal.
         *
         * @param a a host name or IP literal, resolved now; null: the route decides
         * @return this builder
         * @throws IllegalArgumentException when {@code a} cannot be resolved
         */
        public Builder localAddress(String a) {
            try {
                localAddress = a == null ? null : InetAddress.getByName(a);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot resolve local address '" + a + "'", e);
            }
            return this;
        }
        /**
         * Sets {@link EndpointConfig#privateData()} (default none).
         *
         * @param d up to {@link EndpointConfig#MAX_PRIVATE_DATA} bytes (20 over rdma_cm), copied by {@link #build}; null: none
         * @return this builder
         */
        public Builder privateData(byte[] d) {
            privateData = d;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#retryConnect()} (default false).
         *
         * @param b whether a refused connect is retried until the timeout
         * @return this builder
         */
        public Builder retryConnect(boolean b) {
            retryConnect = b;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#connectionManager()} (default {@link ConnectionManager#AUTO}).
         *
         * @param m the TCP exchange, rdma_cm, or AUTO
         * @return this builder
         */
        public Builder connectionManager(ConnectionManager m) {
            connectionManager = m;
            return this;
        }
        /**
         * Sets what a peer may do to this side's memory (none by default): see {@link EndpointConfig#remoteAccess()}.
         *
         * @param rights REMOTE_READ, REMOTE_WRITE and/or REMOTE_ATOMIC; none: a peer may only send messages
         * @return this builder
         */
        public Builder remoteAccess(Access... rights) {
            remoteAccess = rights.length == 0 ? Set.of() : EnumSet.of(rights[0], rights);
            return this;
        }
        /**
         * Sets what a peer may do to this side's memory: see {@link EndpointConfig#remoteAccess()}.
         *
         * @param rights a subset of {@link EndpointConfig#REMOTE_RIGHTS}; null or empty: none
         * @return this builder
         */
        public Builder remoteAccess(Set<Access> rights) {
            remoteAccess = rights;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#maxConnections()} (default {@value EndpointConfig#DEFAULT_MAX_CONNECTIONS}).
         *
         * @param n endpoints a server holds at once, at least 1
         * @return this builder
         */
        public Builder maxConnections(int n) {
            maxConnections = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#maxPendingHandshakes()} (default {@value EndpointConfig#DEFAULT_MAX_PENDING_HANDSHAKES}).
         *
         * @param n handshakes a server runs at once, at least 1
         * @return this builder
         */
        public Builder maxPendingHandshakes(int n) {
            maxPendingHandshakes = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#maxPendingHandshakesPerSource()} (default
         * {@value EndpointConfig#DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE}, or {@code maxPendingHandshakes} when that is lower).
         *
         * @param n handshakes a server runs at once for one source address, at least 1
         * @return this builder
         */
        public Builder maxPendingHandshakesPerSource(int n) {
            maxPendingHandshakesPerSource = n;
            return this;
        }
        /**
         * Sets {@link EndpointConfig#packetAuth()} (default false, or {@code -Djrdma.connect.packetAuth}).
         *
         * @param b whether to offer and take the authenticated mode
         * @return this builder
         */
        public Builder packetAuth(boolean b) {
            packetAuth = b;
            return this;
        }

        /**
         * {@return the settings}
         *
         * @throws IllegalArgumentException when a setting is out of its range (see {@link EndpointConfig})
         */
        public EndpointConfig build() {
            return new EndpointConfig(
                    sendQueueDepth,
                    recvQueueDepth,
                    inlineSize,
                    messageSize,
                    slabSize,
                    cqSize,
                    pollMode,
                    timeout,
                    device,
                    localAddress,
                    privateData,
                    retryConnect,
                    connectionManager,
                    remoteAccess,
                    maxConnections,
                    maxPendingHandshakes,
                    maxPendingHandshakesPerSource > 0
                            ? maxPendingHandshakesPerSource
                            : defaultMaxPendingHandshakesPerSource(maxPendingHandshakes),
                    packetAuth);
        }

        /**
         * Connects a client endpoint with this config, as {@link Endpoint#connect(String, int, EndpointConfig)}.
         *
         * @param host the server's host name or address
         * @param port the server's port
         * @return the connected endpoint
         * @throws RdmaConnectException when set-up fails; its reason says how
         * @throws IllegalArgumentException when a setting is out of its range
         */
        public Endpoint connect(String host, int port) throws RdmaConnectException {
            return Endpoint.connect(host, port, build());
        }

        /**
         * Binds a server endpoint with this config, as {@link ServerEndpoint#bind(InetSocketAddress, EndpointConfig)}.
         *
         * @param address the local address and port to listen on (port 0: any free port)
         * @return the listening server endpoint
         * @throws RdmaConnectException when binding fails (e.g. the port is taken, or no RDMA device has the address)
         * @throws IllegalArgumentException when a setting is out of its range
         */
        public ServerEndpoint bind(InetSocketAddress address) throws RdmaConnectException {
            return ServerEndpoint.bind(address, build());
        }
    }
}
