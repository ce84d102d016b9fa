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
import java.util.function.BooleanSupplier;

/**
 * Endpoints that share a device, a protection domain, a buffer pool, a completion channel and one owner thread that
 * drives them ({@link ProgressCore}): the group's own completion thread ({@link #open}), or a caller with no thread of
 * its own that invokes the duty cycle ({@link #openInvoked}, {@link Invoker}: a Netty event loop). The owner polls the
 * CQs and dispatches each completion to its endpoint, runs the commands other threads handed it, and fails operations
 * that have waited longer than the timeout. Idle, it polls on for a budget ({@link #busyPoll}; {@link PollMode#BUSY}:
 * always), then arms the CQs and sleeps on the completion channel.
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

    /** The longest sleep on the completion channel (timeouts and commands are looked at this often at least). */
    private static final Duration EVENT_WAIT = Duration.ofNanos(ProgressCore.MAX_SLEEP_NANOS);
    /** Commands other threads may have queued for the owner at once (more wait for room). */
    private static final int COMMANDS = 1024;

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
    private final EndpointsByQpn endpoints = new EndpointsByQpn();
    private final WorkCompletion[] wcs = WorkCompletion.array(32); // the owner's
    /** The time of the group's deadlines and of its endpoints' ({@link Clock#SYSTEM} but in tests). */
    private final Clock clock;

    private final ProgressCore core;
    /** The group's own thread, or null when an {@link Invoker}'s caller drives it. */
    private final Thread thread;

    private final Invoker invoker;
    private volatile boolean running = true;

    /** How long after its endpoint's close a lent message may still be held before it is reported (a pipeline's end). */
    static final long LENT_CLOSE_GRACE_NANOS = 1_000_000_000L;

    private volatile long lentHoldLimitNanos = Duration.ofMillis(Long.getLong("jrdma.connect.lentHoldLimitMs", 30_000))
            .toNanos();
    private volatile boolean recordLentSites = Boolean.getBoolean("jrdma.connect.leakSites")
            || java.util.Set.of("advanced", "paranoid")
                    .contains(System.getProperty("io.netty.leakDetection.level", "")
                            .toLowerCase(java.util.Locale.ROOT));
    private final java.util.concurrent.atomic.LongAdder lentLeaks = new java.util.concurrent.atomic.LongAdder();
    /** Closed endpoints whose lent messages are still out (the owner's): watched until released or reported. */
    private final java.util.ArrayList<Endpoint> closedWithLent = new java.util.ArrayList<>();

    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile boolean exportsWithWindows;

    /** A CQ of the group and the entries its endpoints reserved in it. */
    private static final class Shard {
        final CompletionQueue cq;
        int reserved;

        Shard(CompletionQueue cq) {
            this.cq = cq;
        }
    }

    private EndpointGroup(Device device, EndpointConfig config, boolean ownThread, Clock clock) {
        this.config = config;
        this.clock = clock;
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
        core = new ProgressCore(
                new CqDuty(),
                clock,
                COMMANDS,
                config.pollMode() == PollMode.BUSY ? ProgressCore.SPIN_FOREVER : ProgressCore.DEFAULT_SPIN_NANOS);
        if (ownThread) {
            invoker = null;
            thread = Thread.ofPlatform()
                    .daemon()
                    .name("jrdma-completions-" + device.name())
                    .start(() -> core.runAsAgent(LOG, "completion thread of " + device.name()));
        } else {
            invoker = new Invoker();
            thread = null;
        }
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
        return new EndpointGroup(device, config, true, Clock.SYSTEM);
    }

    /**
     * Opens a group as {@link #open} does, but with no thread of its own: the caller drives it through
     * {@link #invoker()} (as Aeron's {@code AgentInvoker} drives an agent), and its endpoints' completions, futures and
     * receive handlers run on the invoking thread.
     *
     * @param device the device
     * @param config the settings of the group and of its endpoints
     * @return the group; close it (on the invoking thread, or after the invoking stopped) to close its endpoints
     * @throws dev.jrdma.verbs.VerbsException when the device cannot be opened or a resource cannot be created
     * @throws IllegalArgumentException       when {@link EndpointConfig#slabSize()} is not a power of two of at least
     *                                        4096
     */
    public static EndpointGroup openInvoked(Device device, EndpointConfig config) {
        return new EndpointGroup(device, config, false, Clock.SYSTEM);
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
        return new EndpointGroup(Devices.forLocalAddress(local, config.device()), config, true, Clock.SYSTEM);
    }

    /**
     * Tests: a group, as {@link #open} makes it, whose deadlines and timeouts run on {@code clock}.
     *
     * @param device the device
     * @param config the settings of the group and of its endpoints
     * @param clock  the time the group and its endpoints go by
     * @return the group
     */
    static EndpointGroup open(Device device, EndpointConfig config, Clock clock) {
        return new EndpointGroup(device, config, true, clock);
    }

    /**
     * {@return the time of this group's deadlines, and of its endpoints' (operations, handshakes, close): the
     * system's, or a test's}
     */
    Clock clock() {
        return clock;
    }

    /**
     * A caller about to wait for one of this group's results drives the group meanwhile ({@link ProgressCore#helpUntil}),
     * when the group has a thread of its own (an invoked group is left to its invoker) and the caller is not it.
     *
     * @return whether {@code done} holds
     */
    boolean helpUntil(java.util.function.BooleanSupplier done, long deadline) {
        if (thread == null || Thread.currentThread() == thread) return done.getAsBoolean();
        return core.helpUntil(done, deadline);
    }

    /**
     * Runs a data-path command ({@link ProgressCore#runIfFree}) on the calling thread at once when the group has a
     * thread of its own that does not drive now and no command waits; false when it must be handed over.
     */
    boolean runIfFree(Runnable command) {
        return thread != null && Thread.currentThread() != thread && core.runIfFree(command);
    }

    /**
     * {@return the invoker that drives this group, or null when the group has a thread of its own ({@link #open})}
     */
    public Invoker invoker() {
        return invoker;
    }

    /**
     * Sets the busy-poll budget of the idle policy: after its last work the owner polls on this long before it arms
     * the CQs and sleeps on the completion channel (default 100 us, {@code -Djrdma.connect.busyPollMicros}; ignored in
     * {@link PollMode#BUSY}, which never sleeps). Zero sleeps at once: the least CPU, a thread wake-up more per message.
     * An invoked group's owner (an event loop) treats it as the most it polls: its budget follows its recent waits
     * ({@code -Djrdma.connect.adaptiveSpin=off}: always this budget).
     *
     * @param budget the budget, zero or more
     * @throws IllegalArgumentException when {@code budget} is negative
     */
    public void busyPoll(Duration budget) {
        if (config.pollMode() != PollMode.BUSY) core.spinNanos(budget.toNanos());
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

    /** Whether the caller is the group's owner: its own thread, or the thread that invokes it. */
    boolean isCompletionThread() {
        return core.isOwnerThread();
    }
    /** The thread that polls the group's completion queue and completes its endpoints' operations (tests). */
    Thread completionThread() {
        return thread != null ? thread : core.owner();
    }

    /** Tests: completions wait in the CQs (true) or are polled again (false); see {@link ProgressCore#pauseCompletions}. */
    void pauseCompletions(boolean paused) {
        core.pauseCompletions(paused);
    }

    /**
     * Sets how long a lent message ({@link Endpoint#onReceiveLent}, jrdma-netty's received buffers) may be held
     * before it is reported as a probable leak: counted ({@link #lentLeaks()}, {@link Endpoint#lentLeaks()}) and
     * logged once, with where it was lent when sites are recorded ({@link #recordLentSites}). Default 30 s, or
     * {@code -Djrdma.connect.lentHoldLimitMs}. A message still held a second after its endpoint closed is reported too.
     *
     * @param limit the limit, positive
     * @throws IllegalArgumentException when {@code limit} is not positive
     */
    public void lentHoldLimit(Duration limit) {
        if (limit.isNegative() || limit.isZero())
            throw new IllegalArgumentException("the hold limit must be positive, not " + limit);
        lentHoldLimitNanos = limit.toNanos();
    }

    /** {@return how long a lent message may be held before it is reported ({@link #lentHoldLimit(Duration)})} */
    public Duration lentHoldLimit() {
        return Duration.ofNanos(lentHoldLimitNanos);
    }

    long lentHoldLimitNanos() {
        return lentHoldLimitNanos;
    }

    /**
     * Records where each lent message was lent and last touched ({@link LentMessage#touch}), for the report of one
     * held too long: a stack per message, as Netty's ADVANCED leak detection (default off, or on with
     * {@code -Djrdma.connect.leakSites=true} or Netty's {@code -Dio.netty.leakDetection.level=advanced|paranoid}).
     *
     * @param on whether to record them
     */
    public void recordLentSites(boolean on) {
        recordLentSites = on;
    }

    boolean recordsLentSites() {
        return recordLentSites;
    }

    /** {@return the lent messages of this group's endpoints reported as held too long, or still held after a close} */
    public long lentLeaks() {
        return lentLeaks.sum();
    }

    void countLentLeak() {
        lentLeaks.increment();
    }

    /** A closed endpoint's lent messages are still out: the owner watches them until released or reported. */
    void watchAfterClose(Endpoint ep) {
        closedWithLent.add(ep);
    }

    /** {@return whether the group is open: endpoints can be made in it, and it is driven} */
    public boolean isOpen() {
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

    /**
     * Runs a task on the owner thread after it next drains the CQs (lock-free: {@link ProgressCore#execute}); false
     * when refused (the group is closed, or its queue stayed full for {@code patienceNanos}).
     */
    boolean submit(Runnable r, long patienceNanos) {
        return core.execute(r, patienceNanos);
    }

    /** {@link #submit(Runnable, long)} with the group's timeout as the patience. */
    boolean submit(Runnable r) {
        return submit(r, config.timeout().toNanos());
    }

    /** The group's CQs and endpoints, as its {@link ProgressCore} drives them (the owner thread only). */
    private final class CqDuty implements ProgressCore.Duty {
        @Override
        public int poll() {
            int total = 0;
            for (CompletionQueue cq : cqs) { // round robin: a busy CQ does not starve the others
                int n = cq.poll(wcs);
                if (n > 0) {
                    dispatch(wcs, n);
                    total += n;
                }
            }
            return total;
        }

        @Override
        public void drain() {
            boolean more;
            do {
                more = false;
                for (CompletionQueue cq : cqs) {
                    int n = cq.poll(wcs);
                    dispatch(wcs, n);
                    more |= n == wcs.length;
                }
            } while (more);
        }

        @Override
        public void checkTimeouts(long now) {
            for (Endpoint ep : endpoints.snapshot()) EndpointGroup.checkTimeouts(ep, now);
            // the capturing lambda is an allocation per check (every 10 ms): none while nothing is watched
            if (!closedWithLent.isEmpty()) closedWithLent.removeIf(ep -> !ep.watchLent(now));
        }

        @Override
        public void arm() {
            for (CompletionQueue cq : cqs) cq.requestNotify(false);
        }

        @Override
        public void await(long nanos) {
            CompletionQueue ready =
                    channel.awaitEvent(nanos >= ProgressCore.MAX_SLEEP_NANOS ? EVENT_WAIT : Duration.ofNanos(nanos));
            if (ready != null) ready.ackEvents(1);
        }

        @Override
        public void wakeup() {
            if (!channel.isClosed()) channel.wakeup();
        }
    }

    /**
     * Drives a group that has no thread of its own ({@link #openInvoked}): the caller's thread becomes the group's
     * owner and runs its duty cycle, so completions, futures and receive handlers run on it with no hand-off. One
     * thread at a time (a Netty event loop).
     */
    public final class Invoker {
        private Invoker() {}

        /**
         * One duty cycle on the calling thread: polls the CQs and dispatches the completions, runs the commands other
         * threads handed the group, fails what timed out.
         *
         * @return how many completions and commands were handled (0: nothing to do)
         */
        public int invoke() {
            if (!running) return 0;
            core.takeOwnership();
            return core.doWork(core.now());
        }

        /**
         * After a cycle that found nothing to do: polls on within the busy-poll budget ({@link #busyPoll}, adapted to
         * the owner's recent waits unless {@code -Djrdma.connect.adaptiveSpin=off}; yielding
         * the processor at each turn once {@code -Djrdma.connect.yieldAfterMicros} passed, if set), else arms the
         * CQs and sleeps on the completion channel for at most {@code maxNanos} (a completion, {@link #wakeup()} or a
         * command from another thread ends it). {@code mayBlock} is the caller's own work (an
         * event loop's tasks): it is asked after the sleep is announced, so a caller whose other threads hand it work
         * and then call {@link #wakeup()} never sleeps past that work.
         *
         * @param maxNanos the longest sleep, in nanoseconds (0: never sleep)
         * @param mayBlock whether the caller has nothing else to do (asked just before the sleep)
         * @return true when it only polled on (call {@link #invoke()} again), false when it slept or may not
         */
        public boolean idle(long maxNanos, BooleanSupplier mayBlock) {
            if (!running) return false;
            core.takeOwnership();
            return core.idle(core.now(), maxNanos, mayBlock);
        }

        /**
         * {@link #idle} without polling on: arms the CQs and sleeps at once (a caller that knows its spin would only
         * hold a core another thread needs: jrdma-netty's loop after it was preempted while spinning). With
         * {@link PollMode#BUSY} it polls on as {@link #idle} does.
         *
         * @param maxNanos the longest sleep, in nanoseconds (0: never sleep)
         * @param mayBlock whether the caller has nothing else to do (asked just before the sleep)
         * @return true when it only polled on, false when it slept or may not
         */
        public boolean sleep(long maxNanos, BooleanSupplier mayBlock) {
            if (!running) return false;
            core.takeOwnership();
            return core.sleepNow(core.now(), maxNanos, mayBlock);
        }

        /**
         * Ends the owner's sleep on the completion channel, if it sleeps or is about to (a wakeup while it works or
         * polls on is not needed: see {@link #idle}); any thread.
         */
        public void wakeup() {
            core.wakeupIfSleeping();
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

    static int pickGidIndex(Context ctx) {
        // RoCEv2 over IPv4 uses the IPv4-mapped GID, the software device its own address's; InfiniBand GID 0
        try {
            return ctx.defaultGidIndex(PORT);
        } catch (RuntimeException e) {
            return 0; // a device without a GID table: GID 0
        }
    }

    /**
     * Closes every endpoint of the group, stops the thread, and closes the device. Idempotent. The endpoints' closes
     * run on the owner, all at once (each after the commands queued before it): on the owner thread this drives the
     * group until they are done, on another it waits for them (the timeout, the goodbye's linger and a margin at
     * most); an endpoint still open then (its owner stalled or stopped invoking) is ended here, once the owner stopped.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) return;
        Endpoint[] open = endpoints.snapshot();
        for (Endpoint ep : open) {
            try {
                ep.startClose();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing endpoint: " + e);
            }
        }
        long bound = config.timeout().toNanos()
                + Goodbye.LINGER_MAX_NS
                + Duration.ofSeconds(2).toNanos();
        long end = System.nanoTime() + bound;
        if (core.isOwnerThread()) {
            // inside a callback of the duty cycle the owner cannot drive again (its poll's completions are half
            // dispatched): the endpoints end below, without waiting for their peers, as a close on the owner did
            while (!core.inDutyCycle() && !allClosed(open) && System.nanoTime() - end < 0) {
                if (core.doWork(clock.nanoTime()) == 0) Thread.yield();
            }
        } else {
            helpUntil(() -> allClosed(open), clock.nanoTime() + bound);
            while (!allClosed(open) && System.nanoTime() - end < 0) {
                if (thread != null && !thread.isAlive()) break;
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        }
        running = false;
        core.stop();
        if (thread != null && Thread.currentThread() != thread) {
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (Endpoint ep : endpoints.snapshot()) { // nobody drives the group any more: the rest end here
            try {
                ep.finishClose(false);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "ending endpoint: " + e);
            }
        }
        for (Endpoint ep : closedWithLent) ep.watchLent(ep.closedAt + LENT_CLOSE_GRACE_NANOS); // no grace left
        closedWithLent.clear();
        try {
            ctx.close(); // QPs, CQ, channel, MRs, PD
        } finally {
            pool.close(); // frees the memory after its regions are gone
            messages.close();
        }
    }

    private static boolean allClosed(Endpoint[] eps) {
        for (Endpoint ep : eps) if (!ep.closed.isDone()) return false;
        return true;
    }
}
