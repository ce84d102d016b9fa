package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Closing an object while other threads use it, and create children under it, ends every one of those threads in
 * ClosedException: never another exception, a hang or a crash.
 */
@Timeout(180)
class ConcurrentCloseTest {
    private enum Target {
        CQ,
        QP,
        MW,
        PD,
        CHANNEL,
        CONTEXT
    }

    @Test
    void closeUnderConcurrentUseEndsInClosedException() throws Exception {
        for (int round = 0; round < 2; round++) {
            for (Target target : Target.values()) race(target);
        }
    }

    private static void race(Target target) throws Exception {
        Context ctx = Suite.device().open();
        Arena arena = Arena.ofShared();
        try {
            ProtectionDomain pd = ctx.allocPd();
            CompletionChannel ch = ctx.createCompletionChannel();
            CompletionQueue cq = ctx.createCq(16, ch);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
            MemoryWindow mw = ctx.queryDevice().supportsMemoryWindows() ? pd.allocMemoryWindow(MwType.TYPE_1) : null;
            MemorySegment buf = arena.allocate(4096, 4096);
            List<Runnable> loops = new ArrayList<>(List.of(
                    () -> cq.poll(WorkCompletion.array(4)),
                    () -> cq.requestNotify(false),
                    () -> cq.ackEvents(0),
                    () -> ch.awaitEvent(Duration.ofMillis(2)),
                    qp::query,
                    () -> ctx.queryPort(RcPair.PORT),
                    () -> pd.registerMemory(buf, Access.LOCAL_WRITE).close(),
                    () -> ctx.createCq(4, null).close()));
            if (mw != null) loops.add(mw::rkey);
            ConcurrentLinkedQueue<Throwable> ends = new ConcurrentLinkedQueue<>();
            CountDownLatch started = new CountDownLatch(loops.size());
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < loops.size(); i++) {
                Runnable r = loops.get(i);
                threads.add(Thread.ofPlatform().daemon().name("user-" + i).start(() -> {
                    started.countDown();
                    try {
                        while (true) r.run();
                    } catch (Throwable t) {
                        ends.add(t);
                    }
                }));
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            Thread.sleep(20);
            switch (target) {
                case CQ -> cq.close();
                case QP -> qp.close();
                case MW -> {
                    if (mw != null) mw.close();
                }
                case PD -> pd.close();
                case CHANNEL -> ch.close();
                case CONTEXT -> ctx.close();
            }
            Thread.sleep(10);
            ctx.close();
            for (Thread t : threads) {
                t.join(20_000);
                if (t.isAlive()) {
                    StringBuilder st = new StringBuilder();
                    for (StackTraceElement e : t.getStackTrace())
                        st.append("\n  at ").append(e);
                    fail(target + ": thread " + t.getName() + " still runs 20 s after the context was closed:" + st);
                }
            }
            assertEquals(loops.size(), ends.size());
            for (Throwable t : ends) {
                if (!(t instanceof ClosedException))
                    throw new AssertionError(target + ": a thread ended in " + t + " instead of ClosedException", t);
            }
        } finally {
            ctx.close();
            arena.close();
        }
    }
}
