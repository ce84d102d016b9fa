package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ShmLink#peerBehind}, on two real same-host links with a {@link ManualClock}: a packet put in the peer's ring
 * and not taken counts as the peer's being behind once it has waited {@link ProgressEngine#PEER_BEHIND_NANOS}, and no
 * longer once the peer took it. This is what a polling thread looks at before it gives its CPU up: on a busy two-core
 * machine the two threads of a ping-pong shared one core, and each spun out its whole busy-poll budget while the other
 * waited to take its packet (netty-bench's ~211 us round trips; jrdma-soft/README.md).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PeerBehindTest {
    private final ManualClock clock = new ManualClock();

    @Test
    void aPacketTheSameHostPeerHasNotTakenCountsAsBehindAfterTheThresholdAndNotOnceTaken() throws Exception {
        InetAddress ipA = SoftDevices.ip("127.0.0.23"), ipB = SoftDevices.ip("127.0.0.24");
        for (int attempt = 0; ; attempt++) {
            int port = 20000 + (int) (Math.random() * 30000);
            Link a = null, b = null;
            try {
                a = ShmLink.around(LinkFactory.openUdp(ipA, port), IpAddress.of(ipA), port, new Counter.Set(), clock);
                b = ShmLink.around(LinkFactory.openUdp(ipB, port), IpAddress.of(ipB), port, new Counter.Set(), clock);
            } catch (IOException e) {
                if (a != null) a.close();
                if (attempt < 50) continue; // the port is taken on one of the addresses
                throw e;
            }
            try {
                check((ShmLink) a, (ShmLink) b, new InetSocketAddress(ipB, port));
            } finally {
                a.close();
                b.close();
            }
            return;
        }
    }

    private void check(ShmLink a, ShmLink b, InetSocketAddress toB) throws IOException {
        RxBatch atA = new RxBatch(), atB = new RxBatch();
        a.prepare(atA);
        b.prepare(atB);
        // the ring's proof: A's HELLO over UDP, B's ACK (loopback delivers them within microseconds)
        a.expectPeer(toB);
        receiveUntil(b, atB, () -> false, 200); // B answers the HELLO
        receiveUntil(a, atA, () -> a.shmPeers().contains(toB), 5_000);
        assertTrue(a.shmPeers().contains(toB), "A sends to B through B's ring");

        assertFalse(a.peerBehind(clock.nanoTime(), ProgressEngine.PEER_BEHIND_NANOS), "nothing sent yet");
        long sent = clock.nanoTime();
        assertTrue(a.send(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), toB));
        long limit = ProgressEngine.PEER_BEHIND_NANOS;
        assertFalse(a.peerBehind(sent + limit - 1, limit), "waited less than the threshold");
        assertTrue(a.peerBehind(sent + limit, limit), "not taken after the threshold: behind");

        clock.advanceNanos(limit);
        assertEquals(1, b.receive(atB), "B takes the packet from its ring");
        assertEquals(4, atB.lengths[0]);
        assertFalse(a.peerBehind(sent + 10 * limit, limit), "taken: not behind, however long ago it was sent");
    }

    /** Receives on {@code link} until {@code done} or {@code rounds} empty looks (real time: loopback UDP). */
    private static void receiveUntil(ShmLink link, RxBatch batch, BooleanSupplier done, int rounds) throws IOException {
        for (int i = 0; i < rounds && !done.getAsBoolean(); i++) {
            if (link.receive(batch) == 0) Thread.onSpinWait();
        }
    }
}
