package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * When a polling thread looks at the UDP socket of a same-host link ({@link ShmLink#readable}), on two real links with
 * a {@link ManualClock}: on every poll while the rings carry nothing, rationed to one look per
 * {@link ShmLink#UDP_LOOK_NANOS} while they do, and on every poll again once they have been quiet for
 * {@link ShmLink#RINGS_QUIET_NANOS}. Before, a claimed slot alone rationed the socket for good: the benchmarks' warm-up
 * (a QP connected to itself) left one, and between two hosts every half round trip then waited for the next look
 * (~10 us against ~4; jrdma-bench/README.md, issue 23).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UdpLookTest {
    private final ManualClock clock = new ManualClock();

    /** The UDP socket under B's ring link, counting the polls' looks; it never has a datagram for them. */
    private static final class WatchedSocket implements ForwardingLink {
        final Link inner;
        int looks, awaits;

        WatchedSocket(Link inner) {
            this.inner = inner;
        }

        @Override
        public Link delegate() {
            return inner;
        }

        @Override
        public boolean readable() {
            looks++;
            return false;
        }

        @Override
        public int receive(RxBatch batch) throws IOException {
            return inner.receive(batch);
        }

        @Override
        public void prepare(RxBatch batch) {
            inner.prepare(batch);
        }

        /** Returns at once: the test looks at what came before the wait. */
        @Override
        public void await() {
            awaits++;
        }
    }

    @Test
    void aSlotThatCarriesNothingDoesNotRationTheSocket() throws Exception {
        WatchedSocket[] socket = new WatchedSocket[1];
        try (PeerBehindTest.Pair p =
                PeerBehindTest.openPair("127.0.0.73", "127.0.0.74", clock, l -> socket[0] = new WatchedSocket(l))) {
            RxBatch atA = new RxBatch(), atB = new RxBatch();
            p.a().prepare(atA);
            p.b().prepare(atB);
            PeerBehindTest.proveRing(p.a(), atA, p.b(), atB, p.toB());
            WatchedSocket udp = socket[0];

            // A holds a proven slot in B's ring and sends nothing through it: every poll looks at the socket
            int before = udp.looks;
            for (int i = 0; i < 5; i++) assertFalse(p.b().readable());
            assertEquals(before + 5, udp.looks, "quiet rings: a look per poll");

            // the rings carry a packet: the socket's looks are rationed
            assertTrue(p.a().send(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), p.toB()));
            assertEquals(1, p.b().receive(atB), "B takes the packet from its ring");
            before = udp.looks;
            for (int i = 0; i < 5; i++) assertFalse(p.b().readable());
            assertEquals(before, udp.looks, "rings in use: no look before its time");
            clock.advanceNanos(ShmLink.UDP_LOOK_NANOS);
            assertFalse(p.b().readable());
            assertFalse(p.b().readable());
            assertEquals(before + 1, udp.looks, "one look when it is due, then none until the next");

            // the rings have been quiet long enough: a look per poll again
            clock.advanceNanos(ShmLink.RINGS_QUIET_NANOS);
            before = udp.looks;
            for (int i = 0; i < 5; i++) assertFalse(p.b().readable());
            assertEquals(before + 5, udp.looks, "rings quiet for RINGS_QUIET_NANOS: a look per poll");
        }
    }

    /**
     * The receive thread's wait ({@link ShmLink#await()}) watches the rings for {@link ShmLink#SPIN_NANOS} before it
     * sleeps only while they carry packets: for a slot that carries nothing it sleeps at once (a clock that moves a
     * microsecond per read shows how long it watched).
     */
    @Test
    void theReceiveThreadWatchesTheRingsBeforeItSleepsOnlyWhileTheyCarryPackets() throws Exception {
        long[] now = {1_000_000_000L};
        Clock ticking = () -> now[0] += 1_000;
        WatchedSocket[] socket = new WatchedSocket[1];
        try (PeerBehindTest.Pair p =
                PeerBehindTest.openPair("127.0.0.75", "127.0.0.76", ticking, l -> socket[0] = new WatchedSocket(l))) {
            RxBatch atA = new RxBatch(), atB = new RxBatch();
            p.a().prepare(atA);
            p.b().prepare(atB);
            PeerBehindTest.proveRing(p.a(), atA, p.b(), atB, p.toB());
            WatchedSocket udp = socket[0];

            now[0] += ShmLink.RINGS_QUIET_NANOS; // A's proven slot has carried nothing for that long
            long before = now[0];
            p.b().await();
            assertEquals(1, udp.awaits, "asleep in the socket's wait");
            assertTrue(now[0] - before < ShmLink.SPIN_NANOS, "slept at once, watched " + (now[0] - before) + " ns");

            assertTrue(p.a().send(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), p.toB()));
            assertEquals(1, p.b().receive(atB), "B takes the packet from its ring");
            before = now[0];
            p.b().await();
            assertEquals(2, udp.awaits);
            assertTrue(now[0] - before >= ShmLink.SPIN_NANOS, "rings in use: watched them first");
        }
    }
}
