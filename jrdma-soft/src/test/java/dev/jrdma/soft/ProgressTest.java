package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.NodeType;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.TransportType;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Who handles received packets: a thread that polls a CQ drives the device itself; the receive thread handles the rest. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ProgressTest {

    private static Transport tr(Side s) {
        return ((SoftContext) s.ctx).transport;
    }

    @Test
    void aBusyPollingThreadHandlesThePacketsItself() {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            SendWorkRequest send = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 64);
            RecvWorkRequest recv = new RecvWorkRequest().wrId(2).buffer(b, 0, 64);
            WorkCompletion[] wc = WorkCompletion.array(4);
            long polledB = tr(p.b).rxByPoll();
            int n = 2000;
            for (int i = 0; i < n; i++) {
                p.b.qp.postRecv(recv);
                p.a.qp.postSend(send);
                int got = 0;
                while (got < 2) {
                    int k = p.b.cq.poll(wc);
                    for (int j = 0; j < k; j++) assertEquals(WcStatus.SUCCESS, wc[j].status);
                    got += k;
                    k = p.a.cq.poll(wc);
                    for (int j = 0; j < k; j++) assertEquals(WcStatus.SUCCESS, wc[j].status);
                    got += k;
                }
            }
            long byPoll = tr(p.b).rxByPoll() - polledB;
            // every SEND reached B; the receive thread only steps in while this thread is descheduled for over a
            // millisecond
            assertTrue(byPoll > n / 2, "B's packets handled by the polling thread: " + byPoll + " of " + n);
        }
    }

    /**
     * A polling thread leaves the ACK of what it received owed, for its next post to carry (the peer, a jrdma QP, takes
     * carried ACKs: {@link CarriedAcks}); when it stops polling and posts nothing, the receive thread sends the ACK (after about {@link ProgressEngine#POLL_QUIET_NANOS}), so the peer's
     * request completes without a retransmission.
     */
    @Test
    void anAckOwedByAPollerThatStopsIsSentAnyway() {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            SendWorkRequest send = new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 64);
            RecvWorkRequest recv = new RecvWorkRequest().wrId(2).buffer(b, 0, 64);
            WorkCompletion[] wc = WorkCompletion.array(4);
            long retransmits = tr(p.a).counters.get(Counter.RETRANSMITS);
            for (int i = 0; i < 20; i++) {
                p.b.qp.postRecv(recv);
                p.a.qp.postSend(send);
                // B polls until its receive completes, then stops polling; only then does A look for its completion
                while (p.b.cq.poll(wc) == 0) Thread.onSpinWait();
                assertEquals(WcStatus.SUCCESS, wc[0].status);
                long end = System.nanoTime() + 10_000_000_000L;
                int k;
                while ((k = p.a.cq.poll(wc)) == 0 && System.nanoTime() < end) Thread.onSpinWait();
                assertEquals(1, k, "A's SEND completed");
                assertEquals(WcStatus.SUCCESS, wc[0].status);
            }
            assertEquals(
                    retransmits,
                    tr(p.a).counters.get(Counter.RETRANSMITS),
                    "A retransmitted: an ACK was held too long");
        }
    }

    @Test
    void theReceiveThreadHandlesWhatNobodyPollsFor() throws Exception {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            fill(a.segment(), 256, 7);
            long threadB = tr(p.b).rxByThread();
            // B never polls: a passive WRITE target; then an event-mode receive on B
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(a, 0, 256)
                    .remote(b.address(), b.rkey()));
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertFilled(b.segment(), 0, 256, 7);
            long until = System.nanoTime()
                    + 2_000_000_000L; // the count is a plain field of another thread: give it a moment
            while (tr(p.b).rxByThread() == threadB && System.nanoTime() < until) Thread.sleep(1);
            assertTrue(tr(p.b).rxByThread() > threadB, "the WRITE was handled by B's receive thread");
            // B busy-polls a while (its receive thread steps back), then waits for an event: the SEND still arrives at
            // once
            WorkCompletion[] wc = WorkCompletion.array(1);
            long end = System.nanoTime() + 20_000_000;
            while (System.nanoTime() < end) assertEquals(0, p.b.cq.poll(wc));
            p.b.qp.postRecv(new RecvWorkRequest().wrId(5).buffer(b, 1024, 64));
            p.b.cq.requestNotify(false);
            Thread sender = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ignored) {
                }
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(2)
                        .opcode(WrOpcode.SEND)
                        .signaled(true)
                        .buffer(a, 0, 64));
            });
            assertSame(p.b.cq, p.b.ch.awaitEvent(Duration.ofSeconds(10)), "the event came");
            p.b.cq.ackEvents(1);
            sender.join();
            assertEquals(1, p.b.cq.poll(wc));
            assertEquals(WcStatus.SUCCESS, wc[0].status);
            assertEquals(5, wc[0].wrId);
        }
    }

    @Test
    void anInterruptedPollerDoesNotCloseTheSocket() {
        try (RcPair p = pair()) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(4096);
            WorkCompletion[] wc = WorkCompletion.array(1);
            Thread.currentThread().interrupt();
            try {
                for (int i = 0; i < 100; i++) p.b.cq.poll(wc); // reads B's socket with the interrupt flag set
            } finally {
                assertTrue(Thread.interrupted());
            }
            p.b.qp.postRecv(new RecvWorkRequest().wrId(3).buffer(b, 0, 64));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(4)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 64));
            assertEquals(WcStatus.SUCCESS, poll(p.b.cq).status, "B's device still receives");
        }
    }

    @Test
    void concurrentPollersAndTheReceiveThreadHandleEachPacketOnce() throws Exception {
        try (RcPair p = pair(o -> o.cqe(4096))) {
            MemoryRegion a = p.a.mrAll(4096), b = p.b.mrAll(64 * 64);
            int n = 3000;
            java.util.concurrent.atomic.AtomicIntegerArray seen = new java.util.concurrent.atomic.AtomicIntegerArray(n);
            java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
            Runnable poller = () -> {
                WorkCompletion[] wc = WorkCompletion.array(8);
                while (done.get() < n) {
                    int k = p.b.cq.poll(wc);
                    for (int j = 0; j < k; j++) {
                        assertEquals(WcStatus.SUCCESS, wc[j].status);
                        seen.incrementAndGet((int) wc[j].wrId);
                        done.incrementAndGet();
                    }
                    if (k == 0)
                        java.util.concurrent.locks.LockSupport.parkNanos(20_000); // let the receive thread in too
                }
            };
            Thread t1 = Thread.ofPlatform().start(poller),
                    t2 = Thread.ofPlatform().start(poller);
            WorkCompletion[] wc = WorkCompletion.array(16);
            int posted = 0, completed = 0;
            SendWorkRequest send =
                    new SendWorkRequest().opcode(WrOpcode.SEND).signaled(true).buffer(a, 0, 64);
            RecvWorkRequest recv = new RecvWorkRequest();
            while (completed < n) {
                while (posted < n && posted - completed < 32) {
                    p.b.qp.postRecv(recv.wrId(posted).buffer(b, (posted % 64) * 64L, 64));
                    p.a.qp.postSend(send.wrId(posted));
                    posted++;
                }
                int k = p.a.cq.poll(wc);
                for (int j = 0; j < k; j++) assertEquals(WcStatus.SUCCESS, wc[j].status);
                completed += k;
            }
            t1.join(30_000);
            t2.join(30_000);
            assertEquals(n, done.get());
            for (int i = 0; i < n; i++) assertEquals(1, seen.get(i), "receive " + i + " completed once");
        }
    }

    /**
     * A poller that is descheduled in the middle of its drive (on a loaded machine: hundreds of milliseconds) must not
     * stop the device: the receive thread takes the packets meanwhile. Before the fix both shared one drive lock, so
     * every retransmission of the peer went unanswered and its WRITE failed with RETRY_EXC_ERR (two-process write_lat).
     */
    @Test
    void aPollerStalledInsideItsDriveDoesNotStopTheDevice() throws Exception {
        withStallingB((a, b, link) -> {
            // polls until it is inside B's socket: a single poll finds the link held when B's receive thread happens
            // to drive at that moment (its drive returns at once then), and never enters it (CI, 3 Dec 2026)
            Thread poller = Thread.ofPlatform().unstarted(() -> {
                WorkCompletion[] wc = WorkCompletion.array(1);
                while (link.stalled.getCount() > 0) b.cq.poll(wc);
            });
            link.stallThread = poller;
            long takeovers = tr(b).counters.get(Counter.RX_TAKEOVERS);
            poller.start();
            assertTrue(link.stalled.await(10, TimeUnit.SECONDS), "the poller entered B's socket");
            try {
                writeLandsWhileStalled(a, b, takeovers);
                assertTrue(poller.isAlive(), "the poller was still stalled inside B's drive all along");
            } finally {
                link.release.countDown();
                poller.join(10_000);
            }
        });
    }

    /**
     * The other way round: B's receive thread is descheduled inside the link's receive call (it holds the link) while
     * an application thread polls B's CQ. The poller leaves the link to it for {@link ProgressEngine#RECEIVE_STALL_NANOS}
     * (the packets it takes are older than any the poller would take), then takes the packets itself; before the link
     * had one holder at a time the poller never waited.
     */
    @Test
    void aReceiveThreadStalledInsideTheLinkDoesNotStopAPoller() throws Exception {
        withStallingB((a, b, link) -> {
            link.stallThread = tr(b).rxThread(); // B is not polled: its receive thread takes the next packet
            long takeovers = tr(b).counters.get(Counter.RX_TAKEOVERS);
            MemoryRegion src = a.mrAll(4096), dst = b.mrAll(4096);
            a.qp.postSend(new SendWorkRequest()
                    .wrId(6)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey()));
            assertTrue(link.stalled.await(10, TimeUnit.SECONDS), "B's receive thread entered B's socket");
            long pollerStart = System.nanoTime();
            Thread poller = Thread.ofPlatform().start(() -> {
                WorkCompletion[] wc = WorkCompletion.array(1);
                while (link.release.getCount() > 0) b.cq.poll(wc);
            });
            try {
                WorkCompletion first = poll(a.cq, 5000);
                assertEquals(
                        WcStatus.SUCCESS, first.status, "the WRITE that woke B's receive thread, taken by B's poller");
                assertEquals(6, first.wrId);
                // a thread stalled inside the link's receive call is taking older packets: the poller waits longer then
                assertTrue(
                        System.nanoTime() - pollerStart >= ProgressEngine.RECEIVE_STALL_NANOS,
                        "the poller took over before RECEIVE_STALL_NANOS");
                writeLandsWhileStalled(a, b, takeovers);
                assertTrue(
                        tr(b).rxThread().getState() == Thread.State.WAITING && link.release.getCount() == 1,
                        "B's receive thread was stalled all along");
            } finally {
                link.release.countDown();
                poller.join(10_000);
            }
        });
    }

    /**
     * A poller stalled in the middle of a packet (here: waiting for B's QP, whose lock the test holds) while more packets
     * for that QP come: B's receive thread takes the link over and handles the stalled packet again before the later
     * ones, so B's QP gets them in order (no PSN gap, no NAK, no retransmission at A); one of the two copies is an RC
     * duplicate. Before, the taker went on with the next packet, and whichever thread got the QP's lock first decided
     * the order: a sequence error and a go-back at A when it was the taker.
     */
    @Test
    void aTakeoverHandlesThePacketTheStalledThreadIsInTheMiddleOfFirst() throws Exception {
        try (RcPair p = pair(o -> o.timeout(20))) { // 4 s: A must not time out while the test holds B's QP
            SoftQp qpB = (SoftQp) p.b.qp;
            Transport b = tr(p.b), a = tr(p.a);
            MemoryRegion src = p.a.mrAll(4096), dst = p.b.mrAll(4096);
            fill(src.segment(), 512, 5);
            long takeovers = b.counters.get(Counter.RX_TAKEOVERS),
                    repeats = b.counters.get(Counter.RX_TAKEOVER_REPEATS);
            long outOfSequence = b.counters.get(Counter.RX_OUT_OF_SEQUENCE),
                    retransmits = a.counters.get(Counter.RETRANSMITS);
            java.util.concurrent.atomic.AtomicBoolean polling = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread poller = Thread.ofPlatform().start(() -> {
                WorkCompletion[] wc = WorkCompletion.array(4);
                while (polling.get()) p.b.cq.poll(wc);
            });
            try {
                synchronized (qpB) {
                    for (int i = 0; i < 8; i++)
                        p.a.qp.postSend(new SendWorkRequest()
                                .wrId(i)
                                .opcode(WrOpcode.RDMA_WRITE)
                                .signaled(true)
                                .buffer(src, 64L * i, 64)
                                .remote(dst.address() + 64L * i, dst.rkey()));
                    long end = System.nanoTime() + 10_000_000_000L;
                    while (!(poller.getState() == Thread.State.BLOCKED
                            && b.rxThread().getState() == Thread.State.BLOCKED
                            && b.counters.get(Counter.RX_TAKEOVERS) > takeovers)) {
                        assertTrue(
                                System.nanoTime() < end,
                                "B's poller and receive thread both wait for B's QP after a takeover");
                        Thread.sleep(1);
                    }
                }
                for (int i = 0; i < 8; i++) {
                    WorkCompletion wc = poll(p.a.cq, 5000);
                    assertEquals(WcStatus.SUCCESS, wc.status, () -> "WRITE " + wc.wrId + ": " + wc.status);
                }
            } finally {
                polling.set(false);
                poller.join(10_000);
            }
            assertFilled(dst.segment(), 0, 512, 5);
            assertEquals(outOfSequence, b.counters.get(Counter.RX_OUT_OF_SEQUENCE), "B's QP got the WRITEs in order");
            assertEquals(retransmits, a.counters.get(Counter.RETRANSMITS), "A sent each WRITE once");
            assertTrue(
                    b.counters.get(Counter.RX_TAKEOVER_REPEATS) > repeats,
                    "the stalled packet was handled again at the takeover");
        }
    }

    /**
     * A WRITE from A to B completes and lands while one of B's driving threads is stalled inside B's link; B has
     * counted a takeover of its link since the stall began (when it had {@code takeovers}).
     */
    private static void writeLandsWhileStalled(Side a, Side b, long takeovers) {
        MemoryRegion src = a.mrAll(4096), dst = b.mrAll(4096);
        fill(src.segment(), 512, 3);
        a.qp.postSend(new SendWorkRequest()
                .wrId(7)
                .opcode(WrOpcode.RDMA_WRITE)
                .signaled(true)
                .buffer(src, 0, 512)
                .remote(dst.address(), dst.rkey()));
        WorkCompletion wc = poll(a.cq, 5000);
        assertEquals(
                WcStatus.SUCCESS, wc.status, () -> "the WRITE to B while one of B's threads is stalled: " + wc.status);
        assertFilled(dst.segment(), 0, 512, 3);
        assertTrue(tr(b).counters.get(Counter.RX_TAKEOVERS) > takeovers, "B counted the takeover of its link");
    }

    @FunctionalInterface
    private interface StallBody {
        void run(Side a, Side b, StallingLink bLink) throws Exception;
    }

    /** Two connected devices whose B receives through a {@link StallingLink}. */
    private static void withStallingB(StallBody body) throws Exception {
        StallingLink[] stalling = new StallingLink[1];
        Inet4Address ipA = SoftDevices.ip("127.0.0.3"), ipB = SoftDevices.ip("127.0.0.4");
        Context anchorA = null;
        int port = 0;
        for (int attempt = 0; attempt < 50 && anchorA == null; attempt++) {
            int candidate = 20000 + (int) (Math.random() * 30000);
            try {
                anchorA = new SoftContext(new SoftDevice("stall-a", ipA, candidate), Transport.acquire(ipA, candidate));
                port = candidate;
            } catch (VerbsException e) {
                // taken: another
            }
        }
        assertNotNull(anchorA, "no free UDP port on 127.0.0.3");
        int thePort = port;
        SoftDevice devB = new SoftDevice("stall-b", ipB, thePort);
        Device stallingB = new Device() {
            @Override
            public String name() {
                return devB.name();
            }

            @Override
            public String provider() {
                return devB.provider();
            }

            @Override
            public long nodeGuid() {
                return devB.nodeGuid();
            }

            @Override
            public NodeType nodeType() {
                return devB.nodeType();
            }

            @Override
            public TransportType transportType() {
                return devB.transportType();
            }

            @Override
            public Context open() {
                return new SoftContext(devB, Transport.acquire(ipB, thePort, l -> stalling[0] = new StallingLink(l)));
            }
        };
        // the kit's timeout 14 (67 ms), retry_cnt 7: the WRITE fails after about half a second unanswered
        try (Context keep = anchorA;
                RcPair p = pair(new SoftDevice("stall-a", ipA, thePort), stallingB, o -> o.cqe(64))) {
            body.run(p.a, p.b, stalling[0]);
        }
    }

    /** A link whose receive blocks the thread {@link #stallThread} (once) until released: a poller descheduled in mid-drive. */
    private static final class StallingLink implements ForwardingLink {
        private final Link inner;
        volatile Thread stallThread;
        final CountDownLatch stalled = new CountDownLatch(1), release = new CountDownLatch(1);

        StallingLink(Link inner) {
            this.inner = inner;
        }

        @Override
        public Link delegate() {
            return inner;
        }

        @Override
        public InetSocketAddress receive(ByteBuffer b) throws IOException {
            if (Thread.currentThread() == stallThread) {
                stallThread = null;
                stalled.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return inner.receive(b);
        }
    }
}
