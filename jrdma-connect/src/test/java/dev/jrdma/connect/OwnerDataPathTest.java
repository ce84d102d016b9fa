package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Device;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The data path belongs to the group's owner: other threads hand it commands, so what one thread does is done in its
 * order, and the close, a command too, comes after the sends made before it (its goodbye never overtakes them); a
 * close on the owner itself (in a listener) finishes as the last completions come. The close's deadlines run on the
 * group's clock: a test's clock drives them with no sleep.
 */
@Timeout(60)
class OwnerDataPathTest {
    static {
        TestSupport.init();
    }

    /** Counts what it is lent (each message's first byte, in order), releases it, and records the end. */
    static final class Recorder implements LentMessageHandler {
        final List<Integer> firstBytes = new ArrayList<>(); // the receiver's owner alone
        final CompletableFuture<RdmaException> end = new CompletableFuture<>();
        final CompletableFuture<List<Integer>> atEnd = new CompletableFuture<>();

        @Override
        public void onMessage(LentMessage m) {
            firstBytes.add(m.length() > 0 ? m.slotMemory().get(ValueLayout.JAVA_BYTE, 0) & 0xFF : -1);
            m.release();
        }

        @Override
        public void onEnd(RdmaException cause) {
            atEnd.complete(List.copyOf(firstBytes));
            end.complete(cause);
        }
    }

    @Test
    void aCloseFromAnotherThreadComesAfterTheSendsThatThreadMadeBeforeIt() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) { // 8 credits
            Endpoint c = p.clientSide();
            Recorder r = new Recorder();
            p.serverSide().onReceiveLent(r);
            int n = 200; // far more than the credits: most wait in the sender's pending list when the close comes
            RegisteredBuffer buf = c.pool().allocate(n);
            for (int i = 0; i < n; i++) buf.segment().set(ValueLayout.JAVA_BYTE, i, (byte) i);
            AtomicInteger ok = new AtomicInteger(), failed = new AtomicInteger();
            SendListener listener = f -> (f == null ? ok : failed).incrementAndGet();
            assertFalse(c.group().isCompletionThread(), "the test's thread is not the owner: its calls are commands");
            for (int i = 0; i < n; i++) assertTrue(c.send(buf, i, 1, listener), "send " + i + " taken");
            c.close(); // queued after the 200 sends: the goodbye follows them
            assertEquals(n, ok.get(), "every send was acknowledged before the close finished");
            assertEquals(0, failed.get());
            assertEquals(
                    RdmaException.Kind.PEER_CLOSED,
                    r.end.get(10, TimeUnit.SECONDS).kind());
            List<Integer> got = r.atEnd.get();
            assertEquals(n, got.size(), "every message arrived before the end");
            for (int i = 0; i < n; i++) assertEquals(i, got.get(i), "in the order sent");
            assertFalse(c.send(buf, 0, 1, listener), "a closed endpoint refuses at once");
            buf.close();
        }
    }

    @Test
    void aCloseOnTheOwnerInAListenerStillSendsWhatWasSentBefore() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide();
            Recorder r = new Recorder();
            p.serverSide().onReceiveLent(r);
            RegisteredBuffer buf = c.pool().allocate(2);
            buf.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
            buf.segment().set(ValueLayout.JAVA_BYTE, 1, (byte) 2);
            CompletableFuture<Boolean> closedOnOwner = new CompletableFuture<>();
            CompletableFuture<RdmaException> second = new CompletableFuture<>();
            assertTrue(c.send(buf, 0, 1, failure -> {
                // on the owner: this send is posted at once, and the close waits for its completion before its goodbye
                boolean owner = c.group().isCompletionThread();
                c.send(buf, 1, 1, second::complete);
                c.close();
                closedOnOwner.complete(owner && !c.isConnected());
            }));
            assertTrue(closedOnOwner.get(10, TimeUnit.SECONDS), "the close began on the owner and returned");
            assertNull(second.get(10, TimeUnit.SECONDS), "the send before the close was acknowledged");
            assertEquals(
                    RdmaException.Kind.PEER_CLOSED,
                    r.end.get(10, TimeUnit.SECONDS).kind());
            assertEquals(List.of(1, 2), r.atEnd.get());
            c.close(); // on the test's thread: waits for the close the owner finishes
            assertEquals(RdmaException.Kind.CLOSED, c.refusal().kind());
            buf.close();
        }
    }

    /**
     * A group closed from a receive handler, on its owner inside its duty cycle, ends its endpoints there without
     * driving again (its poll's completions are half dispatched): the close returns, the endpoint is closed, the
     * group too.
     */
    @Test
    void aGroupClosedInsideAHandlerEndsItsEndpointsWithoutDrivingAgain() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            EndpointGroup clientGroup = EndpointGroup.open(server.group().device(), cfg);
            CompletableFuture<Endpoint> accepted = TestSupport.acceptAsync(server, cfg.timeout());
            Endpoint c = Endpoint.connect(TestSupport.HOST, server.port(), cfg, clientGroup, null);
            Endpoint s = accepted.get(30, TimeUnit.SECONDS);
            CompletableFuture<Boolean> closedInHandler = new CompletableFuture<>();
            c.onReceive(m -> {
                try {
                    clientGroup.close();
                    closedInHandler.complete(!clientGroup.isOpen() && !c.isConnected());
                } catch (Throwable t) {
                    closedInHandler.completeExceptionally(t);
                }
            });
            // not waited for: the client's QP may be gone before its acknowledgement leaves (no linger inside a
            // callback)
            s.send(new byte[] {1});
            assertTrue(closedInHandler.get(30, TimeUnit.SECONDS), "closed there, and its endpoint with it");
            assertEquals(RdmaException.Kind.CLOSED, c.refusal().kind());
            s.close();
        }
    }

    /**
     * A client whose group runs on a test's clock closes with a send that cannot complete (the peer holds its only
     * credit's message): the close waits for it until the timeout on that clock, not on the wall's, then says goodbye
     * and fails what was left. Nothing sleeps: the test moves the clock.
     */
    @Test
    void theClosesDrainDeadlineRunsOnTheGroupsClock() throws Exception {
        EndpointConfig cfg = TestSupport.config().recvQueueDepth(1).build();
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            Device device = server.group().device();
            EndpointGroup clientGroup = EndpointGroup.open(device, cfg, now::get);
            try {
                CompletableFuture<Endpoint> accepted = TestSupport.acceptAsync(server, cfg.timeout());
                Endpoint c = Endpoint.connect(TestSupport.HOST, server.port(), cfg, clientGroup, null);
                Endpoint s = accepted.get(30, TimeUnit.SECONDS);
                ConcurrentLinkedQueue<LentMessage> held = new ConcurrentLinkedQueue<>();
                CompletableFuture<RdmaException> end = new CompletableFuture<>();
                s.onReceiveLent(new LentMessageHandler() {
                    @Override
                    public void onMessage(LentMessage m) {
                        held.add(m); // never released: its credit stays with the server
                    }

                    @Override
                    public void onEnd(RdmaException cause) {
                        end.complete(cause);
                    }
                });
                CompletableFuture<Void> first = c.send(new byte[] {1});
                CompletableFuture<Void> waiting = c.send(new byte[] {2}); // no credit: pending
                first.get(10, TimeUnit.SECONDS);
                CompletableFuture<Void> closing = CompletableFuture.runAsync(
                        c::close, r -> Thread.ofPlatform().start(r));
                // the close waits for the pending send, on the group's clock, which stands still
                while (c.isConnected()) Thread.onSpinWait();
                assertFalse(closing.isDone(), "the close waits for the pending send within the timeout");
                assertFalse(waiting.isDone());
                now.addAndGet(cfg.timeout().toNanos() + ProgressCore.TIMEOUT_PERIOD_NANOS + 1);
                closing.get(30, TimeUnit.SECONDS);
                assertTrue(waiting.isCompletedExceptionally(), "what was left fails once the deadline passed");
                assertEquals(
                        RdmaException.Kind.PEER_CLOSED,
                        end.get(10, TimeUnit.SECONDS).kind());
                assertEquals(1, held.size(), "the message that had a credit arrived, the other never did");
                for (LentMessage m : held) m.release();
                s.close();
            } finally {
                clientGroup.close();
            }
        }
    }
}
