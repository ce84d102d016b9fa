package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Messages lent in their receive buffers ({@link Endpoint#onReceiveLent}): read in place, released once; a message
 * held keeps its buffer and the peer's credit (the sender waits, nothing is lost); the end of the input is told once;
 * and the listened sends ({@link Endpoint#send(RegisteredBuffer, long, int, SendListener)}) report their end.
 */
@Timeout(60)
class LentReceiveTest {
    static {
        TestSupport.init();
    }

    /** Collects lent messages without releasing them, and the end of the input. */
    static final class Holder implements LentMessageHandler {
        final LinkedBlockingQueue<LentMessage> held = new LinkedBlockingQueue<>();
        final CompletableFuture<RdmaException> end = new CompletableFuture<>();

        @Override
        public void onMessage(LentMessage message) {
            held.add(message);
        }

        @Override
        public void onEnd(RdmaException cause) {
            assertTrue(end.complete(cause), "the end is told once");
        }

        LentMessage take() throws InterruptedException {
            LentMessage m = held.poll(10, TimeUnit.SECONDS);
            if (m == null) throw new AssertionError("no message came");
            return m;
        }
    }

    @Test
    void aHeldMessageHoldsItsCreditAndNothingIsLost() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) { // 8 credits
            Endpoint c = p.clientSide(), s = p.serverSide();
            Holder h = new Holder();
            s.onReceiveLent(h);
            CompletableFuture<?>[] sends = new CompletableFuture<?>[12];
            for (int i = 0; i < sends.length; i++) sends[i] = c.send(new byte[] {(byte) i, 42});
            LentMessage[] first = new LentMessage[8];
            for (int i = 0; i < 8; i++) {
                first[i] = h.take();
                assertEquals(2, first[i].length());
                assertEquals((byte) i, first[i].slotMemory().get(ValueLayout.JAVA_BYTE, 0), "in order, in place");
                sends[i].get(10, TimeUnit.SECONDS);
            }
            // every credit is held by a lent message: the rest wait at the sender, none can arrive
            assertEquals(0, c.sendCredits());
            for (int i = 8; i < 12; i++) assertFalse(sends[i].isDone(), "send " + i + " waits for a credit");
            assertTrue(h.held.isEmpty());
            for (LentMessage m : first) m.release(); // buffers reposted, credits back: the waiting sends go
            for (int i = 8; i < 12; i++) {
                LentMessage m = h.take();
                assertEquals((byte) i, m.bytes()[0]);
                assertEquals(42, m.segment().get(ValueLayout.JAVA_BYTE, 1));
                m.release();
                sends[i].get(10, TimeUnit.SECONDS);
            }
            IllegalStateException twice = assertThrows(IllegalStateException.class, first[0]::release);
            assertTrue(twice.getMessage().contains("released already"), twice.getMessage());
            ExecutionException refused =
                    assertThrows(ExecutionException.class, () -> s.receive().get());
            assertTrue(refused.getCause() instanceof IllegalStateException);
            assertThrows(IllegalStateException.class, () -> s.onReceive(m -> {}));
        }
    }

    @Test
    void queuedMessagesComeFirstAndThePeersCloseEndsTheInput() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            c.sendSync(new byte[] {1});
            c.sendSync(new byte[] {2});
            Holder h = new Holder();
            s.onReceiveLent(h); // those queued before are lent as copies, first, in order
            LentMessage one = h.take(), two = h.take();
            assertEquals(1, one.bytes()[0]);
            assertEquals(2, two.bytes()[0]);
            one.release();
            two.release();
            RegisteredBuffer buf = c.pool().allocate(16);
            buf.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 3);
            CompletableFuture<RdmaException> sent = new CompletableFuture<>();
            assertTrue(c.send(buf, 0, 1, sent::complete));
            assertEquals(null, sent.get(10, TimeUnit.SECONDS), "the listener is told of the success");
            LentMessage three = h.take();
            assertTrue(three.slot() >= 0, "lent in its receive buffer");
            assertEquals(3, three.slotMemory().get(ValueLayout.JAVA_BYTE, 0));
            three.release();
            c.close();
            RdmaException end = h.end.get(10, TimeUnit.SECONDS);
            assertEquals(RdmaException.Kind.PEER_CLOSED, end.kind());
            assertFalse(c.send(buf, 0, 1, sent::complete), "a closed endpoint refuses at once");
            assertEquals(RdmaException.Kind.CLOSED, c.refusal().kind());
            buf.close();
        }
    }

    @Test
    void aMessageHeldPastTheCloseKeepsItsBufferUntilReleased() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            Endpoint c = p.clientSide(), s = p.serverSide();
            Holder h = new Holder();
            s.onReceiveLent(h);
            c.sendSync(new byte[] {9, 8});
            LentMessage m = h.take();
            s.close();
            assertEquals(
                    RdmaException.Kind.CLOSED, h.end.get(10, TimeUnit.SECONDS).kind());
            // the receive buffers stay out of the pool while a message lies in them: nobody else gets that memory
            assertFalse(s.receiveSlots().isReleased(), "the receive buffers are kept for the lent message");
            assertEquals(9, m.slotMemory().get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(8, m.slotMemory().get(ValueLayout.JAVA_BYTE, 1));
            m.release(); // the last one out gives the receive buffers back
            assertTrue(s.receiveSlots().isReleased(), "released with the last lent message");
        }
    }
}
