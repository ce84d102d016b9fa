package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One operation, from submission to completion. Operations are reused (see {@link EndpointCore#newOp}): nothing may keep one after
 * its completion has run ({@link #run}). Its description is built only when a failure needs it ({@link #what}).
 */
final class Operation implements Runnable {
    private static final System.Logger LOG = System.getLogger(Endpoint.class.getName());

    /**
     * The command that posts this operation on its group's owner, for a thread that is not the owner (made once per
     * operation object, which is reused: nothing is allocated per submission).
     */
    final Runnable submitOnOwner;

    OperationKind kind;
    CompletableFuture<Object> future; // null for the endpoint's own credit messages and listened sends
    SendListener listener; // a send of send(buf, offset, length, listener): told instead of a future
    long deadline;
    RemoteBuffer remote; // the peer's memory of a one-sided or atomic operation (for its description)
    long remoteOffset;
    Object result; // what the future completes with, or
    RdmaException error; // what it fails with
    RegisteredBuffer tmp; // pool buffer to give back on completion
    long laddr;
    int llen, lkey;
    long raddr, compare, swap;
    int rkey, imm;
    boolean inline;
    MemoryWindow mw;
    int newRkey;
    long bindAddr, bindLen;
    MemoryRegion bindRegion;
    Set<Access> bindAccess;
    long wrId;
    boolean posted; // handed to the device: it may use tmp until the WR's completion
    JfrEvents.OperationEvent recorded; // a sampled operation's flight-recorder event, else null

    Operation(EndpointCore endpoint) {
        submitOnOwner = () -> endpoint.submitQueued(this);
    }

    /** Makes a spare op a new operation: every field as a new one would have it. */
    Operation reset(OperationKind newKind, CompletableFuture<Object> newFuture, long newDeadline) {
        kind = newKind;
        future = newFuture;
        listener = null;
        deadline = newDeadline;
        remote = null;
        remoteOffset = 0;
        result = null;
        error = null;
        tmp = null;
        laddr = 0;
        llen = lkey = 0;
        raddr = compare = swap = 0;
        rkey = imm = 0;
        inline = false;
        mw = null;
        newRkey = 0;
        bindAddr = bindLen = 0;
        bindRegion = null;
        bindAccess = null;
        wrId = 0;
        posted = false;
        recorded = null;
        return this;
    }

    /** What the operation is, for the messages of its failures (built only then: nothing per operation). */
    String what() {
        return switch (kind) {
            case SEND -> "send of " + llen + " bytes";
            case WRITE -> "RDMA write of " + llen + " bytes to " + remote;
            case WRITE_IMM -> "RDMA write with immediate of " + llen + " bytes to " + remote;
            case READ -> "RDMA read of " + llen + " bytes from " + remote;
            case CAS -> "compare-and-swap at " + remote + "+" + remoteOffset;
            case FAA -> "fetch-and-add at " + remote + "+" + remoteOffset;
            case BIND -> "bind of a memory window over " + bindLen + " bytes";
            case INVALIDATE -> "invalidation of memory window rkey 0x" + Integer.toHexString(newRkey);
            case CREDIT -> "credit update";
        };
    }

    /** Completes the future (or tells the listener), at the end of the owner's step (the endpoint's state is whole). */
    @Override
    public void run() {
        if (listener != null) {
            try {
                listener.sent(error);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "a send listener threw " + e, e);
            }
        } else if (error != null) {
            future.completeExceptionally(error);
        } else {
            future.complete(result);
        }
    }

    /** Whether someone waits for this operation's end (a future or a listener): else it is the endpoint's own. */
    boolean awaited() {
        return future != null || listener != null;
    }

    boolean needsCredit() {
        return kind == OperationKind.SEND || kind == OperationKind.WRITE_IMM;
    }
}
