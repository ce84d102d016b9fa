package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The progress core's duty cycle and idle policy, driven by hand: a scripted duty (completions to hand out, a record
 * of what the core did) and a clock the test moves. Nothing sleeps.
 */
@Timeout(30)
class ProgressCoreTest {
    /** A duty that hands out the completions the test queued and records the core's calls. */
    private static final class ScriptedDuty implements ProgressCore.Duty {
        final List<String> calls = new ArrayList<>();
        int completions; // waiting in the "CQ"
        long slept = -1;
        int wakeups;

        @Override
        public int poll() {
            int n = Math.min(completions, 4);
            completions -= n;
            if (n > 0) calls.add("poll " + n);
            return n;
        }

        @Override
        public void drain() {
            if (completions > 0) calls.add("drain " + completions);
            completions = 0;
        }

        @Override
        public void checkTimeouts(long now) {
            calls.add("timeouts@" + now);
        }

        @Override
        public void arm() {
            calls.add("arm");
        }

        @Override
        public void await(long nanos) {
            slept = nanos;
            calls.add("sleep " + nanos);
        }

        @Override
        public synchronized void wakeup() {
            wakeups++;
        }
    }

    private static final class ManualClock {
        long now = 1_000_000_000L;
    }

    @Test
    void commandsRunAfterTheCompletionsThatCameBeforeThem() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 0);
        core.takeOwnership();
        core.doWork(clock.now); // the first timeout check
        duty.calls.clear();
        duty.completions = 10; // e.g. a peer's last messages, then its goodbye from the control channel
        core.execute(() -> duty.calls.add("goodbye"), Long.MAX_VALUE);
        int work = core.doWork(clock.now);
        assertEquals(List.of("poll 4", "drain 6", "goodbye"), duty.calls);
        assertEquals(5, work, "4 polled completions and 1 command (the drained ones are dispatched, not counted)");
        assertEquals(0, core.doWork(clock.now), "nothing left");
    }

    @Test
    void timeoutsAreCheckedOncePerPeriodOfTheClock() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 0);
        long t0 = clock.now;
        core.doWork(clock.now);
        clock.now += ProgressCore.TIMEOUT_PERIOD_NANOS - 1;
        core.doWork(clock.now);
        clock.now += 1;
        core.doWork(clock.now);
        assertEquals(List.of("timeouts@" + t0, "timeouts@" + (t0 + ProgressCore.TIMEOUT_PERIOD_NANOS)), duty.calls);
    }

    @Test
    void anIdleOwnerPollsWithinItsBudgetThenArmsAndSleepsUntilTheNextTimeoutCheck() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 100_000);
        core.takeOwnership();
        duty.completions = 1;
        assertEquals(1, core.doWork(clock.now)); // work at t0, and the first timeout check
        duty.calls.clear();
        clock.now += 99_999;
        assertTrue(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS), "within the budget: poll again");
        assertEquals(List.of(), duty.calls, "neither armed nor slept");
        clock.now += 1;
        assertFalse(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS), "the budget is spent: sleep");
        assertEquals(List.of("arm", "sleep " + (ProgressCore.TIMEOUT_PERIOD_NANOS - 100_000)), duty.calls);
    }

    @Test
    void anAdaptingOwnerSpinsOnlyTheFloorAfterLongWaitsAndTheFullBudgetAgainAfterAQuickReply() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 100_000);
        core.takeOwnership();
        core.adaptSpin(20_000);
        for (int i = 0; i < AdaptiveSpin.HISTORY; i++) { // the peer's batch takes 450 us each time
            duty.completions = 1;
            core.doWork(clock.now);
            clock.now += 450_000;
            assertFalse(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS));
        }
        duty.completions = 1;
        core.doWork(clock.now);
        clock.now += 19_999;
        assertTrue(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS), "within the floor: poll again");
        duty.calls.clear();
        clock.now += 1;
        assertFalse(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS), "the floor is spent, not the full budget");
        assertEquals("arm", duty.calls.get(0));
        clock.now +=
                40_000; // the reply came 60 us after the last work: the owner was asleep, the spin would have met it
        duty.completions = 1;
        core.doWork(clock.now);
        clock.now += 99_999;
        assertTrue(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS), "the full budget again");
        clock.now += 1;
        assertFalse(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS));
    }

    @Test
    void aBusyOwnerPollsOnWhateverItsWaits() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, ProgressCore.SPIN_FOREVER);
        core.takeOwnership();
        for (int i = 0; i < 16; i++) {
            clock.now += 1_000_000;
            assertTrue(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS));
            clock.now += 1_000_000;
            duty.completions = 1;
            core.doWork(clock.now);
        }
        assertTrue(core.idle(clock.now + 1_000_000_000L, ProgressCore.MAX_SLEEP_NANOS), "PollMode.BUSY never sleeps");
        assertEquals(-1, duty.slept);
    }

    @Test
    void onlyASleepingOwnerIsWokenAndOneAboutToSleepSeesTheWorkHandedToItFirst() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 0);
        core.takeOwnership();
        core.doWork(clock.now);
        core.wakeupIfSleeping();
        assertEquals(0, duty.wakeups, "an owner that works or polls on needs no wakeup (nor a sticky one)");
        duty.calls.clear();
        // an event loop's task came in just before the sleep: the loop's last look (mayBlock) sees it
        assertFalse(core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS, () -> false));
        assertEquals(List.of("arm"), duty.calls, "armed, announced, then saw the task: no sleep");
        assertEquals(-1, duty.slept);
        // the sleep is announced before that look: a wakeup from the task's thread then reaches the channel
        boolean[] wokenWhileAnnounced = new boolean[1];
        core.idle(clock.now, ProgressCore.MAX_SLEEP_NANOS, () -> {
            core.wakeupIfSleeping();
            wokenWhileAnnounced[0] = duty.wakeups == 1;
            return true;
        });
        assertTrue(wokenWhileAnnounced[0], "a wakeup between the announcement and the sleep is not skipped");
    }

    @Test
    void aCompletionThatCameBeforeTheArmIsPolledInsteadOfSleeping() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 0);
        core.takeOwnership();
        core.doWork(clock.now);
        duty.calls.clear();
        duty.completions = 1; // arrives between the last poll and the arm: it raises no event
        core.sleep(5_000_000);
        assertEquals(List.of("arm", "poll 1"), duty.calls, "polled after arming, no sleep");
        assertEquals(-1, duty.slept);
    }

    @Test
    void aCommandOfferedWhileTheOwnerSleepsWakesIt() throws Exception {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        CountDownLatch asleep = new CountDownLatch(1), woken = new CountDownLatch(1);
        ProgressCore.Duty blocking = new ProgressCore.Duty() {
            @Override
            public int poll() {
                return duty.poll();
            }

            @Override
            public void drain() {
                duty.drain();
            }

            @Override
            public void checkTimeouts(long now) {}

            @Override
            public void arm() {}

            @Override
            public void await(long nanos) {
                asleep.countDown();
                try {
                    assertTrue(woken.await(10, TimeUnit.SECONDS), "a wakeup ends the sleep");
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }

            @Override
            public void wakeup() {
                woken.countDown();
            }
        };
        ProgressCore core = new ProgressCore(blocking, () -> clock.now, 16, 0);
        List<String> ran = new ArrayList<>();
        Thread owner = Thread.ofPlatform().start(() -> {
            core.takeOwnership();
            core.sleep(ProgressCore.MAX_SLEEP_NANOS);
            core.doWork(clock.now);
        });
        assertTrue(asleep.await(10, TimeUnit.SECONDS));
        core.execute(() -> ran.add("command"), Long.MAX_VALUE);
        owner.join(10_000);
        assertFalse(owner.isAlive());
        assertEquals(List.of("command"), ran);
    }

    @Test
    void aFullQueueMakesItsProducerWaitAndLosesNothing() throws Exception {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 4, 0);
        int[] ran = new int[1];
        Thread producer = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < 100; i++) core.execute(() -> ran[0]++, Long.MAX_VALUE);
        });
        core.takeOwnership();
        while (producer.isAlive() || core.pendingCommands() > 0) core.doWork(clock.now);
        producer.join();
        core.doWork(clock.now);
        assertEquals(100, ran[0], "every command ran once, none dropped while the queue was full");
    }

    @Test
    void aStoppedCoreDropsCommandsInsteadOfBlockingTheirProducers() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 2, 0);
        core.stop();
        for (int i = 0; i < 10; i++) assertFalse(core.execute(() -> {}, Long.MAX_VALUE), "refused, not waited on");
        assertEquals(0, core.pendingCommands());
    }

    @Test
    void aQueueThatStaysFullRefusesTheCommandInsteadOfHanging() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 2, 0);
        assertTrue(core.execute(() -> {}, 0));
        assertTrue(core.execute(() -> {}, 0));
        // nobody drives the core: the producer's patience (none here) runs out and it is told so
        assertFalse(core.execute(() -> {}, 0), "a full queue is a refusal once the patience is spent");
        assertEquals(2, core.pendingCommands(), "nothing was added");
        assertTrue(duty.wakeups > 0, "the owner was woken to drain its queue meanwhile");
    }

    @Test
    void aWaitingCallerDrivesTheCoreUntilItsResultComesAndLeavesTheAgentNapping() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 100_000);
        duty.completions = 6; // the answer the caller waits for is the last of them
        boolean[] done = new boolean[1];
        core.execute(
                () -> done[0] = true, Long.MAX_VALUE); // runs after the completions before it, on the caller's thread
        assertTrue(core.helpUntil(() -> done[0], clock.now + 1_000_000));
        assertTrue(duty.calls.containsAll(List.of("poll 4", "drain 2")), duty.calls.toString());
        // it may be back at once (a ping-pong): a wake-up per call cost it a lock and a signal; the agent naps out the
        // help budget and drives again after it
        assertEquals(0, duty.wakeups, "the agent is not woken");
    }

    @Test
    void aWaitingCallerStopsDrivingWhenItsBudgetPassesWithoutWork() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now += 10_000, 16, 100_000); // 10 us per look
        assertFalse(core.helpUntil(() -> false, Long.MAX_VALUE / 2), "nothing came within the budget: it parks");
        assertEquals(1, duty.wakeups, "and wakes the agent to drive from here on");
    }

    @Test
    void aCallerRunsADataCommandItselfWhenNobodyDrivesAndNothingWaitsBeforeIt() {
        ScriptedDuty duty = new ScriptedDuty();
        ManualClock clock = new ManualClock();
        ProgressCore core = new ProgressCore(duty, () -> clock.now, 16, 100_000);
        boolean[] ranAsOwner = new boolean[1];
        assertTrue(core.runIfFree(() -> ranAsOwner[0] = core.isOwnerThread()), "nobody drives: it runs here");
        assertTrue(ranAsOwner[0], "as the owner, for the moment it runs");
        assertFalse(core.isOwnerThread(), "and the drive is let go after it");
        assertEquals(0, duty.wakeups, "no hand-off, no wake-up");
        assertTrue(duty.calls.isEmpty(), "nothing polled: a send or a receive posts, it does not dispatch");

        // a command handed over before it runs first, on the owner: the later one is handed over too, in order
        List<String> order = new ArrayList<>();
        assertTrue(core.execute(() -> order.add("first"), Long.MAX_VALUE));
        assertFalse(core.runIfFree(() -> order.add("second")), "a command waits: it must not overtake it");
        assertTrue(core.execute(() -> order.add("second"), Long.MAX_VALUE));
        core.doWork(clock.now);
        assertEquals(List.of("first", "second"), order);

        core.stop();
        assertFalse(core.runIfFree(() -> order.add("late")), "a stopped core runs nothing");
        assertEquals(2, order.size());
    }

    @Test
    void theQueueKeepsOrderAcrossItsWrap() {
        BoundedQueue<Runnable> q = new BoundedQueue<>(4);
        List<Integer> seen = new ArrayList<>();
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 3; i++) {
                int v = round * 3 + i;
                assertTrue(q.offer(() -> seen.add(v)));
            }
            for (Runnable r; (r = q.poll()) != null; ) r.run();
        }
        assertEquals(15, seen.size());
        for (int i = 0; i < 15; i++) assertEquals(i, seen.get(i));
        for (int i = 0; i < q.capacity(); i++) assertTrue(q.offer(() -> {}));
        assertFalse(q.offer(() -> {}), "full");
        assertTrue(q.isEmpty() == false);
    }
}
