package dev.jrdma.netty;

import dev.jrdma.connect.RdmaException;
import dev.jrdma.verbs.WcStatus;
import io.netty.channel.ChannelException;

/**
 * An RDMA operation of a channel failed. When a work request completed in error, {@link #status()} is its
 * status and the message says what it means and what to do ({@link WcStatus#describe()}); {@link #kind()} tells a
 * timeout, a lost peer or a failed completion apart. The jrdma exception is the cause.
 */
public final class RdmaChannelException extends ChannelException {
    /** The kind of failure (part of the serialized form). */
    private final RdmaException.Kind kind;
    /** The failed completion's status, or null (part of the serialized form). */
    private final WcStatus status;

    RdmaChannelException(String what, RdmaException cause) {
        super(what + ": " + cause.getMessage() + explain(cause), cause);
        this.kind = cause.kind();
        this.status = cause.status();
    }

    private static String explain(RdmaException e) {
        // the endpoint's message names the status already; say it in full when it does not
        if (e.status() == null
                || e.getMessage() == null
                || e.getMessage().contains(e.status().describe())) return "";
        return " [" + e.status().describe() + "]";
    }

    /** {@return the kind of failure: a failed completion, a timeout, a lost peer...} */
    public RdmaException.Kind kind() {
        return kind;
    }

    /** {@return the work completion's status, or null when no work request failed (a timeout, a lost peer)} */
    public WcStatus status() {
        return status;
    }
}
