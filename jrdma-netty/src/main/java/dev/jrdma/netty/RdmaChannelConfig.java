package dev.jrdma.netty;

import dev.jrdma.connect.EndpointConfig;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;

import java.util.Map;
import java.util.Objects;

/**
 * Settings of a jrdma channel: Netty's (water marks, auto-read, connect timeout, allocator) plus
 * {@link RdmaChannelOption#ENDPOINT_CONFIG} and {@link ChannelOption#ALLOW_HALF_CLOSURE}. {@code TCP_NODELAY} and
 * {@code SO_KEEPALIVE} are accepted and have nothing to change.
 */
public final class RdmaChannelConfig extends DefaultChannelConfig {
    /**
     * What a channel uses unless told otherwise: 16 KiB messages (a Netty write is cut into messages of at most
     * the peer's size), 32 receive buffers (the peer's credits) and 32 sends in flight: 1 MiB of registered memory
     * per connection.
     */
    public static final EndpointConfig DEFAULT_ENDPOINT_CONFIG = EndpointConfig.builder()
            .messageSize(16 * 1024).recvQueueDepth(32).sendQueueDepth(32).build();

    private volatile EndpointConfig endpointConfig = DEFAULT_ENDPOINT_CONFIG;
    private volatile boolean allowHalfClosure;

    RdmaChannelConfig(Channel channel) {
        super(channel);
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
     * {@return whether the peer's shutdown of its output only shuts this channel's input
     * ({@link ChannelOption#ALLOW_HALF_CLOSURE}) rather than closing the channel}
     */
    public boolean isAllowHalfClosure() {
        return allowHalfClosure;
    }

    /**
     * Sets {@link ChannelOption#ALLOW_HALF_CLOSURE}.
     *
     * @param allow true to keep the channel open for writing when the peer shuts its output
     * @return this
     */
    public RdmaChannelConfig setAllowHalfClosure(boolean allow) {
        this.allowHalfClosure = allow;
        return this;
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), RdmaChannelOption.ENDPOINT_CONFIG, ChannelOption.ALLOW_HALF_CLOSURE);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == RdmaChannelOption.ENDPOINT_CONFIG) return (T) endpointConfig;
        if (option == ChannelOption.ALLOW_HALF_CLOSURE) return (T) Boolean.valueOf(allowHalfClosure);
        if (option == ChannelOption.TCP_NODELAY) return (T) Boolean.TRUE;
        return super.getOption(option);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        if (option == RdmaChannelOption.ENDPOINT_CONFIG) {
            setEndpointConfig((EndpointConfig) value);
        } else if (option == ChannelOption.ALLOW_HALF_CLOSURE) {
            setAllowHalfClosure((Boolean) value);
        } else if (option == ChannelOption.TCP_NODELAY || option == ChannelOption.SO_KEEPALIVE) {
            // socket programs (gRPC among them) set these: an RDMA send goes out at once, and a lost peer is
            // detected by the connection itself, so both hold already
        } else {
            return super.setOption(option, value);
        }
        return true;
    }
}
