package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lent messages held too long are reported (Netty's leak detector cannot see them: the buffers are reused, never
 * collected): one held past the group's hold limit, or still held a second after its endpoint closed, is counted on
 * the endpoint and the group and logged once, with where it was lent and last touched when sites are recorded. The
 * client's group runs on the test's clock: nothing sleeps.
 */
@Timeout(60)
class LentLeakTest {
    static {
        TestSupport.init();
    }

    /** A client on a group whose time is {@code now}, its server side, and a message the client holds. */
    private record Held(ServerEndpoint server, EndpointGroup group, Endpoint client, Endpoint served, LentMessage m)
            implements AutoCloseable {
        @Override
        public void close() {
            client.close();
            served.close();
            group.close();
            server.close();
        }
    }

    private static Held hold(AtomicLong now, boolean sites) throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
        EndpointGroup group = EndpointGroup.open(server.group().device(), cfg, now::get);
        group.lentHoldLimit(Duration.ofSeconds(1));
        group.recordLentSites(sites);
        CompletableFuture<Endpoint> accepted = TestSupport.acceptAsync(server, cfg.timeout());
        Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), cfg, group, null);
        Endpoint served = accepted.get(30, TimeUnit.SECONDS);
        CompletableFuture<LentMessage> got = new CompletableFuture<>();
        client.onReceiveLent(new LentMessageHandler() {
            @Override
            public void onMessage(LentMessage message) {
                got.complete(message.touch("the test's handler")); // held: never released here
            }

            @Override
            public void onEnd(RdmaException cause) {}
        });
        served.sendSync(new byte[] {5});
        return new Held(server, group, client, served, got.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aMessageHeldPastTheLimitIsReportedOnceWithWhereItWasLent() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (Held h = hold(now, true)) {
            long eighth = TimeUnit.SECONDS.toNanos(1) / EndpointCompletions.LENT_SCANS;
            for (int i = 0; i < EndpointCompletions.LENT_SCANS; i++) {
                now.addAndGet(eighth);
                TestSupport.checkTimeoutsOnOwner(h.client(), now.get());
                assertEquals(0, h.client().lentLeaks(), "within the limit (scan " + i + ")");
            }
            now.addAndGet(eighth);
            TestSupport.checkTimeoutsOnOwner(h.client(), now.get());
            assertEquals(1, h.client().lentLeaks(), "held past the limit: reported");
            assertEquals(1, h.group().lentLeaks());
            now.addAndGet(10 * eighth);
            TestSupport.checkTimeoutsOnOwner(h.client(), now.get());
            assertEquals(1, h.client().lentLeaks(), "reported once");
            Throwable site = h.m().site();
            assertNotNull(site, "sites are recorded");
            assertTrue(site.getMessage().contains("the test's handler"), "the last touch is named: " + site);
            assertNotNull(site.getCause(), "and where it was lent, before");
            h.m().release(); // late, but its buffer and credit come back
            assertEquals(1, h.client().lentLeaks());
        }
    }

    @Test
    void aMessageStillHeldAfterItsEndpointClosedIsReported() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (Held h = hold(now, false)) {
            assertNull(h.m().site(), "no site without the recording");
            h.client().close();
            assertEquals(0, h.group().lentLeaks(), "a grace after the close: a pipeline's end releases then");
            now.addAndGet(EndpointGroup.LENT_CLOSE_GRACE_NANOS + ProgressCore.TIMEOUT_PERIOD_NANOS + 1);
            // the group's owner looks at the next timeout check of its duty cycle (on this clock)
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (h.group().lentLeaks() == 0 && System.nanoTime() < end) Thread.onSpinWait();
            assertEquals(1, h.group().lentLeaks(), "still held a grace after the close: reported");
            assertEquals(1, h.client().lentLeaks());
            h.m().release(); // the last release gives the receive buffers back
            assertTrue(h.client().receiveSlots().isReleased());
        }
    }
}
