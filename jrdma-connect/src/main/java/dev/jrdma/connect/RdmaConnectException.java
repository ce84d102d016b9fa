package dev.jrdma.connect;

import java.io.IOException;

/** Setting up a connection failed. {@link #reason()} says which way; the message says what happened and what to do. */
public class RdmaConnectException extends IOException {
    /** Why a connection could not be set up. */
    public enum Reason {
        /** Nothing accepts connections at the address (TCP connection refused). */
        NOTHING_LISTENING,
        /** No answer within the configured timeout. */
        TIMEOUT,
        /** The peer closed the connection or vanished during the handshake. */
        PEER_GONE,
        /** The two sides speak different versions of the handshake. */
        VERSION_MISMATCH,
        /** The address could not be resolved, bound or routed to. */
        ADDRESS_ERROR,
        /** The server refused the connection. */
        REJECTED,
        /** The peer sent something that is not the jrdma handshake. */
        PROTOCOL_ERROR,
        /** The RDMA device could not be opened or its QP could not be set up. */
        DEVICE_ERROR
    }

    /** Why set-up failed (part of the serialized form). */
    private final Reason reason;

    /**
     * A set-up failure.
     *
     * @param reason  which way it failed
     * @param message what happened and what to do
     */
    public RdmaConnectException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * A set-up failure with its cause.
     *
     * @param reason  which way it failed
     * @param message what happened and what to do
     * @param cause   the underlying exception (e.g. the socket's, or a {@code VerbsException})
     */
    public RdmaConnectException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /** {@return which way set-up failed} */
    public Reason reason() {
        return reason;
    }
}
