package dev.jrdma.netty;

import dev.jrdma.connect.Devices;
import dev.jrdma.connect.EndpointConfig;
import dev.jrdma.connect.EndpointGroup;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.netty.util.concurrent.ThreadAwareExecutor;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The I/O handler of an event loop that serves jrdma channels ({@link RdmaEventLoopGroup}, or
 * {@code new MultiThreadIoEventLoopGroup(RdmaIoHandler.newFactory())}).
 *
 * <p>As Netty's io_uring handler reaps its completion ring, this handler drives the jrdma endpoint groups of its
 * loop's channels itself: the client channels of one loop share one group per local address and settings, a server
 * channel has one of its own (its accepted connections live in it); none of them has a thread. {@link #run} invokes
 * each group's duty cycle ({@link EndpointGroup.Invoker}), so completions, and the channels' reads and writes they
 * trigger, run on the event loop. With nothing to do it polls on for the group's busy-poll budget, then, when Netty
 * lets it block, sleeps on the completion channel of its group until a completion, a timer or {@link #wakeup()}.
 * (With several groups it sleeps on the first one's channel for at most {@link #MULTI_GROUP_SLEEP_NANOS}.) With
 * {@code -Djrdma.netty.preemptedGapMicros} set, a loop that was preempted while it spun sleeps at once for a while
 * ({@link PreemptionWatch}).
 */
public final class RdmaIoHandler implements IoHandler {
    /** The longest a shutting-down loop waits for its channels' closes in flight ({@link #prepareToDestroy}). */
    static final long CLOSE_WAIT_NANOS = 5_000_000_000L;
    /** The longest sleep of a loop that drives several groups (it can sleep on one completion channel only). */
    static final long MULTI_GROUP_SLEEP_NANOS = 200_000;

    private static final System.Logger LOG = System.getLogger(RdmaIoHandler.class.getName());
    /** The handler of the event loop running on this thread, for channels registering with it. */
    private static final ThreadLocal<RdmaIoHandler> CURRENT = new ThreadLocal<>();

    private final Set<RdmaIoHandle> handles = new HashSet<>();
    private final ThreadAwareExecutor executor;
    /** The groups this loop drives (loop thread only; read by {@link #wakeup} through {@link #sleepingOn}). */
    private final List<EndpointGroup> groups = new ArrayList<>();
    /** The client channels' shared groups, by local address and settings (loop thread only). */
    private final Map<List<Object>, EndpointGroup> clientGroups = new HashMap<>();
    /**
     * Handshakes the client channels of this process run at once from one local address, over every loop: no more than
     * a server takes from one host by default ({@link EndpointConfig#DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE}), so
     * a burst of connects (a pool opening 100) waits here, in turn, instead of flooding the server's refusals (beyond
     * a number of which it closes without a word).
     */
    private static final Map<InetAddress, Semaphore> HANDSHAKES = new java.util.concurrent.ConcurrentHashMap<>();

    /** {@link #run} or {@link #idle} drives the groups now: a completion's channel work may run inline (loop only). */
    private boolean driving;
    /** A channel's work runs inline now: what it triggers goes to the loop as a task, not into it again (loop only). */
    private boolean inline;

    /** Closes of this loop's channels running on closer threads ({@link #closer}). */
    private final AtomicInteger closing = new AtomicInteger();

    private volatile Thread loopThread;
    private IoHandlerContext canBlockOf;
    private BooleanSupplier canBlock;
    /** The loop parks (it drives no group), or is about to: {@link #wakeup} unparks it. */
    private volatile boolean parked;
    /** {@link #groups}, for {@link #wakeup}: the loop sleeps on the first one's completion channel. */
    private volatile EndpointGroup[] wakeable = new EndpointGroup[0];
    /** Sleeps at once for a while after the loop was preempted while spinning (opt-in; loop thread only). */
    private final PreemptionWatch preemption =
            new PreemptionWatch(PreemptionWatch.DEFAULT_GAP_NANOS, PreemptionWatch.DEFAULT_BACKOFF_NANOS);

    private RdmaIoHandler(ThreadAwareExecutor executor) {
        this.executor = executor;
    }

    /**
     * {@return a factory of RDMA I/O handlers for a {@link io.netty.channel.MultiThreadIoEventLoopGroup}: one handler per
     * event loop}
     */
    public static IoHandlerFactory newFactory() {
        return RdmaIoHandler::new;
    }

    /** The handler of the RDMA event loop the caller runs on, or null (not an RDMA event loop: e.g. NIO's). */
    static RdmaIoHandler current() {
        return CURRENT.get();
    }

    @Override
    public void initialize() {
        loopThread = Thread.currentThread();
        CURRENT.set(this);
        // Netty's loop calls prepareToDestroy only when it sees the shutdown between its I/O and its tasks; a shutdown
        // that starts after that look ends the loop at its next confirmShutdown without it (with a quiet period of 0
        // at once), and the channels stayed open past the loop's end. A shutdown hook runs in that confirmShutdown,
        // while the loop still runs the tasks the closes hand it.
        if (executor instanceof SingleThreadEventExecutor loop) loop.addShutdownHook(this::closeChannelsAndWait);
    }

    /**
     * The group client channels of this loop connect in, for their local address and settings (made on first use).
     * Loop thread only.
     */
    EndpointGroup clientGroup(InetAddress local, EndpointConfig cfg) {
        List<Object> key = List.of(local, cfg);
        EndpointGroup g = clientGroups.get(key);
        if (g == null || !g.isOpen()) {
            g = EndpointGroup.openInvoked(Devices.forLocalAddress(local, cfg.device()), cfg);
            clientGroups.put(key, g);
            groups.add(g);
            publishGroups();
        }
        return g;
    }

    /** Preemptions noticed while spinning ({@link PreemptionWatch}; loop thread only; tests, diagnostics). */
    long preemptions() {
        return preemption.preemptions();
    }

    /** How many endpoint groups this loop drives now (loop thread only; tests). */
    int drivenGroups() {
        return groups.size();
    }

    /** The turns of connects from {@code local} ({@link #HANDSHAKES}); any thread. */
    static Semaphore handshakeTurns(InetAddress local) {
        return HANDSHAKES.computeIfAbsent(
                local, a -> new Semaphore(EndpointConfig.DEFAULT_MAX_PENDING_HANDSHAKES_PER_SOURCE));
    }

    /** Drives {@code group} (a server channel's) from now on, until it is closed. Loop thread only. */
    void drive(EndpointGroup group) {
        if (group.invoker() == null) return; // a group with a thread of its own
        groups.add(group);
        publishGroups();
    }

    @Override
    public int run(IoHandlerContext context) {
        if (loopThread == null) initialize();
        if (preemption.enabled()) preemption.resumed(System.nanoTime());
        int work = 0;
        driving = true;
        try {
            work = driveGroups();
        } finally {
            driving = false;
        }
        if (work == 0 && context.canBlock()) idle(context);
        if (context.shouldReportActiveIoTime()) context.reportActiveIoTime(0);
        return work;
    }

    /**
     * Runs {@code work} (a channel's read or write handling, triggered by a completion) right here when this loop is
     * driving its groups and no channel work runs already; false when the caller must hand it to the loop as a task.
     * Loop thread only. A failure of {@code work} is logged, as the loop logs a task's.
     */
    boolean runInline(Runnable work) {
        if (!driving || inline) return false;
        inline = true;
        try {
            work.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "a channel's completion handling: " + e, e);
        } finally {
            inline = false;
        }
        return true;
    }

    /** One duty cycle of every group this loop drives; drops the closed ones. */
    private int driveGroups() {
        int work = 0;
        for (int i = 0; i < groups.size(); i++) {
            EndpointGroup g = groups.get(i);
            try {
                work += g.invoker().invoke();
            } catch (RuntimeException e) {
                if (g.isOpen()) {
                    LOG.log(System.Logger.Level.WARNING, "driving " + g.device().name() + ": " + e, e);
                }
            }
            if (!g.isOpen()) {
                groups.remove(i--);
                clientGroups.values().remove(g);
                publishGroups();
            }
        }
        return work;
    }

    /** Nothing was done: poll on within the busy-poll budget, or sleep until a completion, task or timer. */
    private void idle(IoHandlerContext context) {
        long delay = context.delayNanos(System.nanoTime());
        if (groups.isEmpty()) {
            parked = true; // announced before the last look at the tasks: wakeup() unparks from here on
            try {
                if (context.canBlock()) LockSupport.parkNanos(this, delay);
            } finally {
                parked = false;
            }
            return;
        }
        EndpointGroup g = groups.get(0);
        long max = groups.size() == 1 ? delay : Math.min(delay, MULTI_GROUP_SLEEP_NANOS);
        driving = true;
        try {
            // the group announces its sleep before it asks canBlock: a task added then wakes it (wakeup())
            if (!preemption.enabled()) {
                g.invoker().idle(max, canBlock(context));
            } else if (!preemption.maySpin(System.nanoTime())) {
                g.invoker().sleep(max, canBlock(context));
            } else if (g.invoker().idle(max, canBlock(context)) && context.canBlock()) {
                preemption.spun(System.nanoTime()); // nothing else to do: the next run() comes at once
            }
        } catch (RuntimeException e) {
            if (g.isOpen())
                LOG.log(System.Logger.Level.WARNING, "idle on " + g.device().name() + ": " + e);
        } finally {
            driving = false;
        }
    }

    /**
     * Another thread added a task: wakes the loop only if it sleeps, or is about to (it announces that, then looks at
     * its tasks once more), as epoll's handler writes its eventfd only then. A loop that works or polls on sees the
     * task in its next turn: waking it anyway cost a lock and a signal per task, and left a sticky wakeup that ended
     * the loop's next sleep at once.
     */
    /** {@code context::canBlock}, made once per context (the loop's is always the same): an idle turn allocates nothing. */
    private BooleanSupplier canBlock(IoHandlerContext context) {
        if (context != canBlockOf) {
            canBlockOf = context;
            canBlock = context::canBlock;
        }
        return canBlock;
    }

    @Override
    public void wakeup() {
        if (!executor.isExecutorThread(Thread.currentThread())) {
            EndpointGroup[] driven = wakeable;
            if (driven.length > 0) driven[0].invoker().wakeup(); // it sleeps on its first group's channel
            if (parked) {
                Thread t = loopThread;
                if (t != null) LockSupport.unpark(t);
            }
        }
    }

    /** The groups after a change of {@link #groups} (read by {@link #wakeup} from other threads). */
    private void publishGroups() {
        wakeable = groups.toArray(new EndpointGroup[0]);
    }

    /**
     * The loop shuts down: closes its channels. A channel's graceful close runs on a closer thread ({@link #closer})
     * and ends by handing the loop its {@code channelInactive} and deregistration, so the loop drives its groups (the
     * closes need their owner) until every close in flight has done so, for at most {@link #CLOSE_WAIT_NANOS}: a loop
     * that ended first rejected those tasks (the handlers never saw the channel go inactive) and Netty logged
     * {@code RejectedExecutionException: event executor terminated}.
     */
    @Override
    public void prepareToDestroy() {
        closeChannelsAndWait();
    }

    /**
     * Closes this loop's channels and drives its groups until their closes in flight have handed the loop their last
     * task ({@link #prepareToDestroy}); loop thread only, once per shutdown (nothing left to close after it).
     */
    private void closeChannelsAndWait() {
        for (RdmaIoHandle h : Set.copyOf(handles)) h.closeNow();
        handles.clear();
        long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
        while (closing.get() > 0 && System.nanoTime() - deadline < 0) {
            driving = true;
            try {
                if (driveGroups() == 0) Thread.yield();
            } finally {
                driving = false;
            }
        }
    }

    /**
     * Where a channel of this loop runs the blocking part of its close: {@link RdmaChannel#CLOSER}, counted until the
     * close, and the task it hands the loop at its end, are done ({@link #prepareToDestroy} waits for them).
     */
    Executor closer() {
        return close -> {
            closing.incrementAndGet();
            try {
                RdmaChannel.CLOSER.execute(() -> {
                    try {
                        close.run();
                    } finally {
                        closing.decrementAndGet();
                    }
                });
            } catch (RuntimeException | Error e) {
                closing.decrementAndGet();
                throw e;
            }
        };
    }

    @Override
    public void destroy() {
        for (EndpointGroup g : clientGroups.values()) {
            try {
                g.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing a client group: " + e);
            }
        }
        clientGroups.clear();
        groups.clear();
        publishGroups();
        CURRENT.remove();
    }

    @Override
    public IoRegistration register(IoHandle handle) {
        if (!(handle instanceof RdmaIoHandle h)) {
            throw new IllegalArgumentException("an RDMA event loop serves jrdma channels, not "
                    + handle.getClass().getName());
        }
        if (!handles.add(h)) throw new IllegalStateException(handle + " is already registered");
        return new Registration(h);
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return RdmaIoHandle.class.isAssignableFrom(handleType);
    }

    private final class Registration implements IoRegistration {
        private final AtomicBoolean cancelled = new AtomicBoolean();
        private final RdmaIoHandle handle;

        Registration(RdmaIoHandle handle) {
            this.handle = handle;
        }

        @Override
        public <T> T attachment() {
            return null;
        }

        @Override
        public long submit(IoOps ops) {
            throw new UnsupportedOperationException("jrdma channels submit no I/O operations to their event loop");
        }

        @Override
        public boolean isValid() {
            return !cancelled.get();
        }

        @Override
        public boolean cancel() {
            if (!cancelled.compareAndSet(false, true)) return false;
            if (executor.isExecutorThread(Thread.currentThread())) {
                handles.remove(handle);
            } else {
                executor.execute(() -> handles.remove(handle));
            }
            return true;
        }
    }
}
