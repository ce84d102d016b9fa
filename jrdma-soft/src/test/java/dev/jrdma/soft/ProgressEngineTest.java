package dev.jrdma.soft;

import static dev.jrdma.soft.ProgressEngine.AWAIT_LINK;
import static dev.jrdma.soft.ProgressEngine.HOLDER_BUSY_NANOS;
import static dev.jrdma.soft.ProgressEngine.POLL_QUIET_NANOS;
import static dev.jrdma.soft.ProgressEngine.RECEIVE_STALL_NANOS;
import static org.junit.jupiter.api.Assertions.*;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The progress engine on one thread with a {@link ManualClock}: who takes the link when, with no sleeps and no
 * receive thread. A thread "descheduled" in its drive is one whose link call or packet handler runs the other
 * receiver's turn (the receive thread's {@link ProgressEngine#doWork}, or a poll) at times the test chooses; the
 * {@link ProgressTest} stall tests show the same with real threads and sockets.
 */
class ProgressEngineTest {
    private static final InetSocketAddress PEER = new InetSocketAddress(SoftDevices.ip("127.0.0.2"), 4791);

    private final ManualClock clock = new ManualClock();
    private final Counter.Set counters = new Counter.Set();
    private final ScriptedLink link = new ScriptedLink();
    /** Each packet handled, in order: by which receiver, its number (its first byte), and whether a takeover repeated it. */
    private final List<String> handled = new ArrayList<>();
    /** What runs while the packet with this number is first handled (the handling thread is descheduled there). */
    private final Map<Integer, Runnable> whileHandling = new HashMap<>();

    private final ProgressEngine engine =
            new ProgressEngine(link, clock, this::record, new ReplyTurns(counters, "test"), counters, "test");

    private boolean record(
            Receiver r,
            InetSocketAddress from,
            ByteBuffer buf,
            java.lang.foreign.MemorySegment seg,
            int len,
            boolean repeat) {
        assertEquals(PEER, from);
        int id = buf.get(0);
        handled.add((r == engine.pollReceiver() ? "poll " : "thread ") + id + (repeat ? " again" : ""));
        Runnable stall = repeat ? null : whileHandling.remove(id);
        if (stall != null) stall.run();
        return true;
    }

    @Test
    void theReceiveThreadStaysOffTheLinkUntilNobodyHasPolledForTheQuietTime() {
        long t = clock.nanoTime();
        engine.progressFromPoll(t);
        assertEquals(0, link.receiveCalls, "an empty link: the poller looked without receiving");
        assertEquals(
                POLL_QUIET_NANOS / 2, engine.doWork(t + POLL_QUIET_NANOS / 2), "parked for the rest of the quiet time");
        link.arrive(1);
        assertEquals(1, engine.doWork(t + POLL_QUIET_NANOS - 1), "still parked, a packet waiting or not");
        assertEquals(0, link.receiveCalls);
        assertEquals(
                AWAIT_LINK,
                engine.doWork(t + POLL_QUIET_NANOS),
                "the poller went quiet: the receive thread drives, then blocks");
        assertEquals(List.of("thread 1"), handled);
        assertEquals(1, engine.rxByThread());

        // a poller polls again, then waits for an event: the receive thread drives at once, without the quiet time
        long t2 = t + 5 * POLL_QUIET_NANOS;
        engine.progressFromPoll(t2);
        assertTrue(engine.doWork(t2 + 1) > 0, "parked: a poller is active");
        engine.pollerWaits(t2 + 2);
        link.arrive(2);
        assertEquals(AWAIT_LINK, engine.doWork(t2 + 3), "the receive thread drove at once");
        assertEquals(List.of("thread 1", "thread 2"), handled);
        assertEquals(0, counters.get(Counter.RX_TAKEOVERS));
    }

    /**
     * A busy poller reads the clock once in {@link ProgressEngine#POLL_CLOCK_EVERY} polls; polls that reuse an older
     * time still keep the receive thread off the link (it looks again {@link ProgressEngine#STALE_LOOK_NANOS} later),
     * and once they stop it drives.
     */
    @Test
    void pollsReadTheClockOnceInEightAndTheReceiveThreadStillSeesThemGoOn() {
        int[] reads = {0};
        Clock counting = () -> {
            reads[0]++;
            return clock.nanoTime();
        };
        ProgressEngine e =
                new ProgressEngine(link, counting, this::record, new ReplyTurns(counters, "test"), counters, "test");
        int before = reads[0];
        for (int i = 0; i < 10 * ProgressEngine.POLL_CLOCK_EVERY; i++) {
            e.progressFromPoll();
            clock.advanceNanos(500); // a busy poller's empty poll
        }
        assertEquals(10, reads[0] - before, "one clock read per " + ProgressEngine.POLL_CLOCK_EVERY + " polls");

        // a slow poller: its polls between two clock reads carry the time of the read, older than they are
        clock.advanceNanos(POLL_QUIET_NANOS);
        e.progressFromPoll(); // reads the clock
        for (int i = 0; i < 3; i++) {
            clock.advanceNanos(POLL_QUIET_NANOS / 2);
            e.progressFromPoll(); // reuse it
        }
        long now = clock.nanoTime();
        assertEquals(
                ProgressEngine.STALE_LOOK_NANOS,
                e.doWork(now),
                "the last time is 1.5 ms old, but polls went on since: the receive thread looks again soon");
        link.arrive(1);
        assertEquals(
                AWAIT_LINK,
                e.doWork(now + ProgressEngine.STALE_LOOK_NANOS),
                "no poll since its last look: the receive thread drives");
        assertEquals(List.of("thread 1"), handled);
    }

    @Test
    void aPollerStalledInsideTheLinksReceiveCallKeepsTheLinkForTheReceiveStallTime() {
        long t = clock.nanoTime();
        link.arrive(1, 2);
        link.duringNextReceive = () -> { // the poller is descheduled inside the receive call; the receive thread runs
            long start = t + POLL_QUIET_NANOS;
            assertEquals(
                    HOLDER_BUSY_NANOS, engine.doWork(start), "the first look at the holder only notes its progress");
            assertEquals(
                    HOLDER_BUSY_NANOS,
                    engine.doWork(start + RECEIVE_STALL_NANOS - 1),
                    "a holder inside the receive call keeps the link this long");
            assertEquals(0, counters.get(Counter.RX_TAKEOVERS));
            assertEquals(
                    AWAIT_LINK,
                    engine.doWork(start + RECEIVE_STALL_NANOS),
                    "taken over: the receive thread took the packets");
        };
        engine.progressFromPoll(t);
        assertEquals(1, counters.get(Counter.RX_TAKEOVERS));
        assertEquals(List.of("thread 1", "thread 2"), handled, "the stalled poller, back, found the link empty");
        assertEquals(0, engine.rxByPoll());
    }

    @Test
    void aTakeoverHandlesThePacketInHandAgainThenTheRestOfTheStalledBatchInOrder() {
        long t = clock.nanoTime();
        link.arrive(1, 2, 3, 4);
        whileHandling.put(
                2,
                () -> { // the poller is descheduled while it handles packet 2
                    assertEquals(HOLDER_BUSY_NANOS, engine.doWork(t + POLL_QUIET_NANOS));
                    assertEquals(
                            HOLDER_BUSY_NANOS,
                            engine.doWork(t + 2 * POLL_QUIET_NANOS - 1),
                            "a holder between receive calls keeps the link the quiet time");
                    link.arrive(5);
                    assertEquals(AWAIT_LINK, engine.doWork(t + 2 * POLL_QUIET_NANOS), "taken over");
                });
        engine.progressFromPoll(t);
        assertEquals(
                List.of("poll 1", "poll 2", "thread 2 again", "thread 3", "thread 4", "thread 5"),
                handled,
                "the taker repeats the packet in hand, takes the rest of the poller's batch in order, then the link; the poller, back, takes none");
        assertEquals(1, counters.get(Counter.RX_TAKEOVERS));
        assertEquals(1, counters.get(Counter.RX_TAKEOVER_REPEATS));
        assertEquals(2, engine.rxByPoll());
        assertEquals(3, engine.rxByThread());

        // the link is free again: the next poll (once the receive thread waits) takes what comes
        link.arrive(6);
        engine.progressFromPoll(t + 3 * POLL_QUIET_NANOS);
        assertEquals("poll 6", handled.getLast());
    }

    @Test
    void aHolderThatMakesProgressIsNeverTakenOver() {
        long t = clock.nanoTime();
        link.arrive(1, 2, 3, 4);
        // between two looks of the receive thread, a quiet time apart, the poller handles one more packet each time
        for (int id = 1; id <= 3; id++) {
            long at = t + id * POLL_QUIET_NANOS;
            whileHandling.put(id, () -> assertEquals(HOLDER_BUSY_NANOS, engine.doWork(at)));
        }
        engine.progressFromPoll(t);
        assertEquals(List.of("poll 1", "poll 2", "poll 3", "poll 4"), handled);
        assertEquals(0, counters.get(Counter.RX_TAKEOVERS));
    }

    @Test
    void aPollerTakesTheLinkFromAReceiveThreadStalledInsideTheReceiveCall() {
        long t = clock.nanoTime() + POLL_QUIET_NANOS; // nobody has polled for the quiet time
        link.arrive(1);
        link.duringNextReceive = () -> { // the receive thread is descheduled inside the receive call; a poller polls
            link.arrive(2);
            engine.progressFromPoll(t);
            engine.progressFromPoll(t + RECEIVE_STALL_NANOS - 1);
            assertEquals(List.of(), handled, "the poller left the link to its holder");
            engine.progressFromPoll(t + RECEIVE_STALL_NANOS);
        };
        assertEquals(
                0,
                engine.doWork(t),
                "the receive thread, back, sees that a thread polled meanwhile: it looks again at once");
        assertEquals(List.of("poll 1", "poll 2"), handled);
        assertEquals(1, counters.get(Counter.RX_TAKEOVERS));
    }

    @Test
    void aPollThatFindsNothingGivesTheCpuUpOnlyWhileThePeerHasNotTakenItsPacket() {
        boolean before = ProgressEngine.pollYield;
        ProgressEngine.pollYield = true; // off by default (see ProgressEngine#pollYield)
        try {
            pollYields();
        } finally {
            ProgressEngine.pollYield = before;
        }
    }

    private void pollYields() {
        long t = clock.nanoTime();
        link.peerBehindSince = t; // the packet sent last waits in the same-host peer's ring from t on
        engine.progressFromPoll(t + ProgressEngine.PEER_BEHIND_NANOS - 1);
        assertEquals(0, counters.get(Counter.POLL_YIELDS), "a peer on a core of its own takes it within this time");
        engine.progressFromPoll(t + ProgressEngine.PEER_BEHIND_NANOS);
        assertEquals(1, counters.get(Counter.POLL_YIELDS), "the peer waits for a CPU: the spinning poller yields");
        link.arrive(1);
        engine.progressFromPoll(t + 2 * ProgressEngine.PEER_BEHIND_NANOS);
        assertEquals(List.of("poll 1"), handled);
        assertEquals(1, counters.get(Counter.POLL_YIELDS), "a poll that handled something returns at once");
        link.peerBehindSince = -1; // the peer took it
        engine.progressFromPoll(t + 3 * ProgressEngine.PEER_BEHIND_NANOS);
        assertEquals(1, counters.get(Counter.POLL_YIELDS));
    }

    @Test
    void aPollThatFindsNothingSleepsOnlyWhileThePeerIsStarvedAndLooksOncePerClockReading() {
        boolean before = ProgressEngine.pollPark;
        ProgressEngine.pollPark = true; // off by default (see ProgressEngine#pollPark)
        try {
            long t = clock.nanoTime();
            link.peerBehindSince = t; // the packet sent last waits in the same-host peer's ring from t on
            engine.progressFromPoll(t + ProgressEngine.PEER_STARVED_NANOS - 1);
            assertEquals(0, counters.get(Counter.POLL_PARKS), "a peer that is only slow: the poller spins on");
            engine.progressFromPoll(t + ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(1, counters.get(Counter.POLL_PARKS), "the peer waits for a CPU: the poller sleeps");
            engine.progressFromPoll(t + ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(1, counters.get(Counter.POLL_PARKS), "a poll with the same (reused) time does not look again");
            link.arrive(1);
            engine.progressFromPoll(t + 2 * ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(List.of("poll 1"), handled);
            assertEquals(1, counters.get(Counter.POLL_PARKS), "a poll that handled something returns at once");
            engine.progressFromPoll(t + 3 * ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(2, counters.get(Counter.POLL_PARKS), "still starved at the next reading: it sleeps again");
            link.peerBehindSince = -1; // the peer took it
            engine.progressFromPoll(t + 4 * ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(2, counters.get(Counter.POLL_PARKS));
            ProgressEngine.pollPark = false;
            link.peerBehindSince = t;
            engine.progressFromPoll(t + 5 * ProgressEngine.PEER_STARVED_NANOS);
            assertEquals(2, counters.get(Counter.POLL_PARKS), "off (the default): it spins, as perftest's loops");
        } finally {
            ProgressEngine.pollPark = before;
        }
    }

    /** A link that hands out the packets a test lets arrive, numbered by their first byte; it can stall the next receive. */
    private static final class ScriptedLink implements Link {
        private final ArrayDeque<Integer> waiting = new ArrayDeque<>();
        int receiveCalls;
        /** Runs inside the next receive call, before it takes the packets waiting (the caller is descheduled there). */
        Runnable duringNextReceive;
        /** Since when the packet sent last waits in the peer's ring, not taken ({@link Link#peerBehind}); -1: taken. */
        long peerBehindSince = -1;

        @Override
        public boolean peerBehind(long now, long nanos) {
            return peerBehindSince != -1 && now - peerBehindSince >= nanos;
        }

        void arrive(int... ids) {
            for (int id : ids) waiting.add(id);
        }

        @Override
        public int receive(RxBatch batch) {
            receiveCalls++;
            Runnable stall = duringNextReceive;
            duringNextReceive = null;
            if (stall != null) stall.run();
            int n = 0;
            while (!waiting.isEmpty() && n < RxBatch.CAPACITY) {
                ByteBuffer slot = batch.buffers[n];
                slot.clear();
                slot.put(0, (byte) (int) waiting.poll());
                batch.lengths[n] = 1;
                batch.sources[n] = PEER;
                n++;
            }
            batch.drained = waiting.isEmpty();
            return n;
        }

        @Override
        public InetSocketAddress receive(ByteBuffer b) {
            throw new UnsupportedOperationException("receives in batches");
        }

        @Override
        public boolean readable() {
            return !waiting.isEmpty();
        }

        @Override
        public boolean send(ByteBuffer b, InetSocketAddress to) {
            return true;
        }

        @Override
        public void await() {}

        @Override
        public void wakeup() {}

        @Override
        public void close() {}
    }
}
