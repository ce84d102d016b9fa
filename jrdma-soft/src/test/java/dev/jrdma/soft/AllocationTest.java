package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.management.ClassLoadingMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The steady state allocates nothing per message: neither the posting and polling thread (which also handles the
 * received packets: poll drives the device) nor the device's receive thread.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AllocationTest {

    private static long allocated(Thread t) {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
                .getThreadAllocatedBytes(t.threadId());
    }

    /** What a failed round says: the completion, and both devices' counters and links. */
    private static String failure(RcPair p, int round, WorkCompletion wc) {
        Transport ta = ((SoftContext) p.a.ctx).transport, tb = ((SoftContext) p.b.ctx).transport;
        return "round " + round + ": " + wc + "\n A " + ta.linkName() + " " + ta.counters.snapshot()
                + (ta.shmLink() == null ? "" : " rings: " + ta.shmLink().describeRings())
                + "\n B " + tb.linkName() + " " + tb.counters.snapshot()
                + (tb.shmLink() == null ? "" : " rings: " + tb.shmLink().describeRings());
    }

    /** Ping-pong of SENDs (sizes 64 B and 3 KiB: one and three packets) plus WRITE and READ. */
    private static void rounds(
            RcPair p,
            int n,
            MemoryRegion a,
            MemoryRegion b,
            SendWorkRequest send,
            SendWorkRequest write,
            SendWorkRequest read,
            RecvWorkRequest recv,
            WorkCompletion[] wc) {
        for (int i = 0; i < n; i++) {
            p.b.qp.postRecv(recv);
            p.a.qp.postSend(send);
            int got = 0;
            while (got < 2) {
                int k = p.a.cq.poll(wc);
                for (int j = 0; j < k; j++) if (wc[j].status != WcStatus.SUCCESS) fail(failure(p, i, wc[j]));
                got += k;
                k = p.b.cq.poll(wc);
                for (int j = 0; j < k; j++) if (wc[j].status != WcStatus.SUCCESS) fail(failure(p, i, wc[j]));
                got += k;
            }
            p.a.qp.postSend(write);
            p.a.qp.postSend(read);
            got = 0;
            while (got < 2) {
                int k = p.a.cq.poll(wc);
                for (int j = 0; j < k; j++) if (wc[j].status != WcStatus.SUCCESS) fail(failure(p, i, wc[j]));
                got += k;
                // a poll for nothing drives B's link too: a poll that finds completions waiting does not, and when B's
                // receive thread was quick enough to complete every SEND first (more likely with coalesced receive),
                // B's polls never drove and its poll path went unchecked
                p.b.cq.poll(wc, 0);
            }
        }
    }

    /** Two devices of one host with the same-host rings (-Djrdma.soft.shm=auto, the default). */
    @Test
    void steadyStateOverTheRingsAllocatesNothingPerMessage() {
        try (RcPair p = ShmLinkTest.pairOn("127.0.0.41", "127.0.0.42", "auto", "auto")) {
            long shm0 = ((SoftContext) p.a.ctx).transport.counters.get(Counter.TX_SHM_PACKETS);
            check(p);
            assertTrue(
                    ((SoftContext) p.a.ctx).transport.counters.get(Counter.TX_SHM_PACKETS) - shm0 > 5000,
                    "the rounds went through the same-host rings");
        }
    }

    /** Two devices that talk over UDP (-Djrdma.soft.shm=off): the link between hosts. */
    @Test
    void steadyStateAllocatesNothingPerMessage() {
        try (RcPair p = ShmLinkTest.pairOn("127.0.0.43", "127.0.0.44", "off", "off")) {
            assertNull(((SoftContext) p.a.ctx).transport.shmLink());
            check(p);
        }
    }

    /** The authenticated mode over UDP: every packet signed and verified ({@link PacketAuth}), still nothing allocated. */
    @Test
    void steadyStateInTheAuthenticatedModeAllocatesNothingPerMessage() {
        try (RcPair p = ShmLinkTest.pairOn("127.0.0.45", "127.0.0.46", "off", "off")) {
            for (Side s : new Side[] {p.a, p.b})
                s.qp.modify(new dev.jrdma.verbs.QpAttr().state(dev.jrdma.verbs.QpState.RESET));
            p.connect(w -> w.packetAuthKey(AuthenticatedModeTest.KEY.clone()));
            assertNotNull(((SoftQp) p.a.qp).auth);
            assertNotNull(((SoftQp) p.b.qp).auth);
            check(p);
            assertEquals(
                    0, p.a.ctx.counters().get("rx_bad_mac") + p.b.ctx.counters().get("rx_bad_mac"));
        }
    }

    private static void check(RcPair p) {
        {
            MemoryRegion a = p.a.mrAll(8192), b = p.b.mrAll(8192);
            SendWorkRequest send = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 3000);
            SendWorkRequest write = new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(a, 0, 2000)
                    .remote(b.address(), b.rkey());
            SendWorkRequest read = new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(a, 4096, 2000)
                    .remote(b.address(), b.rkey());
            RecvWorkRequest recv = new RecvWorkRequest().wrId(4).buffer(b, 4096, 4096);
            WorkCompletion[] wc = WorkCompletion.array(8);
            rounds(p, 10000, a, b, send, write, read, recv, wc); // warm up (JIT, caches)
            Thread rxA = ((SoftContext) p.a.ctx).transport.rxThread(),
                    rxB = ((SoftContext) p.b.ctx).transport.rxThread();
            Transport ta = ((SoftContext) p.a.ctx).transport, tb = ((SoftContext) p.b.ctx).transport;
            ClassLoadingMXBean classes = ManagementFactory.getClassLoadingMXBean();
            allocated(rxA); // the MXBeans' classes load here, before any window
            StringBuilder windows = new StringBuilder();
            for (int window = 1; ; window++) {
                long polledA = ta.rxByPoll(), polledB = tb.rxByPoll();
                long loaded0 = classes.getTotalLoadedClassCount();
                long me0 = allocated(Thread.currentThread()), a0 = allocated(rxA), b0 = allocated(rxB);
                int n = 5000;
                long t0 = System.nanoTime();
                rounds(p, n, a, b, send, write, read, recv, wc);
                long t = System.nanoTime() - t0;
                long me = allocated(Thread.currentThread()) - me0, ra = allocated(rxA) - a0, rb = allocated(rxB) - b0;
                long loaded = classes.getTotalLoadedClassCount() - loaded0;
                String line = String.format(
                        "%s: window %d: %d rounds (SEND 3000 B ping + WRITE 2000 B + READ 2000 B) in %.1f ms: %.1f us per round; allocated: poster %d B, rx %d B, rx %d B; classes loaded %d; rx_takeovers %d/%d; rx_out_of_order_held %d/%d",
                        ta.linkName(),
                        window,
                        n,
                        t / 1e6,
                        t / 1e3 / n,
                        me,
                        ra,
                        rb,
                        loaded,
                        ta.counters.get(Counter.RX_TAKEOVERS),
                        tb.counters.get(Counter.RX_TAKEOVERS),
                        ta.counters.get(Counter.RX_OUT_OF_ORDER_HELD),
                        tb.counters.get(Counter.RX_OUT_OF_ORDER_HELD));
                System.out.println(line);
                windows.append('\n').append(line);
                // A path the warm-up took rarely (a receive thread's sleep in poll, an eventfd doorbell: how often
                // depends on the scheduler) can pass a JDK threshold in the window: a method handle invoked the 128th
                // time is customized, a LambdaForm class spun on the invoking thread (~64 KiB, once per handle; seen
                // on a loaded host in about 1 run of 3). That is linkage, once per handle, not a cost per message: a
                // window in which classes were loaded is measured again (at most five), and the first without is held
                // to the bound below. A cost per message shows in every window.
                if (loaded > 0) {
                    assertTrue(window < 5, "every window loaded classes:" + windows);
                    continue;
                }
                // this loop busy-polls A's CQ throughout (B's for the SEND, and for nothing while A waits: that drives
                // B's link), so A's packets and some of B's are handled on the polling thread
                assertTrue(
                        ta.rxByPoll() - polledA > n && tb.rxByPoll() - polledB > 0,
                        "packets handled by polls: " + (ta.rxByPoll() - polledA) + " / " + (tb.rxByPoll() - polledB));
                // 5000 rounds = 20000 work requests and ~35000 packets: allow a few KiB of incidental noise in total
                assertTrue(me < 16 * 1024, "posting/polling thread allocated " + me + " bytes:" + windows);
                assertTrue(ra < 16 * 1024, "receive thread of 127.0.0.1 allocated " + ra + " bytes:" + windows);
                assertTrue(rb < 16 * 1024, "receive thread of 127.0.0.2 allocated " + rb + " bytes:" + windows);
                return;
            }
        }
    }
}
