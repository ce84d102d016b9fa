package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The fault injector's own behaviour: a packet sent again is a new draw (what a go-back-N requester's retries rely on
 * to get through a lossy link), and dropping is all it does to a packet that it drops.
 */
class FaultyLinkTest {
    static final InetSocketAddress TO = new InetSocketAddress("127.0.0.2", DeterministicNetwork.PORT);

    /** A link that keeps a copy of every datagram it is given. */
    static final class Recording implements Link {
        final Map<ByteBuffer, Integer> sent = new HashMap<>();
        long datagrams;

        @Override
        public boolean send(ByteBuffer b, InetSocketAddress to) {
            ByteBuffer copy = ByteBuffer.allocate(b.remaining());
            copy.put(b.duplicate()).flip();
            sent.merge(copy, 1, Integer::sum);
            datagrams++;
            b.position(b.limit());
            return true;
        }

        @Override
        public InetSocketAddress receive(ByteBuffer b) {
            return null;
        }

        @Override
        public void await() {}

        @Override
        public void wakeup() {}

        @Override
        public void close() {}
    }

    /** {@code n} distinct packets of {@code len} random bytes. */
    static ByteBuffer[] packets(int n, int len, long seed) {
        Random r = new Random(seed);
        ByteBuffer[] p = new ByteBuffer[n];
        for (int i = 0; i < n; i++) {
            byte[] b = new byte[len];
            r.nextBytes(b);
            p[i] = ByteBuffer.wrap(b);
        }
        return p;
    }

    /**
     * A window of 512 packets sent again and again, as go-back-N resends it, over a link that drops half of them: each
     * resend is a new draw, so every packet gets through within 40 rounds (the chance that one is dropped 40 times is
     * 2^-40). The occurrence counts were a table indexed by the packet's hash: two packets of the window that shared a
     * slot reset each other's count at every resend, so each met its first fate again forever; at 1% loss that made a
     * dropped packet lost on every retry until RETRY_EXC_ERR.
     */
    @Test
    void aPacketSentAgainIsANewDrawEvenAmongManyOthers() throws Exception {
        Recording inner = new Recording();
        Faults faults = Faults.parse("drop=0.5,seed=7");
        ByteBuffer[] window = packets(512, 1100, 23);
        try (FaultyLink link = new FaultyLink(inner, faults, "test", new ManualClock())) {
            for (int round = 0; round < 40; round++) for (ByteBuffer p : window) assertTrue(link.send(p.clear(), TO));
            assertEquals(40 * 512, link.packets.get());
            int neverArrived = 0;
            for (ByteBuffer p : window) if (!inner.sent.containsKey(p.clear())) neverArrived++;
            assertEquals(0, neverArrived, "packets dropped at every one of 40 sends");
            // and about half of all sends were dropped, as asked
            assertEquals(0.5, link.dropped.get() / (40.0 * 512), 0.05);
            assertEquals(40 * 512 - link.dropped.get(), inner.datagrams);
        }
    }

    /**
     * Loss only: what arrives is exactly what was sent (no packet altered, none sent twice), so a receiver's ICRC check
     * cannot fail because of the injector.
     */
    @Test
    void withLossOnlyEveryPacketThatArrivesIsUnchanged() throws Exception {
        Recording inner = new Recording();
        ByteBuffer[] window = packets(300, 1100, 29);
        Map<ByteBuffer, Integer> offered = new HashMap<>();
        try (FaultyLink link = new FaultyLink(inner, Faults.parse("drop=0.01,seed=7"), "test", new ManualClock())) {
            for (int round = 0; round < 10; round++)
                for (ByteBuffer p : window) {
                    offered.merge(ByteBuffer.wrap(p.array().clone()), 1, Integer::sum);
                    assertTrue(link.send(p.clear(), TO));
                }
            assertEquals(0, link.corrupted.get() + link.duplicated.get() + link.reordered.get() + link.delayed.get());
            assertTrue(link.dropped.get() > 0);
            for (Map.Entry<ByteBuffer, Integer> e : inner.sent.entrySet())
                assertTrue(e.getValue() <= offered.getOrDefault(e.getKey(), 0), "a packet that was never sent");
            assertEquals(10 * 300 - link.dropped.get(), inner.datagrams);
        }
    }
}
