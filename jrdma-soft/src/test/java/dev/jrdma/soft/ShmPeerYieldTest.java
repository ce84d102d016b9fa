package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 23 §5's slow mode: the two processes of a same-host stream on one core (the other core busy) took turns only
 * when a time slice ended, since the side with nothing to do spun on its CPU while the side that had work waited for
 * it. A thread with nothing to do now gives its CPU away once the packet it sent last has waited untaken in the
 * peer's ring for {@link ShmLink#PEER_BEHIND_YIELD_NANOS}, and only then (counted in {@code tx_shm_yields}). Two
 * links of this process, driven by hand on a manual clock: the peer takes a packet only when the test says so.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmPeerYieldTest {

    /**
     * A polls once a microsecond for {@code micros} microseconds, as a polling thread's drive does: it receives when
     * the link says something may wait, finds nothing, and tells the link it is idle; returns how often it gave its
     * CPU away.
     */
    private static long idle(ShmLink a, RxBatch batch, ManualClock clock, Counter.Set counters, long micros)
            throws IOException {
        long before = counters.get(Counter.TX_SHM_YIELDS);
        for (long i = 0; i < micros; i++) {
            clock.advanceNanos(1000);
            if (a.readable()) assertEquals(0, a.receive(batch));
            a.idle();
        }
        return counters.get(Counter.TX_SHM_YIELDS) - before;
    }

    @Test
    void aThreadWithNothingToDoGivesItsCpuAwayOnlyWhileThePeerLeavesItsPacketUntaken() throws Exception {
        ManualClock clock = new ManualClock();
        Counter.Set ca = new Counter.Set(), cb = new Counter.Set();
        InetAddress ipA = InetAddress.getByName("127.0.0.63"), ipB = InetAddress.getByName("127.0.0.64");
        ShmLink a = null, b = null;
        try {
            int port = 0;
            for (int attempt = 0; attempt < 50 && b == null; attempt++) {
                port = 20000 + (int) (Math.random() * 30000);
                try {
                    a = (ShmLink)
                            ShmLink.around(LinuxUdpLink.open(ipA, port, clock), IpAddress.of(ipA), port, ca, clock);
                    b = (ShmLink)
                            ShmLink.around(LinuxUdpLink.open(ipB, port, clock), IpAddress.of(ipB), port, cb, clock);
                } catch (IOException e) {
                    if (a != null) a.close();
                    a = null; // the port is taken on one of the addresses: another
                }
            }
            assertNotNull(b, "no free UDP port on 127.0.0.63 and 127.0.0.64");
            InetSocketAddress toA = new InetSocketAddress(ipA, port), toB = new InetSocketAddress(ipB, port);
            RxBatch batchA = new RxBatch(), batchB = new RxBatch();
            a.prepare(batchA);
            b.prepare(batchB);
            // each claims a slot in the other's ring and says HELLO over UDP; the other answers: cells go in from then
            a.expectPeer(toB);
            b.expectPeer(toA);
            for (int i = 0; i < 100 && (a.shmPeers().isEmpty() || b.shmPeers().isEmpty()); i++) {
                b.await(1_000_000);
                b.receive(batchB);
                a.await(1_000_000);
                a.receive(batchA);
            }
            assertEquals(List.of(toB), a.shmPeers(), "A's claim in B's ring was never proven");
            assertEquals(List.of(toA), b.shmPeers(), "B's claim in A's ring was never proven");

            ByteBuffer packet = ByteBuffer.allocateDirect(64);
            assertTrue(a.send(packet, toB));
            assertEquals(1, ca.get(Counter.TX_SHM_PACKETS));
            // B does not take it (its thread waits for a CPU): A's poller keeps its CPU for a while, then gives it away
            long wait = ShmLink.PEER_BEHIND_YIELD_NANOS / 1000;
            assertEquals(0, idle(a, batchA, clock, ca, wait + 1), "A gave its CPU away before B had a chance");
            long yields = idle(a, batchA, clock, ca, 10);
            assertEquals(
                    10,
                    yields,
                    "A kept its CPU while its packet waited in B's ring: " + yields + " of 10 looks gave it away");

            // B takes it: A keeps its CPU however long it then finds nothing to do
            int taken = 0;
            for (int i = 0; i < 10 && taken == 0; i++) taken = b.receive(batchB);
            assertEquals(1, taken);
            assertEquals(
                    0, idle(a, batchA, clock, ca, 10 * wait), "A gave its CPU away with nothing of its own waiting");

            // the next packet left untaken starts a new watch: a full wait again before A gives its CPU away
            packet.clear();
            assertTrue(a.send(packet, toB));
            assertEquals(0, idle(a, batchA, clock, ca, wait + 1));
            assertEquals(10, idle(a, batchA, clock, ca, 10));
        } finally {
            if (a != null) a.close();
            if (b != null) b.close();
        }
    }
}
