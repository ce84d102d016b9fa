package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.assertFilled;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.testkit.RcPair.Side;
import dev.jrdma.verbs.AsyncEvent;
import dev.jrdma.verbs.AsyncEventDispatcher;
import dev.jrdma.verbs.AsyncEventType;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.NodeType;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.TransportType;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 8 §5: the loops that serve everyone survive what a bug below them throws: a poll that drives the soft device
 * while its link throws gets no exception (the failure is counted in rx_dropped) and the connection works on; the
 * asynchronous event dispatcher keeps delivering after its wait threw.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LoopSurvivalTest {

    /** A link whose receive throws {@link #failure} once, on the thread {@link #on} only (the test's polling thread). */
    private static final class ThrowingLink implements ForwardingLink {
        private final Link inner;
        volatile Thread on;
        volatile Throwable failure;
        final AtomicInteger thrown = new AtomicInteger();

        ThrowingLink(Link inner) {
            this.inner = inner;
        }

        @Override
        public Link delegate() {
            return inner;
        }

        @Override
        public InetSocketAddress receive(ByteBuffer b) throws IOException {
            Throwable t = failure;
            if (t != null && Thread.currentThread() == on) {
                failure = null;
                thrown.incrementAndGet();
                if (t instanceof Error e) throw e;
                throw (RuntimeException) t;
            }
            return inner.receive(b);
        }

        @Override
        public boolean readable() throws IOException {
            return failure != null && Thread.currentThread() == on || inner.readable();
        }
    }

    @Test
    void aPollWhoseLinkThrowsGetsNoExceptionAndTheConnectionWorksOn() {
        ThrowingLink[] link = new ThrowingLink[1];
        Inet4Address ipA = ip("127.0.0.5"), ipB = ip("127.0.0.6");
        Context anchorA = null;
        int port = 0;
        for (int attempt = 0; attempt < 50 && anchorA == null; attempt++) {
            int candidate = 20000 + (int) (Math.random() * 30000);
            try {
                anchorA = new SoftContext(new SoftDevice("throw-a", ipA, candidate), Transport.acquire(ipA, candidate));
                port = candidate;
            } catch (VerbsException e) {
                // taken: another
            }
        }
        assertNotNull(anchorA, "no free UDP port on 127.0.0.5");
        Device throwingB = wrapped(new SoftDevice("throw-b", ipB, port), l -> link[0] = new ThrowingLink(l));
        try (Context keep = anchorA;
                RcPair p = pair(new SoftDevice("throw-a", ipA, port), throwingB, o -> o.cqe(64))) {
            Side a = p.a, b = p.b;
            Transport tb = ((SoftContext) b.ctx).transport;
            WorkCompletion[] wc = WorkCompletion.array(1);
            link[0].on = Thread.currentThread();
            for (Throwable t : new Throwable[] {
                new IllegalStateException("a bug in the link"), new AssertionError("an Error in the link")
            }) {
                long dropped = tb.counters.get(Counter.RX_DROPPED);
                link[0].failure = t;
                // a poll drives the link unless the receive thread holds it (on a loaded machine it may, for a while)
                for (int polls = 0; polls < 1_000_000 && link[0].failure != null; polls++)
                    assertDoesNotThrow(() -> b.cq.poll(wc), "the poll drove the device into the failing link");
                assertNull(link[0].failure, "a poll reached the link's receive");
                assertEquals(dropped + 1, tb.counters.get(Counter.RX_DROPPED), "the failed receive is counted");
            }
            assertEquals(2, link[0].thrown.get());
            // the device works on: a WRITE into B, acknowledged by B's (polled or threaded) receive
            MemoryRegion src = a.mrAll(4096), dst = b.mrAll(4096);
            fill(src.segment(), 1000, 9);
            a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 1000)
                    .remote(dst.address(), dst.rkey()));
            WorkCompletion done = poll(a.cq, 5000);
            assertEquals(WcStatus.SUCCESS, done.status, done::toString);
            assertFilled(dst.segment(), 0, 1000, 9);
        }
    }

    /** {@code dev} whose contexts send and receive through {@code wrap} of its link. */
    private static Device wrapped(SoftDevice dev, UnaryOperator<Link> wrap) {
        return new Device() {
            @Override
            public String name() {
                return dev.name();
            }

            @Override
            public String provider() {
                return dev.provider();
            }

            @Override
            public long nodeGuid() {
                return dev.nodeGuid();
            }

            @Override
            public NodeType nodeType() {
                return dev.nodeType();
            }

            @Override
            public TransportType transportType() {
                return dev.transportType();
            }

            @Override
            public Context open() {
                return new SoftContext(dev, Transport.acquire(dev.address(), dev.port(), wrap));
            }
        };
    }

    /**
     * A provider whose wait for asynchronous events throws (an Error, then a RuntimeException): the dispatcher reports
     * it and waits again, and the next real event of the soft device still reaches the listener.
     */
    @Test
    void theEventDispatcherSurvivesAWaitThatThrows() throws Exception {
        try (Side s = Side.open(devA().open(), q -> q, 16)) {
            SoftContext real = (SoftContext) s.ctx;
            AtomicInteger failuresLeft = new AtomicInteger(2);
            InvocationHandler h = (proxy, m, args) -> {
                if (m.getName().equals("awaitAsyncEvent")) {
                    int left = failuresLeft.getAndDecrement();
                    if (left == 2) throw new AssertionError("an Error from the provider's wait");
                    if (left == 1) throw new IllegalStateException("a bug in the provider's wait");
                }
                if (m.isDefault()) return InvocationHandler.invokeDefault(proxy, m, args);
                try {
                    return m.invoke(real, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            };
            Context failing =
                    (Context) Proxy.newProxyInstance(Context.class.getClassLoader(), new Class<?>[] {Context.class}, h);
            BlockingQueue<AsyncEvent> got = new ArrayBlockingQueue<>(4);
            try (AsyncEventDispatcher d = failing.onAsyncEvent(got::add)) {
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (failuresLeft.get() > 0 && System.nanoTime() < end) Thread.sleep(5);
                assertTrue(failuresLeft.get() <= 0, "the dispatcher waited again after the first failure");
                real.raise(AsyncEventType.CQ_ERR, s.cq);
                AsyncEvent e = got.poll(10, TimeUnit.SECONDS);
                assertNotNull(e, "no event reached the listener after the wait threw twice");
                assertEquals(AsyncEventType.CQ_ERR, e.type());
                assertTrue(d.isRunning());
            }
        }
    }
}
