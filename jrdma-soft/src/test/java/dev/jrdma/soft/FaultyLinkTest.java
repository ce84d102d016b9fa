package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
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
        /** Every datagram in the order given. */
        final List<ByteBuffer> order = new ArrayList<>();

        long datagrams, batchCalls;

        @Override
        public int send(TxBatch batch, int from, int n, InetSocketAddress to) throws java.io.IOException {
            batchCalls++;
            return Link.super.send(batch, from, n, to);
        }

        @Override
        public boolean send(ByteBuffer b, InetSocketAddress to) {
            ByteBuffer copy = ByteBuffer.allocate(b.remaining());
            copy.put(b.duplicate()).flip();
            sent.merge(copy, 1, Integer::sum);
            order.add(copy);
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

    /**
     * A batch (one {@code sendmmsg} on the libc link) goes on as batches of the packets that meet no fault, in order,
     * with the same fates a packet-by-packet send draws: a lossy run costs the device its losses, not a system call per
     * packet (without this override every packet took its own {@code sendto}).
     */
    @Test
    void aBatchGoesOnAsBatchesInOrderWithTheSameFates() throws Exception {
        ByteBuffer[] window = packets(TxBatch.CAPACITY, 1100, 31);
        Recording one = new Recording(), batched = new Recording();
        try (FaultyLink a = new FaultyLink(one, Faults.parse("drop=0.1,seed=7"), "test", new ManualClock());
                FaultyLink b = new FaultyLink(batched, Faults.parse("drop=0.1,seed=7"), "test", new ManualClock())) {
            for (ByteBuffer p : window) assertTrue(a.send(p.clear(), TO));
            TxBatch batch = new TxBatch();
            for (int i = 0; i < window.length; i++) {
                batch.slot(i).clear().put(window[i].clear());
                batch.lengths[i] = window[i].capacity();
                batch.slot(i).clear();
            }
            assertEquals(TxBatch.CAPACITY, b.send(batch, 0, TxBatch.CAPACITY, TO));
            assertTrue(a.dropped.get() > 0 && a.dropped.get() < TxBatch.CAPACITY / 2, "some dropped: " + a.summary());
            assertEquals(a.dropped.get(), b.dropped.get());
            assertEquals(one.order, batched.order, "the same packets, in the same order");
            assertTrue(batched.batchCalls >= 1 && batched.batchCalls <= a.dropped.get() + 1, "runs between the drops");
        }
    }
}
