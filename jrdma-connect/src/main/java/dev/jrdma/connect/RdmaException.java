package dev.jrdma.connect;

import dev.jrdma.verbs.WcStatus;

/**
 * An operation on an endpoint failed: a failed completion (with its {@link WcStatus}, explained), a timeout,
 * or a connection that is closed or lost. Futures complete exceptionally with it; blocking methods throw it.
 */
public class RdmaException extends RuntimeException {
    /** What kind of failure. */
    public enum Kind {
        /** A work request completed with an error; {@link #status()} says which, and the message explains it. */
        COMPLETION_ERROR,
        /**
         * No completion, credit or message within the configured timeout ({@link EndpointConfig#timeout()}); an
         * operation posted and not completed in time also ends the endpoint.
         */
        TIMEOUT,
        /** The endpoint is closed or closing (by this side), or the waiting thread was interrupted. */
        CLOSED,
        /** The peer closed the connection (it said goodbye); what was not sent or received by then fails. */
        PEER_CLOSED,
        /** The peer went away without a goodbye: its process ended or crashed, or the network failed. */
        PEER_GONE,
        /** The device refused to post a work request ({@code ibv_post_send}/{@code ibv_post_recv} failed). */
        POST_ERROR,
        /** The peer broke the endpoint protocol (e.g. sent a message without a credit): the connection is ended. */
        PROTOCOL_ERROR,
        /**
         * Code run on the completion thread for this endpoint threw an {@link Error} (the application's receive
         * handler) or something unexpected: it was logged, this endpoint is ended, the group's others go on.
         */
        HANDLER_ERROR
    }

    /** What kind of failure (part of the serialized form). */
    private final Kind kind;
    /** The failed completion's status, or null (part of the serialized form). */
    private final WcStatus status;

    /**
     * An exception of a kind, with the status of the failed completion.
     *
     * @param kind    what kind of failure
     * @param message what failed and why
     * @param status  the work completion's status for {@link Kind#COMPLETION_ERROR}, else null
     * @param cause   the underlying exception, or null
     */
    public RdmaException(Kind kind, String message, WcStatus status, Throwable cause) {
        super(message, cause);
        this.kind = kind;
        this.status = status;
    }

    /**
     * An exception of a kind without a completion status or cause.
     *
     * @param kind    what kind of failure
     * @param message what failed and why
     */
    public RdmaException(Kind kind, String message) {
        this(kind, message, null, null);
    }

    /** {@return what kind of failure} */
    public Kind kind() {
        return kind;
    }

    /** {@return the completion status when a work request failed ({@link Kind#COMPLETION_ERROR}), else null} */
    public WcStatus status() {
        return status;
    }
}
