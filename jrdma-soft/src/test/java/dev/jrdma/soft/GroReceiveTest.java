package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Coalesced receive ({@code UDP_GRO}, on by default; {@link GroReceiver}, {@link GroBatch}) over real loopback
 * sockets: a segmented send arrives as one message and is split by its segment size into the same packets, the last
 * shorter one included, each with the message's ECN field; a segment longer than a slot is a marked (counted) drop and
 * nothing else is lost; two senders' packets never mix; what one burst leaves is handed out first into the next burst,
 * whichever batch receives it; a single-datagram receive splits too. The senders that are not jrdma are plain libc
 * sockets with {@code UDP_SEGMENT} and {@code IP_TOS} set (any peer can send so).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GroReceiveTest {
    private static final long DEADLINE_NANOS = 5_000_000_000L;

    @BeforeEach
    void linuxWithLibc() {
        Assumptions.assumeTrue(LinuxUdpLink.AVAILABLE, "the libc UDP link (Linux)");
    }

    /** A plain UDP socket through libc, bound to {@code host} and a free port: a peer that is not jrdma. */
    private static final class PlainSender implements AutoCloseable {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final SymbolLookup LIBC = LINKER.defaultLookup();
        private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT;
        private static final MethodHandle SOCKET = handle("socket", FunctionDescriptor.of(I, I, I, I)),
                SETSOCKOPT = handle("setsockopt", FunctionDescriptor.of(I, I, I, I, ValueLayout.ADDRESS, I)),
                BIND = handle("bind", FunctionDescriptor.of(I, I, ValueLayout.ADDRESS, I)),
                SENDTO =
                        handle(
                                "sendto",
                                FunctionDescriptor.of(
                                        ValueLayout.JAVA_LONG,
                                        I,
                                        ValueLayout.ADDRESS,
                                        ValueLayout.JAVA_LONG,
                                        I,
                                        ValueLayout.ADDRESS,
                                        I)),
                CLOSE = handle("close", FunctionDescriptor.of(I, I));

        private static MethodHandle handle(String name, FunctionDescriptor d) {
            return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), d);
        }

        final Arena arena = Arena.ofConfined();
        final int fd;
        final InetSocketAddress address;

        PlainSender(String host) throws Throwable {
            fd = (int) SOCKET.invokeExact(2 /* AF_INET */, 2 /* SOCK_DGRAM */, 0);
            assertTrue(fd >= 0, "socket()");
            InetAddress a = InetAddress.getByName(host);
            int port;
            try (DatagramSocket probe = new DatagramSocket(new InetSocketAddress(a, 0))) {
                port = probe.getLocalPort();
            }
            assertEquals(0, (int) BIND.invokeExact(fd, sockaddr(new InetSocketAddress(a, port)), 16), "bind");
            address = new InetSocketAddress(a, port);
        }

        private MemorySegment sockaddr(InetSocketAddress to) {
            MemorySegment sa = arena.allocate(16);
            sa.set(ValueLayout.JAVA_SHORT, 0, (short) 2);
            sa.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 2, (short) to.getPort());
            MemorySegment.copy(to.getAddress().getAddress(), 0, sa, ValueLayout.JAVA_BYTE, 4, 4);
            return sa;
        }

        private void option(int level, int name, int value) throws Throwable {
            int r = (int) SETSOCKOPT.invokeExact(fd, level, name, arena.allocateFrom(I, value), 4);
            Assumptions.assumeTrue(r == 0, "setsockopt(" + level + ", " + name + ") refused here");
        }

        /** Every datagram after this leaves with this TOS byte (its low two bits: the ECN field). */
        void tos(int tos) throws Throwable {
            option(0 /* IPPROTO_IP */, 1 /* IP_TOS */, tos);
        }

        /** Every send after this longer than {@code size} is cut by the kernel into datagrams of that size (0: off). */
        void segment(int size) throws Throwable {
            option(17 /* SOL_UDP */, 103 /* UDP_SEGMENT */, size);
        }

        void send(byte[] data, InetSocketAddress to) throws Throwable {
            MemorySegment d = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            assertEquals(data.length, (long) SENDTO.invokeExact(fd, d, (long) data.length, 0, sockaddr(to), 16));
        }

        @Override
        public void close() {
            try {
                int ignored = (int) CLOSE.invokeExact(fd);
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            } finally {
                arena.close();
            }
        }
    }

    /** {@code segments} segments of {@code size} bytes (the last {@code last}), each byte naming its segment and tag. */
    private static byte[] run(int tag, int size, int segments, int last) {
        byte[] b = new byte[size * (segments - 1) + last];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (tag * 31 + i / size * 7 + i % size);
        return b;
    }

    /** A packet as received: its bytes, sender and ECN field. */
    private record Packet(byte[] bytes, int length, InetSocketAddress from, int ecn) {}

    /** Receives into {@code rx} until {@code n} packets came (or the deadline), each copied out. */
    private static List<Packet> receive(LinuxUdpLink link, RxBatch rx, int n) throws IOException {
        List<Packet> got = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (got.size() < n && System.nanoTime() < deadline) {
            int k = link.receive(rx);
            for (int j = 0; j < k; j++) {
                int len = rx.lengths[j];
                byte[] bytes = new byte[Math.max(len, 0)];
                rx.buffers[j].get(0, bytes);
                got.add(new Packet(bytes, len, rx.sources[j], rx.ecn[j]));
            }
        }
        return got;
    }

    private static void assertSegment(byte[] sent, int size, int index, Packet p) {
        int from = index * size, len = Math.min(size, sent.length - from);
        assertEquals(len, p.length(), "segment " + index + "'s length");
        for (int i = 0; i < len; i++) assertEquals(sent[from + i], p.bytes()[i], "segment " + index + " byte " + i);
    }

    @Test
    void gsoFromAPlainPeerIsSplitWithTheMessagesEcnAndItsShortLastSegment() throws Throwable {
        try (LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.81");
                PlainSender p = new PlainSender("127.0.0.82")) {
            assertTrue(b.receivesCoalesced(true), "this kernel takes UDP_GRO");
            InetSocketAddress toB = new InetSocketAddress("127.0.0.81", LinuxUdpLinkTest.port(b));
            p.segment(1000);
            p.tos(Ecn.CE); // a switch marked the whole segmented send: every packet of it says so
            byte[] marked = run(1, 1000, 5, 1000);
            p.send(marked, toB);
            p.tos(Ecn.ECT_0);
            byte[] plain = run(2, 1000, 4, 500);
            p.send(plain, toB);
            RxBatch rx = new RxBatch();
            List<Packet> got = receive(b, rx, 9);
            assertEquals(9, got.size(), "five and four packets");
            for (int i = 0; i < 5; i++) {
                assertSegment(marked, 1000, i, got.get(i));
                assertEquals(Ecn.CE, got.get(i).ecn(), "packet " + i + " of the CE-marked send");
                assertEquals(p.address, got.get(i).from());
            }
            for (int i = 0; i < 4; i++) {
                assertSegment(plain, 1000, i, got.get(5 + i));
                assertEquals(Ecn.ECT_0, got.get(5 + i).ecn(), "packet " + i + " of the ECT(0) send");
            }
            assertEquals(500, got.get(8).length(), "the shorter last segment");
            assertTrue(LinuxUdpLink.coalesced(rx) >= 2, "each send came as one coalesced message");
            assertEquals(0, b.receive(rx));
            assertTrue(rx.drained);
        }
    }

    /**
     * Datagrams that were not coalesced (no UDP_GRO control message: one packet per message, a ping-pong's case) between
     * empty receives, then a burst from two senders with their own ECN fields, then empty receives and single ones again:
     * every packet keeps its own bytes, length, sender and ECN field, and segmented sends that follow into the same
     * message headers are split whole, whether the socket takes coalesced datagrams or not (a receive resets only the
     * headers the one before it filled: an empty poll rewrites one; a header left with the last datagram's shorter
     * control length would cut the next one's segment size: a counted drop).
     */
    @Test
    void singleDatagramsBetweenEmptyReceivesKeepTheirSenderAndEcn() throws Throwable {
        for (boolean gro : new boolean[] {true, false}) {
            try (LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.181");
                    PlainSender p = new PlainSender("127.0.0.182");
                    PlainSender q = new PlainSender("127.0.0.183")) {
                assertEquals(gro, b.receivesCoalesced(gro), "UDP_GRO " + gro);
                InetSocketAddress toB = new InetSocketAddress("127.0.0.181", LinuxUdpLinkTest.port(b));
                p.tos(Ecn.ECT_0);
                q.tos(Ecn.CE);
                RxBatch rx = new RxBatch();
                for (int round = 0; round < 3; round++) {
                    byte[] alone = run(round, 64, 1, 64);
                    p.send(alone, toB);
                    List<Packet> one = receive(b, rx, 1);
                    assertEquals(1, one.size(), "round " + round + ": one datagram, one packet");
                    assertSegment(alone, 64, 0, one.get(0));
                    assertEquals(p.address, one.get(0).from());
                    assertEquals(Ecn.ECT_0, one.get(0).ecn());
                    for (int empty = 0; empty < 3; empty++) assertEquals(0, b.receive(rx), "nothing waits");
                    assertTrue(rx.drained);
                }
                int burst = GroBatch.MESSAGES + 3; // more than one GRO recvmmsg takes
                for (int i = 0; i < burst; i++) (i % 2 == 0 ? p : q).send(run(10 + i, 100 + i, 1, 100 + i), toB);
                List<Packet> got = receive(b, rx, burst);
                assertEquals(burst, got.size());
                int fromP = 0, fromQ = 0;
                for (Packet k : got) { // the two flows' packets keep their order, each in itself
                    boolean isP = k.from().equals(p.address);
                    int i = isP ? 2 * fromP++ : 2 * fromQ++ + 1;
                    assertEquals(isP ? p.address : q.address, k.from());
                    assertSegment(run(10 + i, 100 + i, 1, 100 + i), 100 + i, 0, k);
                    assertEquals(isP ? Ecn.ECT_0 : Ecn.CE, k.ecn(), "packet " + i + "'s ECN field");
                }
                assertEquals(0, b.receive(rx));
                p.segment(500); // segmented sends into the headers single datagrams filled (coalesced with GRO)
                byte[][] runs = {run(20, 500, 4, 500), run(21, 500, 4, 500), run(22, 500, 3, 200)};
                for (byte[] r : runs) p.send(r, toB);
                p.segment(0);
                got = receive(b, rx, 11);
                assertEquals(11, got.size(), "4, 4 and 3 packets");
                for (int i = 0; i < 11; i++) assertSegment(runs[i / 4], 500, i % 4, got.get(i));
                assertEquals(0, b.receive(rx));
                byte[] last = run(99, 64, 1, 64);
                q.send(last, toB);
                List<Packet> one = receive(b, rx, 1);
                assertSegment(last, 64, 0, one.get(0));
                assertEquals(q.address, one.get(0).from());
                assertEquals(Ecn.CE, one.get(0).ecn());
                if (!gro) assertEquals(0, LinuxUdpLink.coalesced(rx), "nothing was coalesced");
            }
        }
    }

    /**
     * A datagram that came alone makes the next {@code recvmmsg} ask for one message (the kernel then does not try the
     * socket a second time after it) and is taken as the socket's last; a second datagram right behind it (a burst)
     * brings the batches back, and nothing of the burst is lost or reordered.
     */
    @Test
    void aLoneDatagramsNextReceiveAsksForOneMessageAndABurstForMany() throws Throwable {
        try (LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.184");
                PlainSender p = new PlainSender("127.0.0.185")) {
            assertTrue(b.receivesCoalesced(true), "this kernel takes UDP_GRO");
            InetSocketAddress toB = new InetSocketAddress("127.0.0.184", LinuxUdpLinkTest.port(b));
            RxBatch rx = new RxBatch();
            GroBatch g = GroReceiver.of(rx);
            assertEquals(GroBatch.MESSAGES, g.messagesToAsk(), "a new batch asks for many");
            for (int round = 0; round < 3; round++) {
                byte[] alone = run(round, 64, 1, 64);
                p.send(alone, toB);
                assertSegment(alone, 64, 0, receive(b, rx, 1).getFirst());
                assertTrue(rx.drained, "round " + round + ": a lone datagram is taken as the socket's last");
                assertEquals(1, g.messagesToAsk(), "round " + round + ": the next receive asks for one");
                assertEquals(0, b.receive(rx), "nothing waits");
                assertEquals(1, g.messagesToAsk());
            }
            int burst = 2 * GroBatch.MESSAGES + 1;
            for (int i = 0; i < burst; i++) p.send(run(10 + i, 100 + i, 1, 100 + i), toB);
            assertEquals(1, b.receive(rx), "the burst's first, asked for alone");
            assertTrue(rx.drained);
            assertEquals(1, b.receive(rx), "its second, right behind it: a burst");
            assertFalse(rx.drained, "a burst: the caller goes on at once");
            assertEquals(GroBatch.MESSAGES, g.messagesToAsk(), "a burst: many per call again");
            List<Packet> rest = receive(b, rx, burst - 2);
            assertEquals(burst - 2, rest.size());
            for (int i = 2; i < burst; i++)
                assertSegment(run(10 + i, 100 + i, 1, 100 + i), 100 + i, 0, rest.get(i - 2));
            assertEquals(0, b.receive(rx));
        }
    }

    @Test
    void segmentsLongerThanASlotAreMarkedDropsAndTheRestArrives() throws Throwable {
        try (LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.83");
                PlainSender p = new PlainSender("127.0.0.84")) {
            assertTrue(b.receivesCoalesced(true), "this kernel takes UDP_GRO");
            InetSocketAddress toB = new InetSocketAddress("127.0.0.83", LinuxUdpLinkTest.port(b));
            int size = RxBatch.SLOT + 208;
            p.segment(size);
            byte[] tooLong = run(3, size, 3, 100); // two segments over a slot, then 100 bytes
            p.send(tooLong, toB);
            p.segment(0);
            byte[] alone = run(4, 300, 1, 300);
            p.send(alone, toB);
            List<Packet> got = receive(b, new RxBatch(), 4);
            assertEquals(4, got.size());
            assertEquals(RxBatch.TRUNCATED, got.get(0).length(), "a segment longer than a slot: marked, not cut");
            assertEquals(RxBatch.TRUNCATED, got.get(1).length());
            assertSegment(tooLong, size, 2, got.get(2));
            assertSegment(alone, 300, 0, got.get(3));
        }
    }

    @Test
    void twoSendersPacketsNeverMix() throws Throwable {
        try (LinuxUdpLink a = LinuxUdpLinkTest.open("127.0.0.85");
                LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.86");
                PlainSender p = new PlainSender("127.0.0.87")) {
            assertTrue(b.receivesCoalesced(true), "this kernel takes UDP_GRO");
            InetSocketAddress toB = new InetSocketAddress("127.0.0.86", LinuxUdpLinkTest.port(b));
            InetSocketAddress fromA = new InetSocketAddress("127.0.0.85", LinuxUdpLinkTest.port(a));
            a.segments(true);
            p.segment(700);
            byte[] plain = run(5, 700, 10, 700);
            TxBatch batch = new TxBatch();
            for (int i = 0; i < TxBatch.CAPACITY; i++) {
                for (int k = 0; k < 900; k++) batch.slot(i).put(k, (byte) (i * 3 + k + 1));
                batch.lengths[i] = 900;
            }
            p.send(plain, toB);
            int sent = 0;
            while (sent < TxBatch.CAPACITY) sent += a.send(batch, sent, TxBatch.CAPACITY - sent, toB);
            p.send(plain, toB);
            List<Packet> got = receive(b, new RxBatch(), 20 + TxBatch.CAPACITY);
            assertEquals(20 + TxBatch.CAPACITY, got.size());
            int fromPlain = 0, fromLink = 0;
            for (Packet q : got) {
                if (q.from().equals(p.address)) {
                    assertSegment(plain, 700, fromPlain++ % 10, q);
                } else {
                    assertEquals(fromA, q.from(), "one of the two senders");
                    assertEquals(900, q.length());
                    for (int k = 0; k < 900; k++)
                        assertEquals((byte) (fromLink * 3 + k + 1), q.bytes()[k], "A's packet " + fromLink);
                    fromLink++;
                }
            }
            assertEquals(20, fromPlain);
            assertEquals(TxBatch.CAPACITY, fromLink);
        }
    }

    /**
     * One {@code recvmmsg} brings two coalesced messages of 32 packets each, more than a burst's 32 slots: the 32 left
     * go out first into the next burst of another batch (a thread that took over, or the receive thread after a
     * poller's budget), in order, before anything newer; then into a single-datagram receive. While they wait, the
     * link's wait does not sleep (the socket is empty: it would sleep until the peer resent them).
     */
    @Test
    void whatABurstLeavesGoesOutFirstIntoTheNextBatch() throws Throwable {
        try (LinuxUdpLink a = LinuxUdpLinkTest.open("127.0.0.88");
                LinuxUdpLink b = LinuxUdpLinkTest.open("127.0.0.89")) {
            assertTrue(b.receivesCoalesced(true), "this kernel takes UDP_GRO");
            InetSocketAddress toB = new InetSocketAddress("127.0.0.89", LinuxUdpLinkTest.port(b));
            a.segments(true);
            int n = TxBatch.CAPACITY;
            for (int round = 0; round < 3; round++) {
                TxBatch batch = new TxBatch();
                for (int i = 0; i < n; i++) {
                    for (int k = 0; k < 1100; k++) batch.slot(i).put(k, (byte) (round * n + i + k));
                    batch.lengths[i] = 1100;
                }
                int sent = 0;
                while (sent < n) sent += a.send(batch, sent, n - sent, toB);
            }
            RxBatch first = new RxBatch(), second = new RxBatch();
            assertEquals(RxBatch.CAPACITY, b.receive(first), "the first burst: 32 of the 96 packets");
            assertFalse(first.drained);
            b.await(); // returns at once: the socket is empty, but 64 packets wait in the first batch's landing areas
            b.await(1_000_000_000L);
            int k = b.receive(second);
            assertEquals(RxBatch.CAPACITY, k, "the next batch gets what the first left");
            for (int j = 0; j < k; j++)
                assertEquals((byte) (n + j), second.buffers[j].get(0), "packet " + (n + j) + " in order");
            ByteBuffer one = ByteBuffer.allocateDirect(2000);
            for (int j = 0; j < n; j++) {
                one.clear();
                InetSocketAddress from = null;
                for (long end = System.nanoTime() + DEADLINE_NANOS; from == null && System.nanoTime() < end; )
                    from = b.receive(one);
                assertNotNull(from, "packet " + (2 * n + j));
                assertEquals(1100, one.position(), "one packet per single receive");
                assertEquals((byte) (2 * n + j), one.get(0), "packet " + (2 * n + j) + " in order");
            }
            assertEquals(0, b.receive(first));
            assertNull(b.receive(one.clear()));
        }
    }
}
