package dev.jrdma.netty;

import dev.jrdma.connect.EndpointConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannelConfig;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a jrdma channel: Netty's (water marks, auto-read, auto-close, connect timeout, allocators),
 * {@link RdmaChannelOption#ENDPOINT_CONFIG} and {@link ChannelOption#ALLOW_HALF_CLOSURE}, and the socket options of
 * {@link SocketChannelConfig}, so that a program written for {@code SocketChannel}s configures this channel too.
 *
 * <p>The socket options that have nothing to act on over RDMA are accepted, read back as set, and change nothing:
 * <ul>
 *   <li>{@code TCP_NODELAY}: an RDMA send leaves at once; it always reads back true.</li>
 *   <li>{@code SO_KEEPALIVE}: a lost peer is detected by the connection itself (retries, then an error).</li>
 *   <li>{@code SO_LINGER}: a close is always graceful: it waits for the sends in flight and the peer's goodbye,
 *       bounded by the endpoint's timeout, on a thread of its own.</li>
 *   <li>{@code IP_TOS}, {@code SO_REUSEADDR}, performance preferences.</li>
 *   <li>{@code SO_SNDBUF} and {@code SO_RCVBUF} read back what the connection has: send queue depth, and receive
 *       queue depth (the peer's credits), times the message size; setting them changes nothing (set
 *       {@link RdmaChannelOption#ENDPOINT_CONFIG} instead).</li>
 * </ul>
 */
public final class RdmaChannelConfig extends DefaultChannelConfig implements SocketChannelConfig {
    /**
     * What a channel uses unless told otherwise: 16 KiB messages (a Netty write is cut into messages of at most
     * the peer's size), 32 receive buffers (the peer's credits) and 32 sends in flight: 1 MiB of registered memory
     * per connection.
     */
    public static final EndpointConfig DEFAULT_ENDPOINT_CONFIG = EndpointConfig.builder()
            .messageSize(16 * 1024)
            .recvQueueDepth(32)
            .sendQueueDepth(32)
            .build();

    private static final OptionTable<RdmaChannelConfig> OPTIONS = new OptionTable<RdmaChannelConfig>()
            .add(
                    RdmaChannelOption.ENDPOINT_CONFIG,
                    RdmaChannelConfig::getEndpointConfig,
                    RdmaChannelConfig::setEndpointConfig)
            .add(
                    ChannelOption.ALLOW_HALF_CLOSURE,
                    RdmaChannelConfig::isAllowHalfClosure,
                    RdmaChannelConfig::setAllowHalfClosure)
            .add(ChannelOption.TCP_NODELAY, RdmaChannelConfig::isTcpNoDelay, RdmaChannelConfig::setTcpNoDelay)
            .add(ChannelOption.SO_KEEPALIVE, RdmaChannelConfig::isKeepAlive, RdmaChannelConfig::setKeepAlive)
            .add(ChannelOption.SO_LINGER, RdmaChannelConfig::getSoLinger, RdmaChannelConfig::setSoLinger)
            .add(ChannelOption.SO_SNDBUF, RdmaChannelConfig::getSendBufferSize, RdmaChannelConfig::setSendBufferSize)
            .add(
                    ChannelOption.SO_RCVBUF,
                    RdmaChannelConfig::getReceiveBufferSize,
                    RdmaChannelConfig::setReceiveBufferSize)
            .add(ChannelOption.IP_TOS, RdmaChannelConfig::getTrafficClass, RdmaChannelConfig::setTrafficClass)
            .add(ChannelOption.SO_REUSEADDR, RdmaChannelConfig::isReuseAddress, RdmaChannelConfig::setReuseAddress);

    private final RdmaChannel channel;
    private volatile EndpointConfig endpointConfig = DEFAULT_ENDPOINT_CONFIG;
    private volatile boolean allowHalfClosure;
    private volatile boolean keepAlive;
    private volatile int soLinger = -1;
    private volatile int trafficClass;
    private volatile boolean reuseAddress;

    RdmaChannelConfig(RdmaChannel channel) {
        super(channel);
        this.channel = channel;
    }

    /**
     * {@return the endpoint settings a connection of this channel is made with ({@link RdmaChannelOption#ENDPOINT_CONFIG})}
     */
    public EndpointConfig getEndpointConfig() {
        return endpointConfig;
    }

    /**
     * Sets the endpoint settings ({@link RdmaChannelOption#ENDPOINT_CONFIG}); they apply to a connection made after the call.
     *
     * @param cfg message size, queue depths, connection manager and the rest
     * @return this
     * @throws NullPointerException when {@code cfg} is null
     */
    public RdmaChannelConfig setEndpointConfig(EndpointConfig cfg) {
        this.endpointConfig = Objects.requireNonNull(cfg, "endpoint config");
        return this;
    }

    /**
     * {@return whether the peer's shutdown of its output (or its close) only shuts this channel's input
     * ({@link ChannelOption#ALLOW_HALF_CLOSURE}) rather than closing the channel}
     */
    @Override
    public boolean isAllowHalfClosure() {
        return allowHalfClosure;
    }

    /**
     * Sets {@link ChannelOption#ALLOW_HALF_CLOSURE}.
     *
     * @param allow true to keep the channel open for writing when the peer shuts its output
     * @return this
     */
    @Override
    public RdmaChannelConfig setAllowHalfClosure(boolean allow) {
        this.allowHalfClosure = allow;
        return this;
    }

    /** {@return true: an RDMA send leaves at once (there is no Nagle to turn off)} */
    @Override
    public boolean isTcpNoDelay() {
        return true;
    }

    /** Accepted and without effect: an RDMA send leaves at once. */
    @Override
    public RdmaChannelConfig setTcpNoDelay(boolean tcpNoDelay) {
        return this;
    }

    /** {@return the value set with {@link #setSoLinger} (-1 unless set); a close is always graceful} */
    @Override
    public int getSoLinger() {
        return soLinger;
    }

    /** Kept and without effect: a close always waits for the sends in flight, bounded by the endpoint's timeout. */
    @Override
    public RdmaChannelConfig setSoLinger(int soLinger) {
        this.soLinger = soLinger;
        return this;
    }

    /** {@return the bytes this side can have in flight: send queue depth times message size} */
    @Override
    public int getSendBufferSize() {
        EndpointConfig c = endpointConfig;
        return bufferBytes(c.sendQueueDepth(), c.messageSize());
    }

    /** Accepted and without effect: the send queue depth of {@link RdmaChannelOption#ENDPOINT_CONFIG} sets it. */
    @Override
    public RdmaChannelConfig setSendBufferSize(int sendBufferSize) {
        return this;
    }

    /** {@return the bytes the peer can send before this side reads: receive queue depth times message size} */
    @Override
    public int getReceiveBufferSize() {
        EndpointConfig c = endpointConfig;
        return bufferBytes(c.recvQueueDepth(), c.messageSize());
    }

    /** Accepted and without effect: the receive queue depth of {@link RdmaChannelOption#ENDPOINT_CONFIG} sets it. */
    @Override
    public RdmaChannelConfig setReceiveBufferSize(int receiveBufferSize) {
        return this;
    }

    /** {@return the value set with {@link #setKeepAlive}} */
    @Override
    public boolean isKeepAlive() {
        return keepAlive;
    }

    /** Kept and without effect: the connection detects a lost peer itself (retries, then an error). */
    @Override
    public RdmaChannelConfig setKeepAlive(boolean keepAlive) {
        this.keepAlive = keepAlive;
        return this;
    }

    /** {@return the value set with {@link #setTrafficClass}} */
    @Override
    public int getTrafficClass() {
        return trafficClass;
    }

    /** Kept and without effect. */
    @Override
    public RdmaChannelConfig setTrafficClass(int trafficClass) {
        this.trafficClass = trafficClass;
        return this;
    }

    /** {@return the value set with {@link #setReuseAddress}} */
    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    /** Kept and without effect. */
    @Override
    public RdmaChannelConfig setReuseAddress(boolean reuseAddress) {
        this.reuseAddress = reuseAddress;
        return this;
    }

    /** Accepted and without effect. */
    @Override
    public RdmaChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        return this;
    }

    @Override
    public RdmaChannelConfig setConnectTimeoutMillis(int connectTimeoutMillis) {
        super.setConnectTimeoutMillis(connectTimeoutMillis);
        return this;
    }

    @Override
    @Deprecated
    public RdmaChannelConfig setMaxMessagesPerRead(int maxMessagesPerRead) {
        super.setMaxMessagesPerRead(maxMessagesPerRead);
        return this;
    }

    @Override
    public RdmaChannelConfig setWriteSpinCount(int writeSpinCount) {
        super.setWriteSpinCount(writeSpinCount);
        return this;
    }

    @Override
    public RdmaChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public RdmaChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public RdmaChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public RdmaChannelConfig setAutoClose(boolean autoClose) {
        super.setAutoClose(autoClose);
        return this;
    }

    @Override
    public RdmaChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    public RdmaChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark writeBufferWaterMark) {
        super.setWriteBufferWaterMark(writeBufferWaterMark);
        return this;
    }

    /** Auto-read turned off: a read requested by auto-read is no longer wanted. */
    @Override
    protected void autoReadCleared() {
        channel.clearReadPending();
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

    /** {@return the bytes of {@code buffers} messages of {@code messageSize} bytes, at most Integer.MAX_VALUE} */
    static int bufferBytes(int buffers, int messageSize) {
        return (int) Math.min(Integer.MAX_VALUE, (long) buffers * messageSize);
    }
}
