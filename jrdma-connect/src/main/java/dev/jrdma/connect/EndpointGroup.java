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
 * Endpoints that share a device, a protection domain, a buffer pool, one completion queue and one completion
 * thread. The thread sleeps on the completion channel ({@link PollMode#EVENT}: arm, poll, await the event, ack)
 * or spins on the CQ ({@link PollMode#BUSY}); it dispatches each completion to its endpoint, and fails operations
 * that have waited longer than the timeout.
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
    private final CompletionQueue cq;
    private final BufferPool pool;
    private final BufferPool messages;
    private final int gidIndex;
    private final ConcurrentHashMap<Integer, Endpoint> endpoints = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final java.util.ArrayList<Runnable> due = new java.util.ArrayList<>(); // completion thread only
    private final Thread thread;
    private volatile boolean running = true;
    private int cqReserved;
    private volatile boolean exportsWithWindows;

    private EndpointGroup(Device device, EndpointConfig config) {
        this.config = config;
        this.device = device;
        this.ctx = device.open();
        try {
            attr = ctx.queryDevice();
            pd = ctx.allocPd();
            channel = ctx.createCompletionChannel();
            cq = ctx.createCq(config.cqSize(), channel);
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
        thread = Thread.ofPlatform().daemon().name("jrdma-completions-" + device.name()).start(this::loop);
    }

    /**
     * Opens a group on a device: opens it, allocates a protection domain, a completion channel and CQ of
     * {@link EndpointConfig#cqSize()} entries (it grows as endpoints need more), the buffer pools, and starts the
     * completion thread.
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
    public EndpointConfig config() { return config; }
    /** {@return the device the group opened} */
    public Device device() { return device; }
    /** {@return the group's open device context (closed with the group)} */
    public Context context() { return ctx; }
    /** {@return the device's attributes, queried once when the group opened} */
    public DeviceAttr deviceAttr() { return attr; }
    /** {@return the protection domain of every QP, region and window of the group} */
    public ProtectionDomain pd() { return pd; }
    /**
     * {@return registered memory for the application's buffers} No peer can reach it until it is exported
     * ({@link ServerEndpoint#export}) or granted ({@link Endpoint#grant}) to that peer.
     */
    public BufferPool pool() { return pool; }
    /** Receive slots, copies of sent messages, atomic results: local access only. */
    BufferPool messagePool() { return messages; }
    /**
     * {@return the index in port 1's GID table of the source GID the group's connections announce (on RoCE the
     * RoCEv2 GID of an IPv4 address when there is one, else 0)}
     */
    public int gidIndex() { return gidIndex; }
    CompletionQueue cq() { return cq; }
    /** Type 2 windows for exports and grants; else a region per grant (devices without type 2 windows). */
    boolean exportsWithWindows() { return exportsWithWindows; }
    /** Tests: the path of devices without type 2 windows. */
    void exportWithRegions() { exportsWithWindows = false; }
    boolean isCompletionThread() { return Thread.currentThread() == thread; }
    /** The thread that polls the group's completion queue and completes its endpoints' operations (tests). */
    Thread completionThread() { return thread; }
    boolean isOpen() { return running; }

    synchronized void reserve(Endpoint ep, int entries) {
        int needed = cqReserved + entries;
        if (needed > cq.capacity()) grow(needed);
        if (needed > cq.capacity()) {
            throw new IllegalStateException("the group's completion queue (" + cq.capacity() + " entries, the device's most is "
                    + attr.maxCqe() + ") cannot take another endpoint needing " + entries + ": use another group");
        }
        cqReserved = needed;
    }

    /**
     * Grows the CQ (doubling, at most to the device's {@code max_cqe}) so that a server takes connections up to its
     * {@link EndpointConfig#maxConnections()} rather than only as many as {@link EndpointConfig#cqSize()} holds.
     * Resizing while the completion thread polls is safe: the provider locks the CQ for both.
     */
    private void grow(int needed) {
        int target = (int) Math.min(attr.maxCqe(), Math.max(needed, 2L * cq.capacity()));
        if (target < needed) return;
        try {
            cq.resize(target);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "resizing the completion queue to " + target + " failed: " + e);
        }
    }

    /** Endpoints of this group that exist (connected, or in their handshake). */
    int endpointCount() {
        return endpoints.size();
    }

    void register(Endpoint ep) {
        endpoints.put(ep.qpNum(), ep);
    }

    synchronized void unregister(Endpoint ep, int entries) {
        endpoints.remove(ep.qpNum(), ep);
        cqReserved -= entries;
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
                int n = cq.poll(wcs);
                if (n > 0) {
                    dispatch(wcs, n);
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
                cq.requestNotify(false);
                n = cq.poll(wcs);
                if (n > 0) {
                    dispatch(wcs, n);
                    continue;
                }
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
            int n;
            do {
                n = cq.poll(wcs);
                dispatch(wcs, n);
            } while (n == wcs.length);
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
