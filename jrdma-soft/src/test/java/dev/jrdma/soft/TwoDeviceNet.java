package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.RcWalk;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Two software devices on detached transports (no socket, no thread) with one RC QP pair, and the test as the network
 * between them: every packet sent waits in {@link #inFlight} until {@link #deliver} hands it to the other device's
 * receive checks ({@link PacketDispatch}, as a receive burst does), unless {@link #drop} says it is lost; a packet
 * {@link #markCe} picks arrives with the IP header's ECN field at CE. Time is a {@link ManualClock} the test moves.
 * Every packet sent stays in {@link #log}, for the test to count.
 */
final class TwoDeviceNet implements AutoCloseable {
    static final Inet4Address A = SoftDevices.ip("127.0.0.1"), B = SoftDevices.ip("127.0.0.2");
    static final int PORT = 4791; // nothing is bound: the transports are detached

    /** A packet on the network: its bytes, the device it goes to, the device it came from. */
    record Packet(byte[] bytes, Transport to, Transport from) {
        int opcode() {
            return Bth.opcode(ByteBuffer.wrap(bytes), 0);
        }

        int psn() {
            return Bth.psn(ByteBuffer.wrap(bytes), 0);
        }

        boolean ackReq() {
            return Bth.ackReq(ByteBuffer.wrap(bytes), 0);
        }
    }

    final ManualClock clock = new ManualClock();
    final Transport ta, tb;
    final RcPair.Side a, b;
    final List<Packet> log = new ArrayList<>();
    final ArrayDeque<Packet> inFlight = new ArrayDeque<>();
    /** Packets lost on the way (the test decides). */
    Predicate<Packet> drop = p -> false;
    /** Packets a congested switch marks CE on the way. */
    Predicate<Packet> markCe = p -> false;
    /** Packets handed to a device in one receive burst (1: each packet is a burst of its own). */
    int burst = 1;

    long dropped;

    private final Receiver receiverA, receiverB;
    private final PacketDispatch dispatchA, dispatchB;

    /** The two devices, their QPs walked to RTS (A sends from PSN 100, B from 5000) with the walk's defaults. */
    TwoDeviceNet() {
        ta = Transport.detached(A, PORT, clock, tap(B));
        tb = Transport.detached(B, PORT, clock, tap(A));
        a = side(ta, A);
        b = side(tb, B);
        receiverA = new Receiver(1, new OwedAcks(ta.counters, ta.key));
        receiverB = new Receiver(1, new OwedAcks(tb.counters, tb.key));
        dispatchA = new PacketDispatch(ta.local, PORT, ta.qps, ta.counters);
        dispatchB = new PacketDispatch(tb.local, PORT, tb.qps, tb.counters);
        walk(a, b, 100, 5000);
        walk(b, a, 5000, 100);
    }

    private static RcPair.Side side(Transport t, Inet4Address address) {
        return RcPair.Side.open(
                new SoftContext(new SoftDevice("soft@" + address.getHostAddress(), address, PORT), t),
                qp -> qp.maxSendWr(256).maxRecvWr(256),
                1024);
    }

    private static void walk(RcPair.Side me, RcPair.Side peer, int myPsn, int peerPsn) {
        new RcWalk()
                .ah(new AhAttr().global(((SoftContext) peer.ctx).device().gid(), me.ctx.defaultGidIndex(1)))
                .to(peer.qp.qpNum(), peerPsn)
                .sqPsn(myPsn)
                .minRnrTimer(1)
                .walk(me.qp);
    }

    private Transport.PacketTap tap(Inet4Address expected) {
        return (buf, len, to) -> {
            assertEquals(expected, to.getAddress(), "packets go to the peer");
            byte[] copy = new byte[len];
            buf.get(0, copy, 0, len);
            Transport dest = to.getAddress().equals(A) ? ta : tb;
            Packet p = new Packet(copy, dest, dest == ta ? tb : ta);
            log.add(p);
            inFlight.add(p);
        };
    }

    SoftQp qpA() {
        return (SoftQp) a.qp;
    }

    SoftQp qpB() {
        return (SoftQp) b.qp;
    }

    /**
     * Delivers what is in flight, {@link #burst} packets of one destination per receive burst, until nothing is
     * (what the deliveries send is delivered too).
     *
     * @return whether any packet moved
     */
    boolean deliver() {
        boolean moved = false;
        while (!inFlight.isEmpty()) {
            moved = true;
            Transport to = inFlight.peek().to();
            List<Packet> round = new ArrayList<>();
            while (!inFlight.isEmpty() && inFlight.peek().to() == to && round.size() < burst)
                round.add(inFlight.poll());
            to.driveForTest(() -> {
                for (Packet p : round) handleInDrive(p);
            });
        }
        return moved;
    }

    /**
     * Hands {@code p} to its device's receive checks, inside a drive of the caller's ({@link Transport#driveForTest}),
     * unless {@link #drop} loses it.
     */
    void handleInDrive(Packet p) {
        if (drop.test(p)) {
            dropped++;
            return;
        }
        Transport to = p.to();
        Receiver r = to == ta ? receiverA : receiverB;
        r.ecn = markCe.test(p) ? Ecn.CE : Ecn.ECT_0;
        ByteBuffer buf = ByteBuffer.allocateDirect(p.bytes.length);
        buf.put(0, p.bytes);
        (to == ta ? dispatchA : dispatchB)
                .handle(
                        r,
                        new InetSocketAddress(p.from().local.inet, PORT),
                        buf,
                        MemorySegment.ofBuffer(buf),
                        p.bytes.length,
                        false);
    }

    /** Delivers, and moves the clock by {@code stepNanos} (firing the timers) while nothing is in flight, until {@code done} or {@code limitNanos}. */
    void runUntil(java.util.function.BooleanSupplier done, long stepNanos, long limitNanos) {
        long start = clock.nanoTime();
        while (!done.getAsBoolean()) {
            assertTrue(clock.nanoTime() - start < limitNanos, "nothing moved for " + limitNanos + " ns");
            if (deliver()) continue;
            clock.advanceNanos(stepNanos);
            ta.timer.runDue();
            tb.timer.runDue();
        }
    }

    /** The packets in {@link #log} from {@code from} with {@code opcode}. */
    long count(Transport from, int opcode) {
        return log.stream()
                .filter(p -> p.from() == from && p.opcode() == opcode)
                .count();
    }

    @Override
    public void close() {
        a.close();
        b.close();
    }
}
