package dev.jrdma.connect;

import dev.jrdma.verbs.VerbsException;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * A server's admission control (issue 21): who may start a handshake, for how long, and what is refused, each
 * refusal counted. Before a handshake: at most {@link EndpointConfig#maxPendingHandshakes()} at once and at most
 * {@link EndpointConfig#maxPendingHandshakesPerSource()} from one source address. During it: a deadline of
 * {@link EndpointConfig#timeout()} on the server's clock, enforced by {@link #sweep} (which disconnects a handshake
 * past it) as well as by the handshake's own reads. Before any resource of a connection is taken: the connection cap
 * and a completion queue with room ({@link EndpointGroup#reserve}); a client refused there gets a REJECT naming the
 * limit ({@link #create}).
 */
final class Admission {
    private static final System.Logger LOG = System.getLogger(Admission.class.getName());

    /** A connection refused before anything was made for it; the message is the reason the client is told. */
    static final class Refused extends IllegalStateException {
        /** What was reached. */
        enum Limit {
            /** The server's {@link EndpointConfig#maxConnections()}. */
            CONNECTIONS,
            /** The device has no room (completion queues, queue pairs, registered memory). */
            RESOURCES
        }

        private final Limit limit;

        Refused(Limit limit, String reason) {
            this(limit, reason, null);
        }

        Refused(Limit limit, String reason, Throwable cause) {
            super(reason, cause);
            this.limit = limit;
        }

        Limit limit() {
            return limit;
        }
    }

    /** Sends the client a rejection with a reason (never throws: a client that is gone sees nothing). */
    @FunctionalInterface
    interface Rejecter {
        void reject(String reason) throws IOException;
    }

    /**
     * Makes a connection's endpoint, or rejects the client with the reason when the server cannot take it: the
     * connection cap, no completion queue with room, or the device refusing a queue pair or memory. Whatever the
     * failure, the client is told (a REJECT naming the limit) instead of seeing the connection close; the group counts
     * the refusal before the client is told.
     *
     * @throws RdmaConnectException REJECTED, its cause the {@link Refused} that says which limit
     */
    static Endpoint create(EndpointGroup group, Supplier<Endpoint> make, Rejecter rejecter, String where)
            throws RdmaConnectException {
        Refused refused;
        try {
            return make.get();
        } catch (Refused r) {
            refused = r;
        } catch (VerbsException | IllegalStateException e) {
            refused = new Refused(
                    Refused.Limit.RESOURCES,
                    "the server cannot set up another connection now (" + e.getMessage() + "); try again later",
                    e);
        }
        group.countRefusal(refused.limit());
        try {
            rejecter.reject(refused.getMessage());
        } catch (IOException | RuntimeException ignored) {
            // the client is gone: it sees the connection end
        }
        throw new RdmaConnectException(
                RdmaConnectException.Reason.REJECTED,
                "rejected the client at " + where + ": " + refused.getMessage(),
                refused);
    }

    /** A handshake admitted by {@link #enter}, or refused (then {@link #refusal()} says why). */
    final class Ticket implements AutoCloseable {
        private final InetAddress source;
        private final Closeable connection;
        private final long deadline;
        private final String refusal;
        private boolean done; // guarded by Admission.this
        private volatile boolean expired;

        private Ticket(InetAddress source, Closeable connection, long deadline, String refusal) {
            this.source = source;
            this.connection = connection;
            this.deadline = deadline;
            this.refusal = refusal;
        }

        /** {@return why the handshake was refused, or null when it was admitted} */
        String refusal() {
            return refusal;
        }

        /** {@return whether {@link #sweep} disconnected it at its deadline} */
        boolean expired() {
            return expired;
        }

        /** The handshake ended (either way): its slot, and its source's, are free. Idempotent. */
        @Override
        public void close() {
            release(this);
        }
    }

    private final int maxPending;
    private final int maxPerSource;
    private final long deadlineNanos;
    private volatile Clock clock;
    // guarded by this
    private final Map<InetAddress, Integer> perSource = new HashMap<>();
    private final List<Ticket> pending = new ArrayList<>();
    private int refusing;

    private final LongAdder refusedMaxPending = new LongAdder();
    private final LongAdder refusedPerSource = new LongAdder();
    private final LongAdder handshakeDeadlines = new LongAdder();
    private final LongAdder badHandshakes = new LongAdder();
    private final LongAdder refusalsDropped = new LongAdder();

    Admission(EndpointConfig cfg, Clock clock) {
        this.maxPending = cfg.maxPendingHandshakes();
        this.maxPerSource = cfg.maxPendingHandshakesPerSource();
        this.deadlineNanos = cfg.timeout().toNanos();
        this.clock = clock;
    }

    /** Tests: the clock of the deadlines (nanoseconds, as {@link Clock#nanoTime}). */
    void clock(Clock c) {
        this.clock = c;
    }

    /**
     * Admits a handshake from {@code source} on {@code connection} (closed by {@link #sweep} at its deadline; null:
     * not swept), or refuses it (counted) with the limit it would pass.
     */
    synchronized Ticket enter(InetAddress address, Closeable connection) {
        InetAddress source = sourceOf(address);
        if (pending.size() >= maxPending) {
            refusedMaxPending.increment();
            return new Ticket(
                    source,
                    connection,
                    0,
                    "the server has " + maxPending + " handshakes in progress (maxPendingHandshakes); try again later");
        }
        int fromSource = perSource.getOrDefault(source, 0);
        if (fromSource >= maxPerSource) {
            refusedPerSource.increment();
            return new Ticket(
                    source,
                    connection,
                    0,
                    describe(source) + " has " + fromSource
                            + " handshakes in progress here (maxPendingHandshakesPerSource); try again later");
        }
        perSource.put(source, fromSource + 1);
        Ticket t = new Ticket(source, connection, clock.nanoTime() + deadlineNanos, null);
        pending.add(t);
        return t;
    }

    /**
     * The source a handshake counts against: an IPv4 address, or the /64 prefix of an IPv6 address (one host
     * usually holds a whole /64, so counting each of its addresses apart would not limit it).
     */
    static InetAddress sourceOf(InetAddress a) {
        if (!(a instanceof java.net.Inet6Address)) return a;
        byte[] b = a.getAddress();
        java.util.Arrays.fill(b, 8, 16, (byte) 0);
        try {
            return InetAddress.getByAddress(b);
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e); // 16 bytes: cannot happen
        }
    }

    private static String describe(InetAddress source) {
        return source instanceof java.net.Inet6Address ? source.getHostAddress() + "/64" : source.getHostAddress();
    }

    private synchronized void release(Ticket t) {
        if (t.refusal != null || t.done) return;
        t.done = true;
        pending.remove(t);
        perSource.merge(t.source, -1, (a, b) -> a + b == 0 ? null : a + b);
    }

    /** {@return handshakes in progress} */
    synchronized int pending() {
        return pending.size();
    }

    /**
     * Disconnects every handshake past its deadline on the server's clock (its thread then fails with TIMEOUT).
     *
     * @return how many it disconnected
     */
    int sweep() {
        List<Ticket> late = new ArrayList<>();
        synchronized (this) {
            long now = clock.nanoTime();
            for (Ticket t : pending) {
                if (!t.expired && t.connection != null && now - t.deadline >= 0) {
                    t.expired = true;
                    late.add(t);
                }
            }
        }
        for (Ticket t : late) {
            LOG.log(
                    System.Logger.Level.INFO,
                    () -> "the handshake from " + describe(t.source) + " passed its deadline ("
                            + deadlineNanos / 1_000_000 + " ms): disconnected");
            try {
                t.connection.close();
            } catch (IOException | RuntimeException ignored) {
                // closed anyway
            }
        }
        return late.size();
    }

    /**
     * Refusals that may linger at once, at least: a refusal costs a virtual thread and a socket for at most a second,
     * and a server with a small handshake cap still owes a client that retries at once its reason (with a cap of 1,
     * the retry could arrive while the first refusal still read its HELLO, and was closed without one).
     */
    static final int MIN_LINGERING_REFUSALS = 64;

    /**
     * A refusal may linger (to read the client's HELLO, so it sees the reason rather than a reset) only while fewer
     * than {@link EndpointConfig#maxPendingHandshakes()} (at least {@link #MIN_LINGERING_REFUSALS}) do; beyond, the
     * connection is closed at once (counted).
     *
     * @return whether the caller may linger; then it calls {@link #endRefusal()}
     */
    synchronized boolean startRefusal() {
        if (refusing >= Math.max(maxPending, MIN_LINGERING_REFUSALS)) {
            refusalsDropped.increment();
            return false;
        }
        refusing++;
        return true;
    }

    synchronized void endRefusal() {
        refusing--;
    }

    /**
     * Counts a handshake that failed: a deadline passed, a client that broke the protocol. (The group counts
     * refusals at the connection cap or for resources, {@link #create}; a filter's rejection is the application's
     * decision, a client that hung up its own.)
     */
    void countFailure(RdmaConnectException e, Ticket t) {
        if (e.getCause() instanceof Refused) {
            return; // counted by the group
        } else if (e.reason() == RdmaConnectException.Reason.TIMEOUT || (t != null && t.expired())) {
            handshakeDeadlines.increment();
        } else if (e.reason() == RdmaConnectException.Reason.PROTOCOL_ERROR
                || e.reason() == RdmaConnectException.Reason.VERSION_MISMATCH) {
            badHandshakes.increment();
        }
    }

    /** {@return the counters so far, with those the server's group keeps} */
    AdmissionCounters counters(EndpointGroup group) {
        return counters(
                group.refusals(Refused.Limit.CONNECTIONS),
                group.refusals(Refused.Limit.RESOURCES),
                group.controlViolations());
    }

    /** {@return the counters so far, with the group's given} */
    AdmissionCounters counters(long refusedMaxConnections, long refusedNoResources, long controlViolations) {
        return new AdmissionCounters(
                refusedMaxConnections,
                refusedMaxPending.sum(),
                refusedPerSource.sum(),
                refusedNoResources,
                handshakeDeadlines.sum(),
                badHandshakes.sum(),
                controlViolations,
                refusalsDropped.sum());
    }
}
