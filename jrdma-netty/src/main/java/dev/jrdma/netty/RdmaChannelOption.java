package dev.jrdma.netty;

import dev.jrdma.connect.EndpointConfig;
import io.netty.channel.ChannelOption;

/** Options of jrdma channels, beside Netty's own ({@code CONNECT_TIMEOUT_MILLIS}, water marks, auto-read...). */
public final class RdmaChannelOption {
    /**
     * The endpoint settings of a connection: queue depths (credits), message size, poll mode, device, connection
     * manager (TCP exchange or rdma_cm), operation timeout. On a server channel it applies to every accepted child.
     */
    public static final ChannelOption<EndpointConfig> ENDPOINT_CONFIG =
            ChannelOption.valueOf(RdmaChannelOption.class, "ENDPOINT_CONFIG");

    private RdmaChannelOption() {}
}
