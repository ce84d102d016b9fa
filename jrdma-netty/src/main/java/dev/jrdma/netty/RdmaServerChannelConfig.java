package dev.jrdma.netty;

import dev.jrdma.connect.EndpointConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ServerChannelRecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ServerSocketChannelConfig;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a jrdma server channel: {@link RdmaChannelOption#ENDPOINT_CONFIG} (for every accepted connection),
 * Netty's own (auto-read: a server that does not read accepts nothing into its pipeline) and those of
 * {@link ServerSocketChannelConfig}.
 *
 * <p>{@code SO_BACKLOG} is the endpoint config's {@link EndpointConfig#maxPendingHandshakes()}: how many connections
 * may be in their handshake at once before the server rejects more (as a listening socket's backlog bounds the
 * connections not yet accepted). A server channel starts with {@value #DEFAULT_BACKLOG}, more than jrdma-connect's
 * own default ({@value EndpointConfig#DEFAULT_MAX_PENDING_HANDSHAKES}), so that a burst of a hundred connects is
 * admitted as a socket server admits it; an {@link RdmaChannelOption#ENDPOINT_CONFIG} set afterwards brings its own.
 * {@code SO_REUSEADDR} and performance preferences are accepted, read back as set, and change nothing.
 * {@code SO_RCVBUF} reads back the accepted connections' receive queue depth times message size; setting it changes
 * nothing.
 */
public final class RdmaServerChannelConfig extends DefaultChannelConfig implements ServerSocketChannelConfig {
    /** A server channel's {@code SO_BACKLOG} (its endpoint config's {@code maxPendingHandshakes}) unless set. */
    public static final int DEFAULT_BACKLOG = 128;

    private static final OptionTable<RdmaServerChannelConfig> OPTIONS = new OptionTable<RdmaServerChannelConfig>()
            .add(
                    RdmaChannelOption.ENDPOINT_CONFIG,
                    RdmaServerChannelConfig::getEndpointConfig,
                    RdmaServerChannelConfig::setEndpointConfig)
            .add(ChannelOption.SO_BACKLOG, RdmaServerChannelConfig::getBacklog, RdmaServerChannelConfig::setBacklog)
            .add(
                    ChannelOption.SO_REUSEADDR,
                    RdmaServerChannelConfig::isReuseAddress,
                    RdmaServerChannelConfig::setReuseAddress)
            .add(
                    ChannelOption.SO_RCVBUF,
                    RdmaServerChannelConfig::getReceiveBufferSize,
                    RdmaServerChannelConfig::setReceiveBufferSize);

    private volatile EndpointConfig endpointConfig = RdmaChannelConfig.DEFAULT_ENDPOINT_CONFIG.toBuilder()
            .maxPendingHandshakes(DEFAULT_BACKLOG)
            .build();
    private volatile boolean reuseAddress;

    RdmaServerChannelConfig(RdmaServerChannel channel) {
        super(channel, new ServerChannelRecvByteBufAllocator());
    }

    /** {@return the endpoint settings of the server and of each connection it accepts} */
    public EndpointConfig getEndpointConfig() {
        return endpointConfig;
    }

    /**
     * Sets the endpoint settings ({@link RdmaChannelOption#ENDPOINT_CONFIG}); they apply when the channel binds.
     *
     * @param cfg message size, queue depths, connection manager, admission limits and the rest
     * @return this
     * @throws NullPointerException when {@code cfg} is null
     */
    public RdmaServerChannelConfig setEndpointConfig(EndpointConfig cfg) {
        this.endpointConfig = Objects.requireNonNull(cfg, "endpoint config");
        return this;
    }

    /** {@return the handshakes the server runs at once before it rejects more: the endpoint config's maxPendingHandshakes} */
    @Override
    public int getBacklog() {
        return endpointConfig.maxPendingHandshakes();
    }

    /**
     * Sets the endpoint config's {@code maxPendingHandshakes}; it applies when the channel binds.
     *
     * @param backlog at least 1 (0, a socket's "the system's default", is {@value #DEFAULT_BACKLOG})
     * @return this
     * @throws IllegalArgumentException when {@code backlog} is negative
     */
    @Override
    public RdmaServerChannelConfig setBacklog(int backlog) {
        if (backlog < 0) throw new IllegalArgumentException("backlog: " + backlog + " (expected: >= 0)");
        endpointConfig = endpointConfig.toBuilder()
                .maxPendingHandshakes(backlog == 0 ? DEFAULT_BACKLOG : backlog)
                .build();
        return this;
    }

    /** {@return the value set with {@link #setReuseAddress}} */
    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    /** Kept and without effect. */
    @Override
    public RdmaServerChannelConfig setReuseAddress(boolean reuseAddress) {
        this.reuseAddress = reuseAddress;
        return this;
    }

    /** {@return what each accepted connection can receive before it reads: receive queue depth times message size} */
    @Override
    public int getReceiveBufferSize() {
        EndpointConfig c = endpointConfig;
        return RdmaChannelConfig.bufferBytes(c.recvQueueDepth(), c.messageSize());
    }

    /** Accepted and without effect: the receive queue depth of {@link RdmaChannelOption#ENDPOINT_CONFIG} sets it. */
    @Override
    public RdmaServerChannelConfig setReceiveBufferSize(int receiveBufferSize) {
        return this;
    }

    /** Accepted and without effect. */
    @Override
    public RdmaServerChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        return this;
    }

    @Override
    public RdmaServerChannelConfig setConnectTimeoutMillis(int connectTimeoutMillis) {
        super.setConnectTimeoutMillis(connectTimeoutMillis);
        return this;
    }

    @Override
    @Deprecated
    public RdmaServerChannelConfig setMaxMessagesPerRead(int maxMessagesPerRead) {
        super.setMaxMessagesPerRead(maxMessagesPerRead);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setWriteSpinCount(int writeSpinCount) {
        super.setWriteSpinCount(writeSpinCount);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    @Deprecated
    public RdmaServerChannelConfig setWriteBufferHighWaterMark(int writeBufferHighWaterMark) {
        super.setWriteBufferHighWaterMark(writeBufferHighWaterMark);
        return this;
    }

    @Override
    @Deprecated
    public RdmaServerChannelConfig setWriteBufferLowWaterMark(int writeBufferLowWaterMark) {
        super.setWriteBufferLowWaterMark(writeBufferLowWaterMark);
        return this;
    }

    @Override
    public RdmaServerChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark writeBufferWaterMark) {
        super.setWriteBufferWaterMark(writeBufferWaterMark);
        return this;
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), OPTIONS.options());
    }

    @Override
    public <T> T getOption(ChannelOption<T> option) {
        return OPTIONS.get(this, option, super::getOption);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        return OPTIONS.set(this, option, value, super::setOption);
    }
}
