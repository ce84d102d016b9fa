package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The close protocol as a unit: what goes over the control channel, once, and the drain and linger deadlines. */
class GoodbyeTest {
    /** A control channel that records what the protocol says on it. */
    private static final class Recorded implements Control {
        final List<String> said = new ArrayList<>();

        @Override
        public SocketAddress remoteAddress() {
            return new InetSocketAddress("127.0.0.1", 1);
        }

        @Override
        public SocketAddress localAddress() {
            return new InetSocketAddress("127.0.0.1", 2);
        }

        @Override
        public void bye() {
            said.add("bye");
        }

        @Override
        public void byeAck() {
            said.add("ack");
        }

        @Override
        public void start(Endpoint ep) {}

        @Override
        public void close() {}
    }

    @Test
    void nothingIsSaidBeforeTheHandshakeMadeAChannel() {
        Goodbye g = new Goodbye(Duration.ofSeconds(3));
        g.sayBye();
        g.acknowledge();
        Recorded c = new Recorded();
        g.attach(c);
        assertEquals(List.of(), c.said);
    }

    @Test
    void goodbyeAndAcknowledgementGoOutOnceEach() {
        Goodbye g = new Goodbye(Duration.ofSeconds(3));
        Recorded c = new Recorded();
        g.attach(c);
        g.sayBye();
        g.sayBye();
        g.acknowledge();
        g.acknowledge();
        assertEquals(List.of("bye", "ack"), c.said);
    }

    @Test
    void theDrainLastsTheTimeoutButAtMostASecond() {
        Goodbye shortTimeout = new Goodbye(Duration.ofMillis(200));
        assertFalse(shortTimeout.isDraining());
        shortTimeout.startDrain(1_000);
        assertTrue(shortTimeout.isDraining());
        assertFalse(shortTimeout.drainExpired(1_000 + 200_000_000L));
        assertTrue(shortTimeout.drainExpired(1_000 + 200_000_001L));
        shortTimeout.endDrain();
        assertFalse(shortTimeout.drainExpired(Long.MAX_VALUE / 2), "an ended drain never expires");

        Goodbye longTimeout = new Goodbye(Duration.ofSeconds(30));
        longTimeout.startDrain(0);
        assertFalse(longTimeout.drainExpired(Goodbye.DRAIN_MAX_NS));
        assertTrue(longTimeout.drainExpired(Goodbye.DRAIN_MAX_NS + 1));
    }

    @Test
    void theLingerLastsTheTimeoutButAtMostTwoSeconds() {
        assertEquals(5 + 300_000_000L, new Goodbye(Duration.ofMillis(300)).lingerDeadline(5));
        assertEquals(5 + Goodbye.LINGER_MAX_NS, new Goodbye(Duration.ofSeconds(30)).lingerDeadline(5));
    }
}
