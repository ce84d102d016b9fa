package dev.jrdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AsyncEventTest {
    @Test
    void codesAreThoseOfIbvEventType() {
        assertEquals(0, AsyncEventType.CQ_ERR.code);
        assertEquals(4, AsyncEventType.COMM_EST.code);
        assertEquals(8, AsyncEventType.DEVICE_FATAL.code);
        assertEquals(15, AsyncEventType.SRQ_LIMIT_REACHED.code);
        assertEquals(16, AsyncEventType.QP_LAST_WQE_REACHED.code);
        assertEquals(18, AsyncEventType.GID_CHANGE.code);
        assertEquals(AsyncEventType.PORT_ERR, AsyncEventType.of(10));
        assertNull(AsyncEventType.of(99));
    }

    @Test
    void elementMustMatchTheScope() {
        assertThrows(IllegalArgumentException.class, () -> new AsyncEvent(AsyncEventType.QP_FATAL, 1, () -> {}));
        assertThrows(IllegalArgumentException.class, () -> new AsyncEvent(AsyncEventType.PORT_ACTIVE, null, () -> {}));
        AsyncEvent port = new AsyncEvent(AsyncEventType.PORT_ACTIVE, 1, () -> {});
        assertEquals(1, port.port());
        assertNull(port.queuePair());
        assertEquals(0, new AsyncEvent(AsyncEventType.DEVICE_FATAL, null, () -> {}).port());
    }

    @Test
    void ackRunsOnce() {
        AtomicInteger acks = new AtomicInteger();
        AsyncEvent e = new AsyncEvent(AsyncEventType.DEVICE_FATAL, null, acks::incrementAndGet);
        e.ack();
        e.ack();
        assertTrue(e.isAcked());
        assertEquals(1, acks.get());
    }
}
