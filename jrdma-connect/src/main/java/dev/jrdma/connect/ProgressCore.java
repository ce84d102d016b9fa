package dev.jrdma.connect;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * The duty cycle of an {@link EndpointGroup}, after Aeron's agents: one owner thread at a time polls the group's
 * completion queues and dispatches each completion to its endpoint, runs the commands other threads handed it, and
 * fails what timed out, in {@link #doWork}, with the time passed in. The owner is the group's own thread
 * ({@link #runAsAgent}) or a caller that drives the group with no thread of its own ({@link EndpointGroup.Invoker},
 * e.g. a Netty event loop).
 *
 * <p>Idle policy: an owner that found nothing to do keeps polling for {@link #spinNanos()} after its last work (a
 * reply to a message just sent comes within tens of microseconds, sooner than a thread wakes up), then arms the CQs
 * and sleeps on the completion channel until a completion event, a {@link #wakeup}, or the next timeout check. While
 * it polls on it yields the processor every 10,000 turns, or, when {@link #YIELD_AFTER_NANOS} is set, at every turn
 * once it has polled that long without work: on a machine with more runnable threads than cores (two cores, a gRPC
 * call's own threads beside two event loops) a spinning owner holds a core that the thread it waits for may need. An
 * invoked owner (an event loop) spins only as long as its recent waits suggest ({@link AdaptiveSpin}; the fixed budget
 * with {@code -Djrdma.connect.adaptiveSpin=off}). A command offered while the owner sleeps wakes it. The time comes from the clock given at
 * construction, so tests drive timeouts by hand.
 *
 * <p>The owner alone runs the data path of the group's endpoints (post, poll, deliver, return credits, time out,
 * close), with no lock: another thread's call becomes a command on a {@link BoundedQueue} (bounded: a full queue is
 * back-pressure for at most the caller's patience, then a refusal, never a hang; see {@link #execute}).
 *
 * <p>It posts with {@code postSend} and polls into reused {@code WorkCompletion}s, not with {@code PreparedSend} and
 * {@code poll(Completions)}: a prepared send varies only its {@code wr_id}, an endpoint's sends vary the address, the
 * length and the immediate (the credits they return), so one would be prepared per send; and on the software device
 * both are the interface's defaults, a copy posted through {@code postSend} and a poll into {@code WorkCompletion}s
 * copied out, more work than the general calls (which allocate nothing here). See jrdma-connect's README.
 */
final class ProgressCore {
    /** What the core drives: the group's completion queues and endpoints. */
    interface Duty {
        /** Polls each CQ once and dispatches what it held; returns how many completions. */
        int poll();

        /** Polls until the CQs are empty (before commands run: see {@link ProgressCore#doWork}). */
        void drain();

        /** Fails the operations whose deadline passed at {@code now}. */
        void checkTimeouts(long now);

        /** Requests a completion event on every CQ (the next completion signals the channel). */
        void arm();

        /** Sleeps on the completion channel at most {@code nanos}, acknowledging the event it gets. */
        void await(long nanos);

        /** Ends an {@link #await} now, from any thread. */
        void wakeup();
    }

    /** How often the owner looks at timeouts. */
    static final long TIMEOUT_PERIOD_NANOS = 10_000_000L;
    /** The longest sleep: commands and timeouts are looked at this often even without a wakeup. */
    static final long MAX_SLEEP_NANOS = 10_000_000L;
    /** The busy-poll budget of {@link PollMode#EVENT} by default ({@code -Djrdma.connect.busyPollMicros}). */
    static final long DEFAULT_SPIN_NANOS = Long.getLong("jrdma.connect.busyPollMicros", 100) * 1000;
    /**
     * How long after its last work an owner polls on before it yields the processor at every turn ({@link #spinTurn});
     * off by default (it yields every 10,000 turns only), {@code -Djrdma.connect.yieldAfterMicros=N} turns it on.
     * Yielding at once (0) took gRPC's p50 on two cores at load 10-13 from 130-500 us to 62-72 us (jrdma-netty's
     * README), but put netty-bench's Netty ping-pong at ~20 us against 2.7, and 50 us put it at ~100 us in a run at
     * load 5 (the loop that yields does not give its core to the peer loop it waits for, which waits on the other core).
     */
    static final long YIELD_AFTER_NANOS =
            Math.multiplyExact(Long.getLong("jrdma.connect.yieldAfterMicros", Long.MAX_VALUE / 1000), 1000L);
    /** {@link PollMode#BUSY}: never sleep. */
    static final long SPIN_FOREVER = Long.MAX_VALUE;

    private final Duty duty;
    private final Clock clock;
    private final BoundedQueue<Runnable> commands;
    private volatile long spinNanos;
    /** The event loop's budget that follows its waits ({@link AdaptiveSpin}); null: the full budget always. */
    private AdaptiveSpin adaptiveSpin =
            AdaptiveSpin.ENABLED ? new AdaptiveSpin(AdaptiveSpin.DEFAULT_FLOOR_NANOS) : null;

    private volatile Thread owner;
    /** The owner is (about to be) asleep on the completion channel: a command offered now must wake it. */
    private volatile boolean sleeping;

    private volatile boolean running = true;
    /** Tests: the CQs are not polled (completions wait in them); commands and timeouts run on. */
    private volatile boolean completionsPaused;
    /**
     * Who drives now, for a group with a thread of its own: its agent, or a caller waiting for one of its results
     * ({@link #helpUntil}); only ever tried, never waited for. An invoked group has one driver and leaves it alone.
     */
    private final AtomicBoolean driving = new AtomicBoolean();
    /** Callers inside {@link #helpUntil} now: while one helps, the agent naps ({@link #runAsAgent}). */
    private final AtomicInteger helpers = new AtomicInteger();
    /** When the last {@link #helpUntil} that got its result ended ({@link System#nanoTime}: a scheduling matter). */
    private volatile long helpEndedAt = System.nanoTime() - DEFAULT_SPIN_NANOS - 1;
    // owner only
    private int dutyDepth;
    private long nextTimeoutCheck;
    private long lastWork;
    private int idleTurns;

    ProgressCore(Duty duty, Clock clock, int commandCapacity, long spinNanos) {
        this.duty = duty;
        this.clock = clock;
        this.commands = new BoundedQueue<>(commandCapacity);
        this.spinNanos = spinNanos;
        long now = clock.nanoTime();
        this.nextTimeoutCheck = now;
        this.lastWork = now;
    }

    long spinNanos() {
        return spinNanos;
    }

    void spinNanos(long nanos) {
        if (nanos < 0) throw new IllegalArgumentException("the busy-poll budget must not be negative, not " + nanos);
        spinNanos = nanos;
    }

    long now() {
        return clock.nanoTime();
    }

    /** Tests: an invoked owner's budget follows its waits ({@link AdaptiveSpin}) from now on. Owner only. */
    void adaptSpin(long floorNanos) {
        adaptiveSpin = new AdaptiveSpin(floorNanos);
    }

    boolean isOwnerThread() {
        return Thread.currentThread() == owner;
    }

    Thread owner() {
        return owner;
    }

    /** The caller's thread becomes the owner (the agent's thread, or an invoker's caller). */
    void takeOwnership() {
        owner = Thread.currentThread();
    }

    boolean isRunning() {
        return running;
    }

    /** No more duty cycles: the agent's loop ends, commands offered from now on are dropped. */
    void stop() {
        running = false;
        duty.wakeup();
    }

    /**
     * One duty cycle at {@code now}: polls the CQs once; when commands wait, drains the CQs first and then runs the
     * commands offered before that drain (a peer's goodbye, a command from its control channel, comes after its last
     * messages' completions reached the CQ, so those are delivered before it); every {@link #TIMEOUT_PERIOD_NANOS}
     * fails what timed out. Owner only.
     *
     * @return the completions and commands handled (0: nothing to do)
     */
    int doWork(long now) {
        dutyDepth++;
        try {
            return dutyCycle(now);
        } finally {
            dutyDepth--;
        }
    }

    /** Whether the owner is inside {@link #doWork} now (a callback of it): it must not drive again. Owner only. */
    boolean inDutyCycle() {
        return dutyDepth > 0;
    }

    private int dutyCycle(long now) {
        int work = poll();
        int waiting = commands.size();
        if (waiting > 0) {
            if (!completionsPaused) duty.drain();
            for (int i = 0; i < waiting; i++) {
                Runnable command = commands.poll();
                if (command == null) break;
                runSafely(command);
                work++;
            }
        }
        if (now - nextTimeoutCheck >= 0) {
            duty.checkTimeouts(now);
            nextTimeoutCheck = now + TIMEOUT_PERIOD_NANOS;
        }
        if (work > 0) {
            if (adaptiveSpin != null) adaptiveSpin.work(now);
            lastWork = now;
        }
        return work;
    }

    /**
     * What an owner that found nothing to do at {@code now} does: polls on while within its busy-poll budget (true),
     * else arms the CQs and sleeps on the completion channel for at most {@code maxSleepNanos} (false). Owner only.
     *
     * @return true when it only spun (the caller polls again at once)
     */
    boolean idle(long now, long maxSleepNanos) {
        return idle(now, maxSleepNanos, () -> true);
    }

    /**
     * {@link #idle(long, long)} for an owner with other work of its own (an event loop's tasks): {@code mayBlock} is
     * asked once the owner has announced its sleep ({@link #wakeupIfSleeping} then wakes it), so that work handed to
     * it by another thread just before is either seen here or ends the sleep. Owner only.
     *
     * @return true when it only spun (the caller polls again at once)
     */
    boolean idle(long now, long maxSleepNanos, BooleanSupplier mayBlock) {
        boolean spins;
        if (adaptiveSpin == null) {
            spins = spinsAt(now);
        } else {
            adaptiveSpin.idle(lastWork);
            long spin = spinNanos;
            spins = spin == SPIN_FOREVER || now - lastWork < adaptiveSpin.budget(spin);
        }
        if (spins) {
            spinTurn(now);
            return true;
        }
        if (adaptiveSpin != null) adaptiveSpin.slept();
        sleep(Math.min(maxSleepNanos, Math.max(0, nextTimeoutCheck - now)), mayBlock);
        lastWork = clock.nanoTime(); // woken (by an event, most likely): poll busily again for the budget
        return false;
    }

    /**
     * {@link #idle(long, long, BooleanSupplier)} with no spin: sleeps at once ({@link EndpointGroup.Invoker#sleep}); an
     * owner that never sleeps ({@link #SPIN_FOREVER}) polls on. Owner only.
     *
     * @return true when it only spun
     */
    boolean sleepNow(long now, long maxSleepNanos, BooleanSupplier mayBlock) {
        if (spinNanos == SPIN_FOREVER) return idle(now, maxSleepNanos, mayBlock);
        if (adaptiveSpin != null) adaptiveSpin.idle(lastWork);
        sleep(Math.min(maxSleepNanos, Math.max(0, nextTimeoutCheck - now)), mayBlock);
        lastWork = clock.nanoTime();
        return false;
    }

    /** Polls on at {@code now} (the owner found nothing to do): within the budget after its last work or wake-up. */
    private boolean spinsAt(long now) {
        long spin = spinNanos;
        return now - lastWork < spin || spin == SPIN_FOREVER;
    }

    /**
     * One turn of polling on: a reply that comes within {@link #YIELD_AFTER_NANOS} of the last work (a ping-pong over
     * the same host) is met by a plain spin; past that the turn yields the processor (see the class comment), which
     * the first microseconds do not, so that a quick reply is not held up behind another thread's turn.
     */
    private void spinTurn(long now) {
        if (now - lastWork >= YIELD_AFTER_NANOS) {
            Thread.yield();
        } else if (++idleTurns >= 10_000) {
            idleTurns = 0;
            Thread.yield(); // a busy-polling owner gives a loaded machine's other threads a turn now and then
        } else {
            Thread.onSpinWait();
        }
    }

    /** {@link #idle} for the agent: it holds the drive only to arm and poll, not while it sleeps. */
    private void agentIdle(long now) {
        if (spinsAt(now)) {
            spinTurn(now);
            return;
        }
        sleeping = true;
        try {
            if (!tryDrive()) return; // a caller drives now
            try {
                duty.arm();
                if (!commands.isEmpty() || !running || poll() > 0) return;
            } finally {
                release();
            }
            duty.await(Math.min(MAX_SLEEP_NANOS, Math.max(1, nextTimeoutCheck - now)));
        } finally {
            sleeping = false;
        }
        lastWork = clock.nanoTime();
    }

    /** Arms the CQs and sleeps on the channel unless a command or a completion came in the meantime. Owner only. */
    void sleep(long maxNanos) {
        sleep(maxNanos, () -> true);
    }

    private void sleep(long maxNanos, BooleanSupplier mayBlock) {
        sleeping = true;
        try {
            duty.arm();
            // after arming: what came before the arm is polled now, what comes after it signals the channel
            if (!commands.isEmpty() || !running || !mayBlock.getAsBoolean()) return;
            int n = poll();
            if (n > 0 || maxNanos <= 0) return;
            duty.await(maxNanos);
        } finally {
            sleeping = false;
        }
    }

    /**
     * Hands {@code command} to the owner, to run in its next duty cycle (after the completions that reached the CQs
     * before it). Any thread; lock-free. A full queue is back-pressure: the caller waits (the owner drains it) for at
     * most {@code patienceNanos} of the system's time, then the command is refused; refused at once after
     * {@link #stop}.
     *
     * @return whether the command was queued (false: the core stopped, or the queue stayed full)
     */
    boolean execute(Runnable command, long patienceNanos) {
        if (!running) return false;
        if (!commands.offer(command)) {
            long start = System.nanoTime(); // the real time: a test's clock stands still while the owner is stalled
            do {
                if (isOwnerThread()) {
                    doWork(clock.nanoTime()); // the owner itself fills its queue: run what waits
                } else {
                    duty.wakeup();
                    Thread.yield();
                }
                if (!running || System.nanoTime() - start > patienceNanos) return false;
            } while (!commands.offer(command));
        }
        if (sleeping) duty.wakeup();
        return true;
    }

    private int poll() {
        return completionsPaused ? 0 : duty.poll();
    }

    /**
     * Tests: stops (true) or resumes (false) polling the CQs, so that a completion waits in its CQ while the test
     * acts on the owner (gives an operation up at its deadline, say); commands and timeouts still run.
     */
    void pauseCompletions(boolean paused) {
        completionsPaused = paused;
        duty.wakeup();
    }

    /** Wakes the owner from its sleep on the completion channel (any thread). */
    void wakeup() {
        duty.wakeup();
    }

    /**
     * Wakes the owner only if it sleeps, or is about to: it re-checks its work after announcing that
     * ({@link #idle(long, long, BooleanSupplier)}), so a wakeup while it runs or polls on is not needed, and a sticky
     * one would only make its next sleep end at once. Any thread.
     */
    void wakeupIfSleeping() {
        if (sleeping) duty.wakeup();
    }

    int pendingCommands() {
        return commands.size();
    }

    /** Takes the drive if nobody has it (the caller becomes the owner until {@link #release}). */
    private boolean tryDrive() {
        if (!driving.compareAndSet(false, true)) return false;
        owner = Thread.currentThread();
        return true;
    }

    private void release() {
        owner = null;
        driving.set(false);
    }

    /**
     * Runs {@code command} at once on the calling thread, as the owner, when it can be: a group with a thread of its
     * own that nobody drives now and with no command waiting (those run first, in order: then the command is handed
     * over). For the data path of a thread that is not the owner (a send, a receive): it posts without a hand-off to
     * the agent and without waking it. Any thread but the agent's; not for an invoked group (its invoker drives
     * alone).
     *
     * @return whether {@code command} ran here (false: hand it over with {@link #execute})
     */
    boolean runIfFree(Runnable command) {
        if (!running || !commands.isEmpty() || !tryDrive()) return false;
        try {
            if (!commands.isEmpty() || !running) return false; // queued meanwhile: they run first, on the owner
            dutyDepth++;
            try {
                command.run();
            } finally {
                dutyDepth--;
            }
            lastWork = clock.nanoTime();
            return true;
        } finally {
            release();
        }
    }

    /**
     * A caller waiting for a result of this core ({@code done}) drives it on its own thread meanwhile, as the software
     * device lets a polling application drive its receive path: the completion it waits for is then polled and
     * dispatched right here, with no hand-off and no wake-up. It stops within the busy-poll budget after its last work
     * (or at {@code deadline}) and wakes the agent, which drives from then on. Any thread but the agent's.
     *
     * @return whether {@code done} held when it stopped
     */
    boolean helpUntil(BooleanSupplier done, long deadline) {
        long now = clock.nanoTime(), last = now;
        long budget = helpBudget();
        boolean got = false;
        helpers.incrementAndGet();
        try {
            while (!done.getAsBoolean()) {
                if (!running || now - last >= budget || now - deadline >= 0) return false;
                if (tryDrive()) {
                    try {
                        if (doWork(now) > 0) last = now;
                    } catch (RuntimeException e) {
                        if (!running) return false; // the group closed under the caller: its wait reports that
                        throw e;
                    } finally {
                        release();
                    }
                }
                Thread.onSpinWait();
                now = clock.nanoTime();
            }
            got = true;
            return true;
        } finally {
            if (got) helpEndedAt = System.nanoTime(); // it may be back soon (a ping-pong): the agent naps on a while
            helpers.decrementAndGet();
            // a caller that gives up waits without driving: the agent, napping or asleep unarmed, takes over now
            if (!got) wakeup();
        }
    }

    /** How long a waiting caller drives without work, and how long the agent naps after a caller's help. */
    private long helpBudget() {
        return Math.min(spinNanos(), DEFAULT_SPIN_NANOS);
    }

    /**
     * Whether a caller helps now, or did within the help budget: the agent then naps, not polls. A ping-pong's
     * caller ({@code send}, then {@code receive(timeout)}) drives each round trip itself; an agent polling beside it
     * took a core of two from the peer's thread and competed for the drive, and one woken after every call cost the
     * caller a lock and a signal.
     */
    private boolean helped() {
        return helpers.get() > 0 || System.nanoTime() - helpEndedAt < helpBudget();
    }

    /** The group's own thread: duty cycles until {@link #stop}; a failure of the device is logged, not fatal. */
    void runAsAgent(System.Logger log, String name) {
        while (running) {
            try {
                long now = clock.nanoTime();
                if (helped()) {
                    // a caller drives, or did a moment ago and may be back: nap (CQs not armed) for the budget; one
                    // that gives up its wait wakes this thread (helpUntil)
                    duty.await(helpBudget());
                    continue;
                }
                if (!tryDrive()) {
                    Thread.onSpinWait(); // a caller posts a send or a receive right now (runIfFree): a moment
                    continue;
                }
                int work;
                try {
                    work = doWork(now);
                } finally {
                    release();
                }
                if (work == 0) agentIdle(now);
            } catch (RuntimeException | Error e) {
                // this thread serves every endpoint of the group: it reports and goes on (the device's own failures)
                if (!running) break;
                log.log(System.Logger.Level.WARNING, name + ": " + e, e);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException ie) {
                    break;
                }
            }
        }
    }

    private static void runSafely(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | Error e) {
            System.getLogger(ProgressCore.class.getName())
                    .log(System.Logger.Level.ERROR, "command on the progress core: " + e, e);
        }
    }
}
