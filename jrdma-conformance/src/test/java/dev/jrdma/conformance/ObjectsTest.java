package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.ClosedException;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.PortState;
import dev.jrdma.verbs.PostException;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Devices, ports, the QP state machine, completion channels and the close rules. */
@Timeout(60)
class ObjectsTest {

    @Test
    void deviceAndPortAttributes() {
        assertTrue(Verbs.devices().stream()
                        .anyMatch(d -> d.name().equals(Suite.device().name()))
                || Suite.device().name().startsWith("soft@"));
        try (Context ctx = Suite.device().open()) {
            DeviceAttr a = ctx.queryDevice();
            assertTrue(a.physPortCnt() >= 1);
            assertTrue(a.maxQp() > 0 && a.maxQpWr() > 0 && a.maxCqe() > 0 && a.maxSge() > 0 && a.maxMr() > 0);
            PortAttr p = ctx.queryPort(1);
            assertEquals(PortState.ACTIVE, p.state());
            assertTrue(p.activeMtu().bytes >= 256);
            List<GidEntry> gids = ctx.gidTable(1);
            assertFalse(gids.isEmpty(), "an active RoCE port has at least one GID");
            assertThrows(VerbsException.class, () -> ctx.queryPort(99));
        }
    }

    @Test
    void illegalTransitionsNameWhatIsLegal() {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            VerbsException skip =
                    assertThrows(VerbsException.class, () -> p.a.qp.modify(new QpAttr().state(QpState.RTS)));
            assertTrue(skip.getMessage().contains("RESET") && skip.getMessage().contains("INIT"), skip.getMessage());
            VerbsException missing = assertThrows(
                    VerbsException.class,
                    () -> p.a.qp.modify(new QpAttr().state(QpState.INIT).port(1)));
            assertTrue(
                    missing.getMessage().contains("ACCESS_FLAGS")
                            && missing.getMessage().contains("PKEY_INDEX"),
                    missing.getMessage());
            assertEquals(QpState.RESET, p.a.qp.state(), "a refused modify changes nothing");
            p.a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(Access.REMOTE_WRITE));
            assertEquals(QpState.INIT, p.a.qp.state());
            assertEquals(QpState.INIT, p.a.qp.query().state());
            VerbsException rtr = assertThrows(
                    VerbsException.class,
                    () -> p.a.qp.modify(new QpAttr().state(QpState.RTR).destQpNum(p.b.qp.qpNum())));
            assertTrue(rtr.getMessage().contains("PATH_MTU"), rtr.getMessage());
        }
    }

    @Test
    void postingBeforeRtsIsRefusedNotLost() {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            MemoryRegion m = p.a.mrAll(4096);
            PostException e = assertThrows(
                    PostException.class,
                    () -> p.a.qp.postSend(new SendWorkRequest()
                            .opcode(WrOpcode.SEND)
                            .buffer(m, 0, 8)
                            .signaled(true)));
            assertEquals(0, e.badIndex());
            assertThrows(PostException.class, () -> p.a.qp.postRecv(new RecvWorkRequest().buffer(m, 0, 8)));
            assertThrows(VerbsException.class, () -> p.a.qp.modify(new QpAttr().state(QpState.RTS)));
        }
    }

    @Test
    void tooManySgesIsRefused() {
        try (RcPair p = Suite.threadedPair().build()) {
            MemoryRegion m = p.a.mrAll(4096);
            int max = p.a.qp.cap().maxSendSge();
            SendWorkRequest s = new SendWorkRequest(max + 1)
                    .opcode(WrOpcode.SEND)
                    .numSge(max + 1)
                    .signaled(true);
            for (int i = 0; i <= max; i++) s.sge(i).set(m, i * 8L, 8);
            assertThrows(PostException.class, () -> p.a.qp.postSend(s));
        }
    }

    @Test
    void completionChannelWakesAWaiterAndTimesOut() throws Exception {
        try (RcPair p = Suite.threadedPair().connect(false).build()) {
            CompletionChannel ch = p.a.ctx.createCompletionChannel();
            CompletionQueue cq = p.a.ctx.createCq(16, ch);
            QueuePair qa = p.a.pd.createQueuePair(QpInitAttr.builder(cq).build());
            assertSame(ch, cq.channel());
            cq.requestNotify(false);
            assertNull(ch.awaitEvent(Duration.ofMillis(50)), "no completion, no event");
            // flushing a receive makes a completion, which fires the armed CQ's event
            MemoryRegion m = p.a.mrAll(4096);
            qa.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).access(Access.LOCAL_WRITE));
            qa.postRecv(new RecvWorkRequest().wrId(4).buffer(m, 0, 8));
            Thread waker = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ignored) {
                    return;
                }
                qa.modify(new QpAttr().state(QpState.ERR));
            });
            assertSame(cq, ch.awaitEvent(Duration.ofSeconds(10)));
            cq.ackEvents(1);
            waker.join();
            WorkCompletion wc = p.await(cq);
            assertEquals(4, wc.wrId);
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status);
        }
    }

    @Test
    void solicitedOnlyNotificationWaitsForASolicitedMessage() throws Exception {
        try (RcPair p = Suite.threadedPair().channel(true).build()) {
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(256);
            for (int i = 0; i < 2; i++)
                p.b.qp.postRecv(new RecvWorkRequest().wrId(i).buffer(dst, i * 64L, 64));
            p.b.cq.requestNotify(true);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).buffer(src, 0, 8));
            assertEquals(0, p.await(p.b.cq).wrId);
            assertNull(p.b.ch.awaitEvent(Duration.ofMillis(100)), "an unsolicited message raised an event");
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .flag(SendFlag.SOLICITED, true)
                    .buffer(src, 0, 8));
            assertSame(p.b.cq, p.b.ch.awaitEvent(Duration.ofSeconds(10)));
            p.b.cq.ackEvents(1);
            assertEquals(1, p.await(p.b.cq).wrId);
        }
    }

    @Test
    void closingAParentClosesItsChildrenAndUseAfterCloseThrows() {
        Context ctx = Suite.device().open();
        ProtectionDomain pd = ctx.allocPd();
        CompletionChannel ch = ctx.createCompletionChannel();
        CompletionQueue cq = ctx.createCq(8, ch);
        ProtectionDomain windows = ctx.allocPd();
        MemoryWindow mw = ctx.queryDevice().supportsMemoryWindows() ? windows.allocMemoryWindow(MwType.TYPE_1) : null;
        QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
        try (Arena arena = Arena.ofShared()) {
            MemoryRegion mr = pd.registerMemory(arena.allocate(4096), Access.LOCAL_WRITE);
            pd.close(); // closes the QP and the MR first
            assertTrue(qp.isClosed() && mr.isClosed() && pd.isClosed());
            assertFalse(cq.isClosed());
            assertThrows(
                    ClosedException.class,
                    () -> qp.modify(new QpAttr()
                            .state(QpState.INIT)
                            .pkeyIndex(0)
                            .port(1)
                            .access(Access.LOCAL_WRITE)));
            assertThrows(ClosedException.class, () -> qp.postRecv(new RecvWorkRequest().buffer(mr, 0, 8)));
            assertThrows(ClosedException.class, () -> pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE));
            pd.close(); // idempotent
            mr.close();
            ctx.close(); // closes the CQ, its channel, the other PD and its window
            assertTrue(cq.isClosed() && ch.isClosed() && windows.isClosed());
            if (mw != null) assertTrue(mw.isClosed());
            assertThrows(ClosedException.class, () -> cq.poll(WorkCompletion.array(1)));
            assertThrows(ClosedException.class, () -> ch.awaitEvent(Duration.ofMillis(1)));
            assertThrows(ClosedException.class, () -> windows.allocMemoryWindow(MwType.TYPE_1));
            assertThrows(ClosedException.class, ctx::allocPd);
            ctx.close(); // idempotent
        }
    }

    @Test
    void registrationRejectsHeapAndClosedSegments() {
        try (Context ctx = Suite.device().open();
                ProtectionDomain pd = ctx.allocPd()) {
            assertThrows(
                    VerbsException.class,
                    () -> pd.registerMemory(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
            MemorySegment seg;
            try (Arena arena = Arena.ofShared()) {
                seg = arena.allocate(4096);
            }
            assertThrows(VerbsException.class, () -> pd.registerMemory(seg, Access.LOCAL_WRITE));
            try (Arena ok = Arena.ofShared()) {
                // REMOTE_WRITE without LOCAL_WRITE is refused as libibverbs does
                assertThrows(VerbsException.class, () -> pd.registerMemory(ok.allocate(64), Access.REMOTE_WRITE));
            }
        }
    }
}
