package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Context;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * Software devices on a network the test is: their transports are detached (no socket, no thread), the network
 * carries every packet itself and loses, holds back (so later ones overtake it), duplicates or corrupts each with
 * probabilities drawn from one seeded {@link Random}, and the devices' clock is a {@link ManualClock} that moves only
 * when no packet is in flight and nothing else can go on ({@link #step}), so a retransmission timeout always means
 * that packets were really lost, never that a thread was descheduled. A seed gives the same run on a loaded machine as
 * on an idle one. As an {@link RcPair.Backend} it is the kit's deterministic backend.
 */
public final class DeterministicNetwork implements RcPair.Backend {
    static final Inet4Address A = SoftDevices.ip("127.0.0.1"), B = SoftDevices.ip("127.0.0.2");
    static final int PORT = 4791; // nothing is bound: the transports are detached
    /** The clock's step while everything waits for a timer. */
    static final long TICK_NANOS = 1_000_000;

    /** A packet on the network. */
    record Packet(byte[] bytes, Transport to, IpAddress from) {}

    final ManualClock clock = new ManualClock();
    final Random rnd;
    final double p, loss, corruption, reordering, duplication;
    final long seed;
    final Map<IpAddress, Transport> byAddress = new LinkedHashMap<>();
    private final boolean oneDevice;
    ArrayDeque<Packet> inFlight = new ArrayDeque<>();
    final ArrayDeque<Packet> heldBack = new ArrayDeque<>();
    long sent, delivered, dropped, duplicated, reordered, corrupted;

    /** Each kind of fault (loss, reordering, duplication) with probability {@code p}, corruption {@code p/10}. */
    DeterministicNetwork(double p, long seed) {
        this(p, p, p / 10, p, p, seed, false);
    }

    /** {@code p} names the level in reports; each kind of fault with its own probability. */
    DeterministicNetwork(
            double p,
            double loss,
            double corruption,
            double reordering,
            double duplication,
            long seed,
            boolean oneDevice) {
        this.p = p;
        this.loss = loss;
        this.corruption = corruption;
        this.reordering = reordering;
        this.duplication = duplication;
        this.seed = seed;
        this.rnd = new Random(seed);
        this.oneDevice = oneDevice;
    }

    /** A share {@code total} of the packets meets loss, reordering or duplication, a third each; corruption total/30. */
    static DeterministicNetwork sharing(double total, long seed) {
        return new DeterministicNetwork(total, total / 3, total / 30, total / 3, total / 3, seed, false);
    }

    /**
     * The kit's deterministic backend: one software device on a faultless network (both QPs of a pair on one
     * context, as on a real device). Found by name from {@code dev.jrdma.testkit.Backends}.
     *
     * @return the backend
     */
    public static RcPair.Backend oneDevice() {
        return new DeterministicNetwork(0, 0, 0, 0, 0, 1, true);
    }

    /**
     * Two software devices (127.0.0.1 and 127.0.0.2) on a network with these faults.
     *
     * @param loss share of packets lost
     * @param reordering share held back one round
     * @param duplication share delivered twice
     * @param seed the faults' seed
     * @return the network
     */
    static DeterministicNetwork twoDevices(double loss, double reordering, double duplication, long seed) {
        return new DeterministicNetwork(loss, loss, 0, reordering, duplication, seed, false);
    }

    /** The transport of {@code address} on this network, made on first use. */
    Transport transport(Inet4Address address) {
        IpAddress ip = IpAddress.of(address);
        return byAddress.computeIfAbsent(ip, k -> Transport.detached(address, PORT, clock, tapOf(ip)));
    }

    /** A new context of the device at {@code address} on this network. */
    SoftContext context(Inet4Address address) {
        return new SoftContext(new SoftDevice("soft@" + address.getHostAddress(), address, PORT), transport(address));
    }

    @Override
    public String name() {
        return "the software device on a deterministic network (seed " + seed + ")";
    }

    @Override
    public Context[] open() {
        if (oneDevice) {
            Context c = context(A);
            return new Context[] {c, c};
        }
        return new Context[] {context(A), context(B)};
    }

    @Override
    public long nanoTime() {
        return clock.nanoTime();
    }

    /** Delivers a round of packets and READ-response turns; when nothing moves, advances the clock a tick. */
    @Override
    public void step(int waited) {
        if (!moveOn()) tick();
    }

    /** Delivers what is in flight and serves READ-response turns; returns whether anything moved. */
    boolean moveOn() {
        boolean progress = false;
        if (!idle()) {
            deliverRound();
            progress = true;
        }
        for (Transport t : byAddress.values()) progress |= t.runTurns(); // READ responses paced a turn at a time
        return progress;
    }

    /** Advances the clock a tick and fires the timers that are due. */
    void tick() {
        clock.advanceNanos(TICK_NANOS);
        for (Transport t : byAddress.values()) t.timer.runDue();
    }

    long retransmissions() {
        long n = 0;
        for (Transport t : byAddress.values()) n += t.counters.get(Counter.RETRANSMITS);
        return n;
    }

    Transport.PacketTap tapOf(IpAddress from) {
        return (b, len, to) -> {
            byte[] copy = new byte[len];
            b.get(0, copy, 0, len);
            Transport dest = byAddress.get(IpAddress.of(to.getAddress()));
            assertNotNull(dest, () -> "a packet to " + to + ", which is not on the network");
            inFlight.add(new Packet(copy, dest, from));
            sent++;
        };
    }

    boolean idle() {
        return inFlight.isEmpty() && heldBack.isEmpty();
    }

    /**
     * Delivers every packet in flight (what they send meanwhile waits for the next round); the packets held back in
     * the round before come after them.
     */
    void deliverRound() {
        ArrayDeque<Packet> round = inFlight;
        inFlight = new ArrayDeque<>();
        round.addAll(heldBack);
        heldBack.clear();
        for (Packet pk : round) {
            double r = rnd.nextDouble();
            if (r < loss) {
                dropped++;
                continue;
            }
            if (r < loss + corruption) {
                corrupted++; // one bit flipped: the receiver's ICRC check drops it
                continue;
            }
            r = rnd.nextDouble();
            if (r < reordering) {
                reordered++;
                heldBack.add(pk);
                continue;
            }
            if (r < reordering + duplication) {
                duplicated++;
                heldBack.add(pk); // the copy arrives later
            }
            deliver(pk);
        }
    }

    private void deliver(Packet pk) {
        ByteBuffer buf =
                ByteBuffer.wrap(pk.bytes.clone()); // a duplicate must not see what the first copy's handling did
        RocePacket rp = new RocePacket();
        assertEquals(RocePacket.OK, rp.wrap(buf, 0, pk.bytes.length), "the devices send well-formed packets");
        SoftQp qp = pk.to.qps.get(rp.destQp());
        delivered++;
        if (qp == null) { // gone (closed) or never there: the device drops it as it would from a socket
            pk.to.counters.add(Counter.RX_UNKNOWN_QP);
            return;
        }
        pk.to.driveForTest(() -> qp.receive(rp, MemorySegment.ofBuffer(buf), pk.from, PORT));
    }
}
