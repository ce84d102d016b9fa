package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A packet the link cannot take ({@link Link#send} false: a same-host ring whose reader is off the CPU, a full socket
 * buffer) is tried {@link Transport#SEND_TRIES} times, then dropped and counted as congestion in
 * {@code tx_dropped_link_full}, which RC repairs by sending it again; only a link that fails counts {@code tx_errors}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransportSendTest {

    @Test
    void aPacketTheLinkCannotTakeIsTriedThenDroppedAsCongestionNotCountedAsAnError() throws Exception {
        InetAddress a = InetAddress.getByName("127.0.0.1");
        int port;
        try (DatagramSocket probe = new DatagramSocket(0, a)) {
            port = probe.getLocalPort();
        }
        AtomicInteger tries = new AtomicInteger();
        AtomicBoolean failing = new AtomicBoolean();
        Transport t = Transport.acquire(a, port, link -> new FullLink(link, tries, failing));
        try {
            InetSocketAddress to = new InetSocketAddress(a, port + 1);
            t.send(ByteBuffer.allocateDirect(64), 64, to);
            assertEquals(Transport.SEND_TRIES, tries.get(), "tried that often before giving up");
            assertEquals(1, t.counters.get(Counter.TX_DROPPED_LINK_FULL));
            assertEquals(0, t.counters.get(Counter.TX_ERRORS));
            assertEquals(0, t.counters.get(Counter.TX_PACKETS));

            tries.set(0);
            TxBatch batch = new TxBatch();
            for (int i = 0; i < 3; i++) {
                batch.slot(i);
                batch.lengths[i] = 64;
            }
            t.send(batch, 3, to);
            assertEquals(Transport.SEND_TRIES, tries.get());
            assertEquals(4, t.counters.get(Counter.TX_DROPPED_LINK_FULL), "a batch's three packets");
            assertEquals(0, t.counters.get(Counter.TX_ERRORS));

            failing.set(true);
            t.send(ByteBuffer.allocateDirect(64), 64, to);
            t.send(batch, 3, to);
            assertEquals(4, t.counters.get(Counter.TX_ERRORS), "a link that fails is an error, the batch's three too");
            assertEquals(4, t.counters.get(Counter.TX_DROPPED_LINK_FULL));
        } finally {
            t.release();
        }
    }

    /** A link that never takes a packet (full), or fails each send; receives go to the real link. */
    private record FullLink(Link delegate, AtomicInteger tries, AtomicBoolean failing) implements ForwardingLink {
        @Override
        public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
            if (failing.get()) throw new IOException("the link failed");
            tries.incrementAndGet();
            return false;
        }
    }
}
