package dev.jrdma.connect;

import dev.jrdma.verbs.WcStatus;

/**
 * An operation on an endpoint failed: a failed completion (with its {@link WcStatus}, explained), a timeout,
 * or a connection that is closed or lost. Futures complete exceptionally with it; blocking methods throw it.
 */
public class RdmaException extends RuntimeException {
    /** What kind of failure. */
    public enum Kind {
        COMPLETION_ERROR, TIMEOUT, CLOSED, PEER_CLOSED, PEER_GONE, POST_ERROR,
        /** The peer broke the endpoint protocol (e.g. sent a message without a credit): the connection is ended. */
        PROTOCOL_ERROR,
        /**
         * Code run on the completion thread for this endpoint threw an {@link Error} (the application's receive
         * handler) or something unexpected: it was logged, this endpoint is ended, the group's others go on.
         */
        HANDLER_ERROR
    }

    private final Kind kind;
    private final WcStatus status;

    public RdmaException(Kind kind, String message, WcStatus status, Throwable cause) {
        super(message, cause);
        this.kind = kind;
        this.status = status;
    }

    public RdmaException(Kind kind, String message) {
        this(kind, message, null, null);
    }

    public Kind kind() {
        return kind;
    }

    /** The completion status when a work request failed, else null. */
    public WcStatus status() {
        return status;
    }
}
