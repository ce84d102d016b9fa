package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Who takes one software device's packets from its link, and when: polling application threads and the device's
 * receive thread, each with a {@link Receiver} of its own.
 *
 * <p>Received packets are handled by whichever thread drives the device: it drains the link (non-blocking) packet
 * by packet and hands each to the {@link PacketHandler} (checks, then the destination QP under its lock); when the
 * link is empty it sends the ACKs that the packets of this burst asked for (ACK coalescing, {@link OwedAcks}). An
 * application thread that polls a CQ of the device drives it itself ({@link #progressFromPoll}, the model of UCX's
 * worker progress), so a busy-polling application gets its completions on its own thread with no hand-off and no
 * wake-up. The receive thread drives it for traffic nobody polls for (event mode, passive one-sided targets): it
 * blocks in the link while no thread has polled for {@link #POLL_QUIET_NANOS}, and stays off the link (parked, not
 * woken by packets) while one has. Polling threads drive one at a time (a lock only ever tried, never waited for);
 * the receive thread has a {@link Receiver} of its own, so a poller descheduled in the middle of its drive never
 * stops the device. Each packet is received by exactly one thread (the link hands it out once), handled under its
 * QP's lock, and every drive ends by sending the ACKs its packets asked for. Each receiver's buffer is preallocated
 * and direct: no allocation per packet.
 *
 * <p>All time comes from the {@link Clock}, as an argument: the receive thread's duty cycle is {@link #doWork} (what
 * Aeron's agents call it), which decides and drives without blocking and says how long to wait; its loop only waits.
 * Tests call {@link #doWork}, {@link #progressFromPoll} and {@link #pollerWaits} with the times they choose.
 */
final class ProgressEngine {
    /** Checks one received packet and delivers it (production: {@link PacketDispatch}). */
    @FunctionalInterface
    interface PacketHandler {
        /**
         * Handles the packet of {@code len} bytes at the start of {@code buf} (its memory {@code seg}) from {@code from},
         * with the scratch of {@code r}; {@code repeat}: the second handling of a packet at a takeover
         * ({@link #repeatInHand}).
         *
         * @return whether the packet reached its QP
         */
        boolean handle(Receiver r, InetSocketAddress from, ByteBuffer buf, MemorySegment seg, int len, boolean repeat);
    }

    /** An application thread holds the drive for at most this many packets per poll, so poll returns promptly. */
    static final int POLL_BUDGET = 64;
    /** The receive thread's batch between two looks at whether it should step back. */
    static final int RX_BUDGET = 256;
    /**
     * The receive thread stays off the link until no application thread has polled for this long (or one that
     * polled starts waiting for a completion event): the longest a packet can wait when a poller stops polling
     * without waiting for an event, e.g. to spin on memory that a peer writes.
     */
    static final long POLL_QUIET_NANOS = 1_000_000;
    /**
     * How long a thread descheduled inside the link's receive call keeps the link: the packets it is taking are older
     * than any a taker would receive, so a takeover then reorders them (a PSN gap at their QPs). Long enough for most
     * stalls under emulation, far below a retransmission timeout. The guest runs that chose it: jrdma-soft/README.md,
     * "Interoperating with kernel Soft-RoCE".
     */
    static final long RECEIVE_STALL_NANOS = 10_000_000;
    /** {@link #doWork}'s answer when the receive thread should block in the link until a packet may be waiting. */
    static final long AWAIT_LINK = -1;
    /** The receive thread's wait while a poller holds the link and still makes progress: it looks again this soon. */
    static final long HOLDER_BUSY_NANOS = 50_000;
    /** The receive thread's wait, before it blocks, for a poller that left ACKs owed a moment ago (that poller may send them). */
    private static final long ACKS_LEFT_NANOS = 20_000;

    /**
     * With {@link #pollYield}, a polling thread that found nothing gives its CPU up ({@link Thread#yield}) while the
     * packet it sent a same-host
     * peer last has waited this long in the peer's ring ({@link Link#peerBehind}): a peer polling on a core of its own
     * takes a packet within a microsecond or two, so the peer's thread is runnable but has no CPU, and on a busy
     * machine the core it waits for may be the one this thread spins on. Without it, two busy-polling threads of a
     * ping-pong that share a core each wait for the other's whole busy-poll budget: a round trip of two budgets
     * (netty-bench's ~211 us, see jrdma-soft/README.md).
     */
    static final long PEER_BEHIND_NANOS = 5_000;
    /**
     * {@code -Djrdma.soft.pollYield=on}: the yield of {@link #PEER_BEHIND_NANOS}. Off by default: under load it keeps
     * the two threads of a ping-pong on one core for good, at 15-23 us a round trip (netty-bench, load 2.3-12), where
     * without it they sit at two busy-poll budgets (~211 us) until they happen to move apart, then at ~3 us (two of
     * four runs at the same loads); and it put {@code send_lat} at ~7 us one way against ~1.5 (jrdma-soft/README.md).
     * Tests set it (package-private).
     */
    static volatile boolean pollYield = "on".equals(System.getProperty("jrdma.soft.pollYield", "off"));

    /**
     * A same-host peer that has left this device's last packet untaken for this long is starved of a CPU, not slow:
     * polling on a core of its own it takes a packet within a microsecond or two (a window of 64 small packets within
     * ~20 us at 3 Mpps), and a poller's time slice or a scheduler tick is milliseconds. A poll that finds nothing then
     * sleeps {@link #STARVED_PARK_NANOS} ({@link #pollPark}). Longer than that sleep really lasts (the timer slack
     * adds ~50 us): a peer that sleeps so must be back before this side takes it for starved, or the two would put
     * each other to sleep in turn for good (at 50 us they did: a steady 0.30 Mpps at 2 B, sendbw22).
     */
    static final long PEER_STARVED_NANOS = 100_000;
    /** How long a poll sleeps at a starved peer ({@link #PEER_STARVED_NANOS}), asked: the OS adds its timer slack. */
    static final long STARVED_PARK_NANOS = 10_000;
    /**
     * {@code -Djrdma.soft.pollPark=on} (off by default, until its cost where nothing is starved is measured: latency,
     * netty-bench, quiet compares): a poll that found nothing while the same-host peer is starved ({@link
     * #PEER_STARVED_NANOS}) sleeps {@link #STARVED_PARK_NANOS}, so the busy poller stops holding the core the peer waits
     * for. Two busy pollers on one core (a send_bw pair when anything else takes the other core) otherwise take turns
     * once a time slice: each spins through its slice while the other holds what it waits for (issue 23 §5's slow
     * send_bw mode, 0.02-0.05 Mpps against ~3; with it 0.2-0.3 where the two stay on one core: jrdma-bench README,
     * "sendbw22"). Unlike {@link #pollYield} the sleeping thread leaves the run queue: the peer runs at once, and the
     * sleeper, woken, is placed on a CPU afresh, where a yielding thread stays runnable beside the peer. Tests set it.
     */
    static volatile boolean pollPark = "on".equals(System.getProperty("jrdma.soft.pollPark", "off"));

    /** The link; null for a detached device (tests that drive the engines by hand: then nothing here receives). */
    private final Link link;

    private final Clock clock;
    private final PacketHandler handler;
    private final ReplyTurns turns;
    private final Counter.Set counters;
    private final String device;

    // two receivers, one for polling application threads (one at a time), one for the receive thread
    private final Receiver pollRx, threadRx;
    /**
     * The receiver whose thread takes packets from the link now (null: none), so that packets are handled in the order
     * they arrived (a batch taken by one thread and handled after a later batch another thread took looks to the QPs
     * like loss: READ re-requests, out-of-window ACKs) and two threads never contend in the link's receive call (the
     * JDK's socket lock allocates a queue node per contended call). Only ever tried, never waited for: a thread that
     * finds its holder making no progress for {@link #POLL_QUIET_NANOS} (descheduled in its drive) takes it over, and
     * first handles what is left of the holder's batch, in order ({@link Receiver#cursor}).
     */
    private final AtomicReference<Receiver> linkOwner = new AtomicReference<>();
    /**
     * The warnings of failures that can repeat on every packet or drive (a link that throws, a packet whose handling
     * throws): one a second at most, with the count held back; each failure is counted in {@code rx_dropped} as well.
     */
    private final LogLimiter failures;
    /** When an application thread last polled a CQ of this device ({@link Clock} time). */
    private volatile long lastPollNanos;
    /** The receive thread is (about to be) parked off the link because a thread polled recently. */
    private volatile boolean rxSteppedBack;
    /**
     * The receive thread is about to block until a packet arrives (or blocks): a polling thread then sends its ACKs at
     * once, since nothing would send them if the application stopped polling (it sets {@link OwedAcks#left} before it
     * reads this, the receive thread this before it reads that, so one of them sees the other).
     */
    private volatile boolean rxAwaiting;

    /**
     * Who runs the receive thread's duty ({@link #doWork} and the wait in the link) now: the receive thread, an
     * application thread that waits for a completion event and stands in for it ({@link #standIn}), or nobody (the
     * receive thread between passes). One at a time: one thread ever sleeps in the link, so a packet wakes exactly
     * the thread that will handle it.
     */
    private final AtomicReference<Thread> duty = new AtomicReference<>();
    /**
     * The receive thread, holding the duty, sleeps in the link (or is about to): a thread that wants to stand in may
     * take the duty from it then without its help (it is not driving), and wakes it out of the link.
     */
    private volatile boolean rxInLink;
    /** The receive thread is (about to be) parked because a standing-in thread has the duty: the one that ends unparks it. */
    private volatile boolean rxParkedForDuty;

    private volatile boolean running;
    /** The receive thread; never started for a detached device (it stands for the device's threads in checks). */
    final Thread receiveThread;

    ProgressEngine(
            Link link, Clock clock, PacketHandler handler, ReplyTurns turns, Counter.Set counters, String device) {
        this.link = link;
        this.clock = clock;
        this.handler = handler;
        this.turns = turns;
        this.counters = counters;
        this.device = device;
        this.failures = new LogLimiter(System.getLogger("dev.jrdma.soft"), clock, 1_000_000_000L);
        this.pollRx = new Receiver(1, new OwedAcks(counters, device));
        this.threadRx = new Receiver(2, new OwedAcks(counters, device));
        this.lastPollNanos = clock.nanoTime() - POLL_QUIET_NANOS;
        this.running = link != null;
        this.receiveThread = link == null
                ? Thread.ofPlatform().unstarted(() -> {})
                : Thread.ofPlatform().daemon().name("jrdma-soft-rx-" + device).unstarted(this::receiveLoop);
    }

    void start() {
        receiveThread.start();
    }

    /** Ends the receive thread (waits up to 2 s for it); the caller closes the link afterwards. */
    void stop() {
        running = false;
        if (link == null) return;
        link.wakeup();
        LockSupport.unpark(receiveThread);
        try {
            receiveThread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- the application's side ---------------------------------------------------------------------

    /**
     * A CQ of this device is being polled at {@code now}: handle what the link holds on the polling thread (no
     * hand-off to the receive thread). Does nothing when another thread drives the device at this moment: that one's
     * completions become visible to the next poll. With {@link #pollYield}, a poll that found nothing while the
     * same-host peer has not taken this device's last packet for {@link #PEER_BEHIND_NANOS} gives the CPU up once;
     * with {@link #pollPark}, one that found nothing while that packet has waited {@link #PEER_STARVED_NANOS} sleeps.
     */
    void progressFromPoll(long now) {
        if (link == null) return;
        if (lastPollNanos != now) lastPollNanos = now; // a volatile store (a fence) only when the time moved on
        int n = drive(pollRx, POLL_BUDGET, now);
        if (n != 0) return;
        if (pollYield && link.peerBehind(now, PEER_BEHIND_NANOS)) {
            // the peer's thread is runnable but has no CPU, and this thread's spin may be what holds it off
            counters.add(Counter.POLL_YIELDS);
            Thread.yield();
        } else if (pollPark && now != starvedCheckedAt) {
            // once per clock reading, not per poll: the look reads the peer's ring, a cache line the peer writes
            starvedCheckedAt = now;
            if (link.peerBehind(now, PEER_STARVED_NANOS)) {
                counters.add(Counter.POLL_PARKS);
                LockSupport.parkNanos(STARVED_PARK_NANOS);
            }
        }
    }

    /** The time of {@link #progressFromPoll(long)}'s last look for a starved peer (racy between pollers: any will do). */
    private long starvedCheckedAt;

    /**
     * {@link #progressFromPoll(long)} at the time of the poll, near enough: the clock is read on every
     * {@link #POLL_CLOCK_EVERY}th poll (a busy poller's empty polls come a fraction of a microsecond apart, and each read
     * costs ~20-30 ns in a VM), and on every poll with {@link #pollYield} (its 5 us wait is measured). The other polls
     * reuse the last time and are counted ({@link #staleStamps}): a poller that polls less often than every
     * {@link #POLL_QUIET_NANOS} / {@link #POLL_CLOCK_EVERY} leaves a time older than it is, and the receive thread then
     * learns from the count that polls go on ({@link #doWork}). A stale time delays a takeover by a few polls.
     */
    void progressFromPoll() {
        long now = pollTime;
        if (pollYield || --pollsUntilClock <= 0) {
            pollsUntilClock = POLL_CLOCK_EVERY;
            pollTime = now = clock.nanoTime();
        } else {
            staleStamps++;
        }
        progressFromPoll(now);
    }

    /** How often {@link #progressFromPoll()} reads the clock: once in this many polls. */
    static final int POLL_CLOCK_EVERY = 8;
    /**
     * The receive thread's next look when polls went on since its last one with the time of an earlier poll (a poller
     * slower than {@link #POLL_QUIET_NANOS} / {@link #POLL_CLOCK_EVERY}; see {@link #progressFromPoll()}).
     */
    static final long STALE_LOOK_NANOS = POLL_QUIET_NANOS / 4;
    /** The time {@link #progressFromPoll()} read last (racy between polling threads: any recent value will do). */
    private long pollTime;
    /** Polls left before {@link #progressFromPoll()} reads the clock again (racy, as {@link #pollTime}). */
    private int pollsUntilClock;
    /**
     * Polls that reused an earlier time (racy, written by pollers; read by the receive thread: a plain field, each
     * poller's write is seen within its next fences, long before the receive thread's next look).
     */
    private int staleStamps;
    /** {@link #staleStamps} at the receive thread's last look (its own). */
    private int staleStampsSeen;

    /**
     * A thread is about to block for a completion event of this device: the receive thread takes over now (it may
     * be parked because that thread polled a moment ago), so the event's packet does not wait for the quiet time.
     */
    void pollerWaits(long now) {
        if (link == null) return;
        lastPollNanos = now - POLL_QUIET_NANOS;
        if (rxSteppedBack) {
            Thread d = duty.get(); // a thread standing in steps back as the receive thread does
            LockSupport.unpark(d != null ? d : receiveThread);
        }
    }

    /**
     * The calling thread waits for a completion event of this device until {@code done} says it came (or the wait
     * ends otherwise), for at most {@code timeoutNanos}: it stands in for the receive thread meanwhile —
     * runs its {@link #doWork} and sleeps in the link itself — so that a packet wakes the waiting thread, which handles
     * it and finds its completion: one wake-up per message, as a socket's reader has, where the receive thread would
     * add one (it wakes, handles the packet, then wakes the waiter). The receive thread stands aside while a thread
     * stands in (when it has the duty it is asked to hand it over) and takes it back when that thread leaves; the
     * leaving thread counts as a poll ({@link #POLL_QUIET_NANOS}: it polls or waits again soon).
     *
     * @param done whether the wait is over (an event, a wake-up, a close); the caller's {@link #wakeStandIn} ends the
     *     link's wait when it changes on another thread
     * @param timeoutNanos the longest wait ({@link Long#MAX_VALUE}: none)
     * @return false, having done nothing, when another thread stands in now (or the link cannot wait with a limit, or
     *     fails): the caller waits its own way then, and the thread with the duty handles its packets
     */
    boolean standIn(BooleanSupplier done, long timeoutNanos) {
        if (link == null || !running) return false;
        Thread me = Thread.currentThread();
        long start = clock.nanoTime();
        if (!takeDuty(me)) return false;
        boolean served = true;
        long handledBefore = threadRx.handled;
        try {
            lastPollNanos = clock.nanoTime() - POLL_QUIET_NANOS; // nobody polls for this thread now: drive at once
            counters.add(Counter.RX_STAND_INS);
            // an interrupt is seen between passes (not inside the link's wait): the caller's wait then throws
            while (running && !done.getAsBoolean() && !me.isInterrupted()) {
                long now = clock.nanoTime(), left = timeoutNanos - (now - start);
                if (left <= 0) break;
                long wait;
                try {
                    wait = standInPass(now);
                    if (done.getAsBoolean()) break;
                    if (wait == AWAIT_LINK) {
                        if (!awaitPackets(left)) {
                            served = false; // the link cannot wait with a limit: the caller waits as before
                            break;
                        }
                    } else if (wait > 0) {
                        Thread.yield(); // a poller is inside its drive: a few microseconds
                    }
                } catch (ClosedChannelException | ClosedSelectorException e) {
                    served = false; // the device is being released
                    break;
                } catch (IOException e) {
                    counters.add(Counter.RX_DROPPED);
                } catch (RuntimeException | Error e) {
                    counters.add(Counter.RX_DROPPED);
                    failures.warn("soft device " + device + ": receiving for a waiting thread failed", e);
                }
            }
        } finally {
            counters.add(Counter.RX_STAND_IN_PACKETS, threadRx.handled - handledBefore);
            // this thread polls or waits again soon: the receive thread stays off the link that long
            lastPollNanos = clock.nanoTime();
            duty.set(null);
            if (rxParkedForDuty) LockSupport.unpark(receiveThread);
        }
        return served;
    }

    /**
     * Takes the duty for {@code me}: when nobody has it, or from the receive thread while it sleeps in the link (it is
     * woken, finds the duty gone and stands aside). Not while the receive thread drives (waiting for it would make this
     * thread's wake-up depend on another thread getting a CPU, on two loaded cores hundreds of microseconds), nor from
     * another standing-in thread: false then, and the caller waits as before.
     */
    private boolean takeDuty(Thread me) {
        while (true) {
            if (duty.compareAndSet(null, me)) return true;
            Thread holder = duty.get();
            if (holder == null) continue;
            if (holder != receiveThread || !rxInLink) return false;
            if (duty.compareAndSet(holder, me)) {
                // out of the link before this thread sleeps there: two sleepers share the link's eventfd and the
                // rings' waiting word, and this thread's next wait could take the wake-up meant for that one, which
                // would then sleep on with the waiting word cleared under it (a device that stops receiving)
                link.wakeup();
                while (rxInLink) Thread.yield();
                return true;
            }
        }
    }

    /**
     * Ends the wait of {@code waiter}, a thread that stands in ({@link #standIn}) and whose {@code done} changed on
     * another thread: it may sleep in the link, or be parked.
     */
    void wakeStandIn(Thread waiter) {
        if (duty.get() == waiter) link.wakeup();
        LockSupport.unpark(waiter);
    }

    /**
     * The device's timer is about to time a request out at {@code now}: handle what the link holds first, on the timer
     * thread, as a polling thread would (an ACK waiting there is not a lost ACK). Does nothing when another thread
     * drives the device at this moment.
     */
    void driveForTimer(long now) {
        if (link == null) return;
        drive(pollRx, POLL_BUDGET, now);
        sendAcksPollersLeft(); // the timer's thread posts nothing: no ACK waits for a request to carry it
    }

    // ---- the receive thread ---------------------------------------------------------------------------

    private void receiveLoop() {
        link.prepare(threadRx.batch);
        Thread me = Thread.currentThread();
        while (running) {
            if (!duty.compareAndSet(null, me)) {
                standAside();
                continue;
            }
            long wait = 0;
            boolean kept;
            try {
                try {
                    wait = doWork(clock.nanoTime());
                    if (wait == AWAIT_LINK) {
                        rxInLink = true; // from here a waiting thread may take the duty: this one only sleeps
                        if (duty.get() == me) awaitPackets();
                    }
                } finally {
                    rxInLink = false;
                    kept = duty.compareAndSet(me, null);
                }
                if (!kept) {
                    // a waiting thread took the duty while this one slept in the link: it may have taken the wake-up
                    // meant for that thread, or cleared the rings' waiting word under it: wake it to look again
                    link.wakeup();
                } else if (wait > 0) {
                    LockSupport.parkNanos(this, wait); // the duty is free meanwhile
                }
            } catch (ClosedChannelException | ClosedSelectorException e) {
                return;
            } catch (IOException e) {
                if (!running) return;
                counters.add(Counter.RX_DROPPED);
            } catch (RuntimeException | Error e) {
                counters.add(Counter.RX_DROPPED);
                failures.warn("soft device " + device + ": receive loop failed", e);
            }
        }
    }

    /**
     * One pass of the receive thread at {@code now}: it stays off the link while a thread polled less than
     * {@link #POLL_QUIET_NANOS} ago, else sends the ACKs a poller left owed and drives (taking the link over from a
     * poller stalled in its drive). Never blocks.
     *
     * @return how long to wait before the next pass (nanoseconds; 0: at once), or {@link #AWAIT_LINK}: until the
     *         link may hold a packet
     */
    long doWork(long now) {
        rxSteppedBack = true; // before reading lastPollNanos: pollerWaits writes and reads them the other way round
        long sincePoll = now - lastPollNanos;
        int stale = staleStamps;
        if (sincePoll < POLL_QUIET_NANOS) {
            // an application thread polls and takes the packets itself: stay off the link (no wake-up per packet,
            // which on a small machine preempts the poller) until it has not polled for a while
            staleStampsSeen = stale;
            return POLL_QUIET_NANOS - sincePoll;
        }
        if (stale != staleStampsSeen) {
            // polls went on since the last look with the time of an earlier one (a slow poller): look again soon
            staleStampsSeen = stale;
            return STALE_LOOK_NANOS;
        }
        rxSteppedBack = false;
        sendAcksPollersLeft();
        // the poller that polled last may still be inside its drive (descheduled): drive takes over then
        int n = drive(threadRx, RX_BUDGET, now);
        if (n < 0) return HOLDER_BUSY_NANOS; // a poller holds the link, still making progress: look again shortly
        if (n == RX_BUDGET || threadRx.turnsLeft)
            return 0; // more waiting, or READ responses to send: serve the link first
        // a thread that polled during this drive handles what comes next
        return running && now - lastPollNanos >= POLL_QUIET_NANOS ? AWAIT_LINK : 0;
    }

    /** The receive thread while a thread stands in: parks until that one leaves (it unparks this one). */
    private void standAside() {
        rxParkedForDuty = true;
        try {
            if (duty.get() != null && running) LockSupport.park(this);
        } finally {
            rxParkedForDuty = false;
        }
    }

    /**
     * One pass of a thread standing in ({@link #standIn}): {@link #doWork} without its step back for pollers. A thread
     * that polled a CQ of this device a moment ago may not poll again (a thread that polls once before it blocks
     * elsewhere), and the waiting thread's packet must not wait for {@link #POLL_QUIET_NANOS} then: it drives, and
     * when a poller is inside its drive right now, looks again at once.
     *
     * @return 0 to pass again at once, a positive value when a poller drives now, or {@link #AWAIT_LINK}
     */
    private long standInPass(long now) {
        sendAcksPollersLeft();
        int n = drive(threadRx, RX_BUDGET, now);
        if (n < 0) return 1;
        if (n == RX_BUDGET || threadRx.turnsLeft) return 0;
        return AWAIT_LINK;
    }

    /** Blocks until the link may hold a packet (or {@link #stop}), unless a poller left ACKs owed just now. */
    void awaitPackets() throws IOException {
        awaitPackets(-1);
    }

    /**
     * {@link #awaitPackets()} for at most {@code timeoutNanos} (-1: no limit).
     *
     * @return false when the link cannot wait with a limit (nothing was waited for)
     */
    private boolean awaitPackets(long timeoutNanos) throws IOException {
        rxAwaiting = true;
        try {
            if (pollRx.acks.left) {
                // a poller's drive left ACKs owed just now: send them first (that poller may hold them: not too
                // eagerly)
                LockSupport.parkNanos(
                        this, timeoutNanos < 0 ? ACKS_LEFT_NANOS : Math.min(timeoutNanos, ACKS_LEFT_NANOS));
                return true;
            }
            if (timeoutNanos < 0) {
                link.await();
                return true;
            }
            return link.await(timeoutNanos);
        } finally {
            rxAwaiting = false;
        }
    }

    /** The receive thread takes over: ACKs a polling thread left owed are sent now (when no poller drives at this moment). */
    private void sendAcksPollersLeft() {
        Receiver r = pollRx;
        if (!r.acks.left || !r.lock.compareAndSet(false, true)) return;
        try {
            r.acks.sendAll();
        } finally {
            r.lock.set(false);
        }
    }

    // ---- driving ----------------------------------------------------------------------------------------

    /**
     * Receives and handles up to {@code budget} packets with {@code r}, then sends the coalesced ACKs; never blocks.
     * It drives as the link's owner ({@link #linkOwner}), or takes the link over when the other receiver's thread owns
     * it and has made no progress (no drive begun, no packet claimed) for {@link #POLL_QUIET_NANOS}: that thread is
     * descheduled in its drive. A takeover first handles the rest of the stalled thread's batch, so the order of
     * arrival holds: the packet the stalled thread is in the middle of again ({@link #repeatInHand}), then the ones it
     * has not claimed (from the takeover on only the taker claims them: {@link Receiver#seal}).
     *
     * @param now {@link Clock} time at the call
     * @return the number of packets handled, or -1 when another thread is driving with {@code r} or owns the link
     */
    private int drive(Receiver r, int budget, long now) {
        if (!r.lock.compareAndSet(false, true)) return -1;
        Receiver other = r == pollRx ? threadRx : pollRx;
        boolean owner = linkOwner.compareAndSet(null, r);
        if (!owner) {
            boolean takeOver = holderStalled(r, other, now);
            if (takeOver) {
                other.borrowers.incrementAndGet(); // before the takeover: once the link is ours its owner may look
                takeOver = linkOwner.compareAndSet(other, r);
                if (!takeOver) other.borrowers.decrementAndGet();
            }
            if (!takeOver) {
                r.lock.set(false); // the other thread drives now: what it handles shows in the next poll
                return -1;
            }
        }
        r.owner = Thread.currentThread();
        r.drives++;
        r.progress.lazySet(r.progress.get() + 1);
        int n = 0;
        try {
            if (!owner) {
                counters.add(Counter.RX_TAKEOVERS);
                try {
                    other.seal(); // what the stalled thread received and has not handled yet is ours, in order
                    repeatInHand(r, other);
                    n += handleBatch(r, other);
                } finally {
                    other.borrowers.decrementAndGet();
                }
            }
            // a poller spins on the readiness check, outside the link's receive path (see Link.readable)
            boolean look;
            try {
                look = r != pollRx || link.readable();
            } catch (IOException | RuntimeException | Error e) {
                look = false; // the device was released, or the link fails: the receive thread's drive counts it
            }
            RxBatch batch = r.batch;
            // the owner check: a thread that took the link over from this one has it now, with the rest of this batch
            while (look && n < budget && linkOwner.get() == r && r.borrowers.get() == 0) {
                int got;
                try {
                    r.inReceive = true;
                    try {
                        got = link.receive(batch);
                        r.cursor.set((long) got << 32); // published for a takeover: got packets, the next is the first
                    } finally {
                        r.inReceive = false;
                    }
                } catch (ClosedChannelException e) {
                    break; // the device was released
                } catch (IOException | RuntimeException | Error e) {
                    // a failing link must not throw into an application's poll: counted, the next drive tries again
                    counters.add(Counter.RX_DROPPED);
                    if (!(e instanceof IOException)) failures.warn("soft device " + device + ": receiving failed", e);
                    break;
                }
                n += handleBatch(r, r);
                if (got == 0 || batch.drained) break; // the link said it is empty: no call to find that out again
            }
            // a polling application thread keeps the ACKs of this drive owed to peers that take carried ACKs: its
            // next post on the QP carries one in its request (a ping-pong's answer), its next drive sends it otherwise
            if (r == pollRx && n > 0) {
                if (r.acks.sendOwedBefore(r.drives) && rxAwaiting) r.acks.sendAll();
            } else {
                r.acks.sendAll();
            }
            r.turnsLeft = turns.run(r); // READ responses paced per pass: QPs that asked get their next turn now
        } finally {
            linkOwner.compareAndSet(r, null); // unless it was taken over
            r.owner = null;
            r.lock.set(false);
        }
        return n;
    }

    /** Handles, with {@code r}, the packets of {@code from}'s batch that nobody has claimed yet; returns how many. */
    private int handleBatch(Receiver r, Receiver from) {
        RxBatch batch = from.batch;
        boolean taker = r != from;
        int n = 0;
        for (int i; (i = from.claim(taker)) >= 0; ) {
            n++;
            r.handled++;
            r.progress.lazySet(r.progress.get() + 1);
            r.inHand.lazySet(from.tag << 32 | i);
            r.ecn = batch.ecn[i];
            try {
                handler.handle(r, batch.sources[i], batch.buffers[i], batch.segments[i], batch.lengths[i], false);
            } catch (RuntimeException | Error e) {
                // never let one packet stop the device, nor throw into an application's poll
                counters.add(Counter.RX_DROPPED);
                failures.warn("soft device " + device + ": packet handling failed", e);
            }
            r.inHand.lazySet(0);
        }
        return n;
    }

    /**
     * A takeover: handles again, with {@code r} and the slot's second view, the RC packet {@code stalled}'s thread is
     * in the middle of, so that its QP gets it before the ones {@code r} takes next (the stalled thread's own copy, when
     * it gets on, or this one, is then an RC duplicate: re-ACKed, never executed twice). Not a UD or UC packet: those
     * have no duplicate detection, and the QP would get it twice (the handler decides that).
     */
    private void repeatInHand(Receiver r, Receiver stalled) {
        long h = stalled.inHand.get();
        if (h == 0) return;
        RxBatch batch = (h >>> 32 == pollRx.tag ? pollRx : threadRx).batch;
        int i = (int) h;
        r.ecn = batch.ecn[i];
        try {
            if (handler.handle(r, batch.sources[i], batch.takerViews[i], batch.segments[i], batch.lengths[i], true))
                counters.add(Counter.RX_TAKEOVER_REPEATS);
        } catch (RuntimeException | Error e) {
            failures.warn("soft device " + device + ": packet handling failed", e);
        }
    }

    /**
     * The link is owned by {@code other}'s thread: whether that thread has made no progress for
     * {@link #POLL_QUIET_NANOS} ({@link #RECEIVE_STALL_NANOS} while it is inside the link's receive call), as far as
     * {@code r}'s thread has watched it (each failed try looks once).
     */
    private static boolean holderStalled(Receiver r, Receiver other, long now) {
        long p = other.progress.get();
        if (p != r.otherProgress) {
            r.otherProgress = p;
            r.otherStillSince = now;
            return false;
        }
        return now - r.otherStillSince >= (other.inReceive ? RECEIVE_STALL_NANOS : POLL_QUIET_NANOS);
    }

    // ---- what the QPs and tests ask ---------------------------------------------------------------------

    /** Called by a QP (on a driving thread, see {@link #driving}) that owes its peer an ACK at the end of this burst. */
    void ackLater(SoftQp qp) {
        Receiver r = pollRx.owner == Thread.currentThread() ? pollRx : threadRx;
        r.acks.add(qp);
        if (r == pollRx) qp.ackDrive = r.drives;
        else qp.ackRxDrive = r.drives;
    }

    /**
     * A QP whose ACK is owed already got another packet that asks for one: when the receive thread handles it while a
     * polling thread's receiver holds the ACK (it left it owed, or is descheduled in its drive), the receive thread
     * sends it too at the end of its burst, once per burst.
     */
    void ackAgain(SoftQp qp) {
        Receiver r = threadRx;
        if (r.owner != Thread.currentThread() || qp.ackRxDrive == r.drives) return;
        ackLater(qp);
    }

    /** Whether the calling thread is driving the device now (handling received packets): ACKs wait for the end of its burst. */
    boolean driving() {
        Thread t = Thread.currentThread();
        return pollRx.owner == t || threadRx.owner == t;
    }

    /** Runs {@code body} as the receive thread's drive runs its burst (tests): the ACKs it owes wait for the end. */
    void driveForTest(Runnable body) {
        threadRx.owner = Thread.currentThread();
        threadRx.drives++;
        try {
            body.run();
        } finally {
            threadRx.owner = null;
            threadRx.acks.sendAll();
        }
    }

    /**
     * Runs {@code body} as a polling application thread's drive runs its burst (tests): the ACKs it owes wait for the
     * end, where those owed to peers that take carried ACKs stay owed one drive longer ({@link OwedAcks#sendOwedBefore}).
     */
    void pollDriveForTest(Runnable body) {
        Receiver r = pollRx;
        r.owner = Thread.currentThread();
        r.drives++;
        try {
            body.run();
        } finally {
            r.owner = null;
            r.acks.sendOwedBefore(r.drives);
        }
    }

    /** A detached device's pass of READ-response turns (tests drive the engines by hand). */
    boolean runTurns() {
        return turns.run(threadRx);
    }

    /** Packets handled so far by polling application threads (racy read; counters and tests). */
    long rxByPoll() {
        return pollRx.handled;
    }

    /** Packets handled so far by the receive thread (racy read; counters and tests). */
    long rxByThread() {
        return threadRx.handled;
    }

    /** The receivers (tests: whose scratch a packet is handled with). */
    Receiver pollReceiver() {
        return pollRx;
    }

    Receiver threadReceiver() {
        return threadRx;
    }
}
