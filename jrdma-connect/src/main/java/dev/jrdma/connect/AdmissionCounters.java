package dev.jrdma.connect;

/**
 * What a server refused or cut off since it was bound ({@link ServerEndpoint#counters()}): every drop is counted.
 *
 * @param refusedMaxConnections       clients rejected because the server held {@link EndpointConfig#maxConnections()}
 * @param refusedMaxPendingHandshakes connections rejected because {@link EndpointConfig#maxPendingHandshakes()}
 *                                    handshakes were in progress
 * @param refusedPerSource            connections rejected because their source address had
 *                                    {@link EndpointConfig#maxPendingHandshakesPerSource()} handshakes in progress
 * @param refusedNoResources          clients rejected because the device had no room for them (completion queues,
 *                                    queue pairs, registered memory)
 * @param handshakeDeadlines          handshakes disconnected at their deadline ({@link EndpointConfig#timeout()})
 * @param badHandshakes               handshakes ended because the client sent what the handshake does not allow (not a
 *                                    jrdma HELLO, invalid settings, another version, something else than READY)
 * @param controlViolations           connected peers disconnected for sending what the control channel does not carry
 * @param refusalsDropped             connections closed without a reason because too many refusals were being told
 *                                    already (a flood)
 */
public record AdmissionCounters(
        long refusedMaxConnections,
        long refusedMaxPendingHandshakes,
        long refusedPerSource,
        long refusedNoResources,
        long handshakeDeadlines,
        long badHandshakes,
        long controlViolations,
        long refusalsDropped) {}
