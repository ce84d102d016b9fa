package dev.jrdma.connect;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.WorkCompletion;
import java.net.InetAddress;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Endpoints that share a device, a protection domain, a buffer pool, a completion channel and one completion
 * thread. The thread sleeps on the completion channel ({@link PollMode#EVENT}: arm, poll, await the event, ack)
 * or spins on the CQs ({@link PollMode#BUSY}); it dispatches each completion to its endpoint, and fails operations
 * that have waited longer than the timeout.
 *
 * <p>Completion queues: the group starts with one of {@link EndpointConfig#cqSize()} entries. An endpoint reserves
 * what it can complete at once (its send and receive depths) in a CQ with room for it; when none has room the group
 * makes another CQ on the same channel (up to the device's {@code max_cq}), so the number of endpoints is bounded by
 * the server's {@link EndpointConfig#maxConnections()} and the device, not by one CQ's size. An endpoint the device
 * cannot take is refused before anything is made for it ({@link Admission.Refused}).
 *
 * <p>Futures of operations complete on this thread: continuations must not block (use the asynchronous methods).
 */
public final class EndpointGroup implements AutoCloseable {
    static final int PORT = 1;
    private static final System.Logger LOG = System.getLogger(EndpointGroup.class.getName());

    /** How long the completion thread sleeps in the completion channel before it looks at timeouts and tasks again. */
    private static final Duration EVENT_WAIT = Duration.ofMillis(10);

    private final EndpointConfig config;
    private final Device device;
    private final Context ctx;
    private final DeviceAttr attr;
    private final ProtectionDomain pd;
    private final CompletionChannel channel;
    /** The CQs, read by the completion thread without a lock (a new array when a CQ is added). */
    private volatile CompletionQueue[] cqs;
    /** Each CQ and the entries reserved in it (guarded by this). */
    private final java.util.ArrayList<Shard> shards = new java.util.ArrayList<>();
    /** The CQ each endpoint reserved its entries in (guarded by this). */
    private final java.util.IdentityHashMap<Endpoint, Shard> placed = new java.util.IdentityHashMap<>();
    /** The QP number each registered endpoint is dispatched by (guarded by this). */
    private final java.util.IdentityHashMap<Endpoint, Integer> qpNums = new java.util.IdentityHashMap<>();

    private int maxCqs; // the device's max_cq (tests lower it)
    private int maxEndpoints = Integer.MAX_VALUE; // a server's maxConnections
    private final java.util.concurrent.atomic.LongAdder controlViolations = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder[] refusals = {
        new java.util.concurrent.atomic.LongAdder(), new java.util.concurrent.atomic.LongAdder()
    }; // by Admission.Refused.Limit
    private final BufferPool pool;
    private final BufferPool messages;
    private final int gidIndex;
    private final ConcurrentHashMap<Integer, Endpoint> endpoints = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final java.util.ArrayList<Runnable> due = new java.util.ArrayList<>(); // completion thread only
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean exportsWithWindows;

    /** A CQ of the group and the entries its endpoints reserved in it. */
    private static final class Shard {
        final CompletionQueue cq;
        int reserved;

        Shard(CompletionQueue cq) {
            this.cq = cq;
        }
    }

    private EndpointGroup(Device device, EndpointConfig config) {
        this.config = config;
        this.device = device;
        this.ctx = device.open();
        try {
            attr = ctx.queryDevice();
            pd = ctx.allocPd();
            channel = ctx.createCompletionChannel();
            shards.add(new Shard(ctx.createCq(config.cqSize(), channel)));
            cqs = new CompletionQueue[] {shards.get(0).cq};
            maxCqs = attr.maxCq() > 0 ? attr.maxCq() : Integer.MAX_VALUE;
            // no slab carries a remote right: a peer reaches memory only through a window (or region) of its own
            EnumSet<Access> access = EnumSet.of(Access.LOCAL_WRITE);
            if (attr.supportsType2Windows()) access.add(Access.MW_BIND);
            pool = new BufferPool(pd, config.slabSize(), access);
            messages = new BufferPool(pd, config.slabSize(), EnumSet.of(Access.LOCAL_WRITE));
            gidIndex = pickGidIndex(ctx);
            exportsWithWindows = attr.supportsType2Windows();
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
        thread = Thread.ofPlatform()
                .daemon()
                .name("jrdma-completions-" + device.name())
                .start(this::loop);
    }

    /**
     * Opens a group on a device: opens it, allocates a protection domain, a completion channel and a CQ of
     * {@link EndpointConfig#cqSize()} entries (more are made as endpoints need them), the buffer pools, and starts
     * the completion thread.
     *
     * @param device the device
     * @param config the settings of the group and of its endpoints
     * @return the group; close it to close its endpoints and the device
     * @throws dev.jrdma.verbs.VerbsException when the device cannot be opened or a resource cannot be created
     * @throws IllegalArgumentException       when {@link EndpointConfig#slabSize()} is not a power of two of at least
     *                                        4096
     */
    public static EndpointGroup open(Device device, EndpointConfig config) {
        return new EndpointGroup(device, config);
    }

    /**
     * Opens a group on the device that serves a local address, as {@link #open} does.
     *
     * @param local  the local address (see {@link Devices#forLocalAddress} for how the device is chosen)
     * @param config the settings; {@link EndpointConfig#device()} names a device explicitly
     * @return the group
     * @throws dev.jrdma.verbs.VerbsException when no device fits or it cannot be opened
     * @throws IllegalArgumentException       when {@link EndpointConfig#slabSize()} is not a power of two of at least
     *                                        4096
     */
    public static EndpointGroup forLocalAddress(InetAddress local, EndpointConfig config) {
        return new EndpointGroup(Devices.forLocalAddress(local, config.device()), config);
    }

    /** {@return the settings the group and its endpoints use} */
    public EndpointConfig config() {
        return config;
    }
    /** {@return the device the group opened} */
    public Device device() {
        return device;
    }
    /** {@return the group's open device context (closed with the group)} */
    public Context context() {
        return ctx;
    }
    /** {@return the device's attributes, queried once when the group opened} */
    public DeviceAttr deviceAttr() {
        return attr;
    }
    /** {@return the protection domain of every QP, region and window of the group} */
    public ProtectionDomain pd() {
        return pd;
    }
    /**
     * {@return registered memory for the application's buffers} No peer can reach it until it is exported
     * ({@link ServerEndpoint#export}) or granted ({@link Endpoint#grant}) to that peer.
     */
    public BufferPool pool() {
        return pool;
    }
    /** Receive slots, copies of sent messages, atomic results: local access only. */
    BufferPool messagePool() {
        return messages;
    }
    /**
     * {@return the index in port 1's GID table of the source GID the group's connections announce (on RoCE the
     * RoCEv2 GID of an IPv4 address when there is one, else 0)}
     */
    public int gidIndex() {
        return gidIndex;
    }
    /** The group's first CQ (tests). */
    CompletionQueue cq() {
        return cqs[0];
    }
    /** {@return how many completion queues the group has made} */
    public int cqCount() {
        return cqs.length;
    }
    /** Type 2 windows for exports and grants; else a region per grant (devices without type 2 windows). */
    boolean exportsWithWindows() {
        return exportsWithWindows;
    }
    /** Tests: the path of devices without type 2 windows. */
    void exportWithRegions() {
        exportsWithWindows = false;
    }

    boolean isCompletionThread() {
        return Thread.currentThread() == thread;
    }
    /** The thread that polls the group's completion queue and completes its endpoints' operations (tests). */
    Thread completionThread() {
        return thread;
    }

    boolean isOpen() {
        return running;
    }

    /**
     * Admits an endpoint before anything is made for it: checks the endpoint cap (a server's
     * {@link EndpointConfig#maxConnections()}) and reserves {@code entries} in a CQ with room for them, made now when
     * none has room.
     *
     * @return the CQ the endpoint's QP completes into
     * @throws Admission.Refused when the cap is reached or the device cannot take another CQ (nothing is taken then)
     * @throws dev.jrdma.verbs.VerbsException when the device fails to make a CQ
     */
    synchronized CompletionQueue reserve(Endpoint ep, int entries) {
        if (!running) throw new IllegalStateException("the endpoint group of " + device.name() + " is closed");
        if (placed.size() >= maxEndpoints) {
            throw new Admission.Refused(
                    Admission.Refused.Limit.CONNECTIONS,
                    "the server holds its maximum of " + maxEndpoints
                            + " connections (maxConnections); try again later");
        }
        Shard room = null;
        for (Shard s : shards) {
            if (s.cq.capacity() - s.reserved >= entries) {
                room = s;
                break;
            }
        }
        if (room == null) {
            if (entries > attr.maxCqe() && attr.maxCqe() > 0) {
                throw new Admission.Refused(
                        Admission.Refused.Limit.RESOURCES,
                        "an endpoint needs " + entries + " completion queue entries, more than the device's "
                                + attr.maxCqe() + " per completion queue (max_cqe)");
            }
            if (shards.size() >= maxCqs) {
                throw new Admission.Refused(
                        Admission.Refused.Limit.RESOURCES,
                        "the device has no room for another completion queue (" + shards.size() + " in use of its "
                                + maxCqs + ", max_cq; " + placed.size() + " endpoints); try again later");
            }
            room = new Shard(ctx.createCq(Math.max(config.cqSize(), entries), channel));
            shards.add(room);
            CompletionQueue[] more = java.util.Arrays.copyOf(cqs, cqs.length + 1);
            more[more.length - 1] = room.cq;
            cqs = more;
            channel.wakeup(); // the completion thread arms the new CQ now, not after its next sleep
            LOG.log(
                    System.Logger.Level.DEBUG,
                    () -> "group of " + device.name() + ": completion queue " + shards.size() + " for "
                            + (placed.size() + 1) + " endpoints");
        }
        room.reserved += entries;
        placed.put(ep, room);
        return room.cq;
    }

    /** Servers: at most {@code n} endpoints (its {@link EndpointConfig#maxConnections()}), checked in {@link #reserve}. */
    synchronized void limitEndpoints(int n) {
        maxEndpoints = n;
    }

    /** Tests: as if the device had room for only {@code n} completion queues. */
    synchronized void limitCompletionQueues(int n) {
        maxCqs = n;
    }

    /** A client refused before anything was made for it ({@link Admission#create}). */
    void countRefusal(Admission.Refused.Limit limit) {
        refusals[limit.ordinal()].increment();
    }

    /** {@return the clients refused at {@code limit} so far} */
    long refusals(Admission.Refused.Limit limit) {
        return refusals[limit.ordinal()].sum();
    }

    /** A peer broke the rules of its control channel (counted; see {@link #controlViolations()}). */
    void countControlViolation() {
        controlViolations.increment();
    }

    /**
     * {@return how many peers of this group's endpoints were disconnected for sending what the control channel does
     * not carry (bytes other than a goodbye and its acknowledgement, or more than its budget)}
     */
    public long controlViolations() {
        return controlViolations.sum();
    }

    /** Endpoints of this group that exist (connected, or in their handshake). */
    int endpointCount() {
        return endpoints.size();
    }

    synchronized void register(Endpoint ep) {
        endpoints.put(ep.qpNum(), ep);
        qpNums.put(ep, ep.qpNum());
    }

    /** Releases what {@link #reserve} and {@link #register} took for {@code ep} (also for one whose QP was never made). */
    synchronized void unregister(Endpoint ep, int entries) {
        Shard s = placed.remove(ep);
        Integer qpn = qpNums.remove(ep);
        if (qpn != null) endpoints.remove(qpn, ep);
        if (s != null) s.reserved -= entries;
    }

    /** Runs a task on the completion thread after it next drains the CQ. */
    void submit(Runnable r) {
        tasks.add(r);
    }

    private void loop() {
        WorkCompletion[] wcs = WorkCompletion.array(32);
        long nextCheck = 0;
        int idle = 0;
        while (running) {
            try {
                CompletionQueue[] all = cqs;
                if (pollAll(all, wcs) > 0) {
                    idle = 0;
                    continue;
                }
                runTasks(wcs);
                long now = System.nanoTime();
                if (now - nextCheck >= 0) {
                    for (Endpoint ep : endpoints.values()) checkTimeouts(ep, now);
                    nextCheck = now + 10_000_000L;
                }
                if (config.pollMode() == PollMode.BUSY) {
                    if (++idle > 10_000) {
                        Thread.yield();
                        idle = 0;
                    } else {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                for (CompletionQueue cq : all) cq.requestNotify(false);
                if (pollAll(all, wcs) > 0) continue;
                if (!tasks.isEmpty()) continue;
                CompletionQueue ready = channel.awaitEvent(EVENT_WAIT);
                if (ready != null) ready.ackEvents(1);
            } catch (RuntimeException | Error e) {
                // this thread serves every endpoint of the group: it reports and goes on (the device's own failures)
                if (!running) break;
                LOG.log(System.Logger.Level.WARNING, "completion thread of " + device.name() + ": " + e, e);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException ie) {
                    break;
                }
            }
        }
    }

    /** Polls each CQ once (round robin: a busy CQ does not starve the others) and dispatches; returns how many. */
    private int pollAll(CompletionQueue[] all, WorkCompletion[] wcs) {
        int total = 0;
        for (CompletionQueue cq : all) {
            int n = cq.poll(wcs);
            if (n > 0) {
                dispatch(wcs, n);
                total += n;
            }
        }
        return total;
    }

    /**
     * Runs the queued tasks after the completions that reached the CQ before them: a peer's goodbye (a task from the
     * control channel) is sent only after its last messages were acknowledged, so their receive completions are
     * queued before the goodbye is; dispatching them first delivers them before the endpoint reports PEER_CLOSED.
     * (This thread may have polled an empty CQ just before those completions arrived, then been descheduled.)
     */
    private void runTasks(WorkCompletion[] wcs) {
        Runnable t;
        while ((t = tasks.poll()) != null) due.add(t);
        if (due.isEmpty()) return;
        try {
            boolean more;
            do {
                more = false;
                for (CompletionQueue cq : cqs) {
                    int n = cq.poll(wcs);
                    dispatch(wcs, n);
                    more |= n == wcs.length;
                }
            } while (more);
            for (int i = 0; i < due.size(); i++) runSafely(due.get(i));
        } finally {
            due.clear();
        }
    }

    private void dispatch(WorkCompletion[] wcs, int n) {
        for (int i = 0; i < n; i++) {
            Endpoint ep = endpoints.get(wcs[i].qpNum);
            if (ep != null) {
                try {
                    ep.onCompletion(wcs[i]);
                } catch (RuntimeException | Error e) {
                    endOne(ep, "handling a completion (" + wcs[i] + ") threw " + e, e);
                }
            }
        }
    }

    private static void checkTimeouts(Endpoint ep, long now) {
        try {
            ep.checkTimeouts(now);
        } catch (RuntimeException | Error e) {
            endOne(ep, "checking its timeouts threw " + e, e);
        }
    }

    /** One endpoint's failure on this thread ends that endpoint, not the thread that serves the others. */
    private static void endOne(Endpoint ep, String what, Throwable t) {
        try {
            ep.failOnCompletionThread(what, t);
        } catch (RuntimeException | Error again) {
            t.addSuppressed(again);
            LOG.log(System.Logger.Level.ERROR, "ending " + ep + " after " + what + " failed too", t);
        }
    }

    private static void runSafely(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "task on the completion thread: " + e, e);
        }
    }

    static int pickGidIndex(Context ctx) {
        // RoCEv2 over IPv4 uses the IPv4-mapped GID, the software device its own address's; InfiniBand GID 0
        try {
            return ctx.defaultGidIndex(PORT);
        } catch (RuntimeException e) {
            return 0; // a device without a GID table: GID 0
        }
    }

    /** Closes every endpoint of the group, stops the thread, and closes the device. Idempotent. */
    @Override
    public void close() {
        if (!running) return;
        for (Endpoint ep : List.copyOf(endpoints.values())) {
            try {
                ep.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing endpoint: " + e);
            }
        }
        running = false;
        if (Thread.currentThread() != thread) {
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            ctx.close(); // QPs, CQ, channel, MRs, PD
        } finally {
            pool.close(); // frees the memory after its regions are gone
            messages.close();
        }
    }
}
