package dev.jrdma.connect;

import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The JDK Flight Recorder events of jrdma-connect, so RDMA shows up in the tools Java users already have (JMC,
 * {@code jfr print}, event streaming): each connection set-up with its duration and outcome, each endpoint that ends
 * in an error, and a sample of the operations. Enable with {@code -XX:StartFlightRecording} or a {@code Recording};
 * the event names are {@code dev.jrdma.ConnectionSetup}, {@code dev.jrdma.ConnectionError} and
 * {@code dev.jrdma.Operation}.
 *
 * <p>Operations are sampled so that recording costs nothing measurable on the data path: one operation in
 * {@code -Djrdma.jfr.operationSampling=N} (default 1024; 1 records every operation) carries an event, which starts
 * when the operation is submitted and is committed when it completes or fails.
 */
final class JfrEvents {
    private JfrEvents() {}

    /** One in this many operations is recorded (when the Operation event is enabled). */
    private static volatile long operationSampling = Math.max(1, Long.getLong("jrdma.jfr.operationSampling", 1024));

    private static final AtomicLong OPERATIONS = new AtomicLong();
    private static final EventType OPERATION_TYPE = EventType.getEventType(OperationEvent.class);

    @Name("dev.jrdma.ConnectionSetup")
    @Label("RDMA Connection Set-up")
    @Category({"jrdma", "Connection"})
    @Description(
            "A connection's set-up, from the first step to both queue pairs in RTS, or to the failure that ended it")
    @StackTrace(false)
    static final class SetupEvent extends Event {
        @Label("Role")
        @Description("client or server")
        String role;

        @Label("Method")
        @Description("how the queue pairs' parameters were exchanged: tcp (jrdma's out-of-band exchange) or rdma_cm")
        String method;

        @Label("Peer")
        String peer;

        @Label("Device")
        String device;

        @Label("Local QP Number")
        int localQpn;

        @Label("Remote QP Number")
        int remoteQpn;

        @Label("Succeeded")
        boolean succeeded;

        @Label("Failure")
        @Description("why the set-up failed (RdmaConnectException's reason and message); empty when it succeeded")
        String failure;
    }

    @Name("dev.jrdma.ConnectionError")
    @Label("RDMA Connection Error")
    @Category({"jrdma", "Connection"})
    @Description(
            "An established connection ended by an error: a failed work completion, a timeout, a protocol violation, the peer gone, or a throwing handler")
    @StackTrace(false)
    static final class ErrorEvent extends Event {
        @Label("Peer")
        String peer;

        @Label("Device")
        String device;

        @Label("Local QP Number")
        int localQpn;

        @Label("Kind")
        @Description("RdmaException.Kind")
        String kind;

        @Label("Work Completion Status")
        @Description("the failed completion's status (ibv_wc_status name), empty when no completion was involved")
        String status;

        @Label("Message")
        String message;
    }

    @Name("dev.jrdma.Operation")
    @Label("RDMA Operation (sampled)")
    @Category({"jrdma", "Operation"})
    @Description(
            "One sampled operation of an endpoint, from its submission to its completion (-Djrdma.jfr.operationSampling: one in N)")
    @StackTrace(false)
    static final class OperationEvent extends Event {
        @Label("Operation")
        @Description("SEND, WRITE, WRITE_IMM, READ, CAS, FAA, BIND or INVALIDATE")
        String operation;

        @Label("Bytes")
        @DataAmount
        long bytes;

        @Label("Local QP Number")
        int localQpn;

        @Label("Succeeded")
        boolean succeeded;

        @Label("Failure")
        String failure;
    }

    /** A connection set-up: client connect, or a server's handshake of one client. */
    @FunctionalInterface
    interface SetupSteps {
        Endpoint run() throws RdmaConnectException;
    }

    /**
     * Runs a connection set-up and records it as one {@code dev.jrdma.ConnectionSetup} event (when enabled): its
     * duration, and the endpoint it made or the failure that ended it (rethrown as it was).
     */
    static Endpoint recordSetup(String role, boolean rdmaCm, String peer, SetupSteps steps)
            throws RdmaConnectException {
        SetupEvent e = beginSetup();
        try {
            Endpoint ep = steps.run();
            endSetup(e, role, rdmaCm, peer, ep, null);
            return ep;
        } catch (RdmaConnectException | RuntimeException failure) {
            endSetup(e, role, rdmaCm, peer, null, failure);
            throw failure;
        }
    }

    /** Starts timing a connection set-up; null when nobody records the event. */
    private static SetupEvent beginSetup() {
        SetupEvent e = new SetupEvent();
        if (!e.isEnabled()) return null;
        e.begin();
        return e;
    }

    private static void endSetup(
            SetupEvent e, String role, boolean rdmaCm, String peer, Endpoint ep, Throwable failure) {
        if (e == null) return;
        e.end();
        if (!e.shouldCommit()) return;
        e.role = role;
        e.method = rdmaCm ? "rdma_cm" : "tcp";
        e.peer = peer;
        if (ep != null) {
            e.device = ep.group().device().name();
            e.localQpn = ep.qpNum();
            e.remoteQpn = ep.remoteParams() == null ? 0 : ep.remoteParams().qpNum();
        }
        e.succeeded = failure == null;
        e.failure = failure == null ? "" : describe(failure);
        e.commit();
    }

    static void error(Endpoint ep, RdmaException cause) {
        ErrorEvent e = new ErrorEvent();
        if (!e.shouldCommit()) return;
        e.peer = String.valueOf(ep.remoteAddress());
        e.device = ep.group().device().name();
        e.localQpn = ep.qpNum();
        e.kind = cause.kind().name();
        e.status = cause.status() == null ? "" : cause.status().name();
        e.message = cause.getMessage();
        e.commit();
    }

    /** Records one operation in {@code n} from now on (tests). */
    static void operationSampling(long n) {
        if (n < 1) throw new IllegalArgumentException("sampling must be at least 1 (every operation), not " + n);
        operationSampling = n;
    }

    /** A begun event for one operation in {@code operationSampling}, else null (no allocation for the others). */
    static OperationEvent sampleOperation() {
        if (!OPERATION_TYPE.isEnabled() || OPERATIONS.getAndIncrement() % operationSampling != 0) return null;
        OperationEvent e = new OperationEvent();
        e.begin();
        return e;
    }

    static void endOperation(OperationEvent e, String operation, long bytes, int localQpn, RdmaException failure) {
        e.end();
        if (!e.shouldCommit()) return;
        e.operation = operation;
        e.bytes = bytes;
        e.localQpn = localQpn;
        e.succeeded = failure == null;
        e.failure = failure == null ? "" : failure.kind() + ": " + failure.getMessage();
        e.commit();
    }

    private static String describe(Throwable t) {
        if (t instanceof RdmaConnectException c) return c.reason() + ": " + c.getMessage();
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
}
