package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QueuePair;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * Software devices on a network the test is: their transports are detached (no socket, no thread), the network
 * carries every packet itself to the receiving device's checks ({@link PacketDispatch}, as a receive burst does) and
 * loses, holds back (so later ones overtake it), duplicates or corrupts each with the probabilities of its
 * {@link Faults}, drawn from one seeded {@link Random}; a test may also pick the packets lost ({@link #drop}) or
 * marked CE by a congested switch ({@link #markCe}), and keep every packet sent ({@link #log}). The devices' clock is a
 * {@link ManualClock} that moves only when no packet is in flight and nothing else can go on ({@link #step}), so a
 * retransmission timeout always means that packets were really lost, never that a thread was descheduled. A seed gives
 * the same run on a loaded machine as on an idle one. As an {@link RcPair.Backend} it is the kit's deterministic
 * backend.
 */
public final class DeterministicNetwork implements RcPair.Backend {
    static final Inet4Address A = SoftDevices.ip("127.0.0.1"), B = SoftDevices.ip("127.0.0.2");
    static final int PORT = 4791; // nothing is bound: the transports are detached
    /** The clock's step while everything waits for a timer. */
    static final long TICK_NANOS = 1_000_000;

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

    /** A device on the network: its transport and the checks its packets go through. */
    private record Node(Transport transport, PacketDispatch dispatch) {}

    final ManualClock clock = new ManualClock();
    final Random rnd;
    /** The level of faults, for reports. */
    final double p;

    final Faults faults;
    private final Map<IpAddress, Node> byAddress = new LinkedHashMap<>();
    private final boolean oneDevice;
    ArrayDeque<Packet> inFlight = new ArrayDeque<>();
    final ArrayDeque<Packet> heldBack = new ArrayDeque<>();
    /** Packets the test loses on the way (on top of the seeded faults). */
    Predicate<Packet> drop = pk -> false;
    /**
     * How many later packets to the same device overtake a packet (0: none), as the test says: the packet waits until
     * that many have been delivered, or until a round brings none to its device (its sender has stopped).
     */
    ToIntFunction<Packet> lateBy = pk -> 0;
    /** Packets that wait for later ones to overtake them ({@link #lateBy}), oldest first. */
    private final List<Overtaken> overtaken = new ArrayList<>();

    private static final class Overtaken {
        final Packet packet;
        int toWaitFor;
        boolean overtakenThisRound;

        Overtaken(Packet packet, int toWaitFor) {
            this.packet = packet;
            this.toWaitFor = toWaitFor;
        }
    }

    /** Packets a congested switch marks CE on the way. */
    Predicate<Packet> markCe = pk -> false;
    /** Packets of one destination handed to its device in one receive burst (1: each packet is a burst of its own). */
    int burst = 1;
    /**
     * Bursts are handled as a polling application thread's drives (its ACKs to peers that take carried ACKs held one
     * drive longer, {@link ProgressEngine#pollDriveForTest}), not as the receive thread's.
     */
    boolean pollerDrives;
    /** Every packet sent, in order, when {@link #keepLog} (tests that count packets). */
    final List<Packet> log = new ArrayList<>();

    boolean keepLog;

    /** A batch of packets a device sent at once (one system call on a link): its number, and how many packets. */
    record Batch(int number, int packets) {}

    /** The batch each packet sent in one went out in (a packet sent alone has none). */
    final Map<Packet, Batch> batchOf = new IdentityHashMap<>();

    int batches;
    long sent, delivered, dropped, duplicated, reordered, corrupted, overtakenPackets;

    /** Each kind of fault (loss, reordering, duplication) with probability {@code p}, corruption {@code p/10}. */
    DeterministicNetwork(double p, long seed) {
        this(p, Faults.loss(p, seed), false);
    }

    /** {@code p} names the level in reports; the faults (their seed included) are {@code faults}. */
    DeterministicNetwork(double p, Faults faults, boolean oneDevice) {
        this.p = p;
        this.faults = faults;
        this.rnd = new Random(faults.seed());
        this.oneDevice = oneDevice;
    }

    /** A share {@code total} of the packets meets loss, reordering or duplication, a third each; corruption total/30. */
    static DeterministicNetwork sharing(double total, long seed) {
        return new DeterministicNetwork(
                total,
                new Faults(seed, total / 3, total / 3, total / 3, total / 30, 0, Faults.DEFAULT_REORDER_NANOS),
                false);
    }

    /** Two devices on a network that loses, reorders and duplicates nothing by itself, keeping every packet in {@link #log}. */
    static DeterministicNetwork faultless() {
        DeterministicNetwork net = new DeterministicNetwork(0, 1);
        net.keepLog = true;
        return net;
    }

    /**
     * The kit's deterministic backend: one software device on a faultless network (both QPs of a pair on one
     * context, as on a real device). Found by name from {@code dev.jrdma.testkit.Backends}.
     *
     * @return the backend
     */
    public static RcPair.Backend oneDevice() {
        return new DeterministicNetwork(0, Faults.loss(0, 1), true);
    }

    /** The transport of {@code address} on this network, made on first use. */
    Transport transport(Inet4Address address) {
        return node(IpAddress.of(address)).transport;
    }

    private Node node(IpAddress ip) {
        return byAddress.computeIfAbsent(ip, k -> {
            Transport t = Transport.detached(k.inet, PORT, clock, tapOf(k));
            return new Node(t, new PacketDispatch(t.local, PORT, t.qps, t.counters));
        });
    }

    /** A new context of the device at {@code address} on this network. */
    SoftContext context(Inet4Address address) {
        return new SoftContext(new SoftDevice("soft@" + address.getHostAddress(), address, PORT), transport(address));
    }

    /**
     * An RC pair of the two devices (A sends from PSN 100, B from 5000; the kit's defaults: MTU 1024, timeout 14),
     * with room for 256 requests and receives each.
     */
    RcPair pair() {
        return RcPair.on(this)
                .qp(q -> q.maxSendWr(256).maxRecvWr(256))
                .cqe(1024)
                .build();
    }

    /** {@link #pair()} for bulk transfers under loss: MTU 4096, timeout 14 (67 ms), retry count 7. */
    RcPair bulkPair() {
        return RcPair.on(this)
                .qp(q -> q.maxSendWr(256).maxRecvWr(256))
                .cqe(1024)
                .mtu(Mtu.MTU_4096)
                .timeout(14)
                .retryCnt(7)
                .build();
    }

    /** The software QP behind {@code qp} (tests reach into its engines). */
    static SoftQp soft(QueuePair qp) {
        return (SoftQp) qp;
    }

    @Override
    public String name() {
        return "the software device on a deterministic network (seed " + faults.seed() + ")";
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
        for (Node n : byAddress.values()) progress |= n.transport.runTurns(); // READ responses paced a turn at a time
        return progress;
    }

    /** Advances the clock a tick and fires the timers that are due. */
    void tick() {
        advance(TICK_NANOS);
    }

    /** Advances the clock by {@code nanos} and fires the timers that are due. */
    void advance(long nanos) {
        clock.advanceNanos(nanos);
        for (Node n : byAddress.values()) n.transport.timer.runDue();
    }

    /**
     * Delivers what is in flight until nothing is (what the deliveries send is delivered too).
     *
     * @return whether any packet moved
     */
    boolean deliver() {
        boolean moved = false;
        while (!idle()) {
            deliverRound();
            moved = true;
        }
        return moved;
    }

    /**
     * Delivers, and moves the clock by {@code stepNanos} (firing the timers) while nothing is in flight, until
     * {@code done}; fails once {@code limitNanos} of the clock passed.
     */
    void runUntil(BooleanSupplier done, long stepNanos, long limitNanos) {
        long start = clock.nanoTime();
        while (!done.getAsBoolean()) {
            assertTrue(clock.nanoTime() - start < limitNanos, "not done after " + limitNanos + " ns");
            if (deliver()) continue;
            advance(stepNanos);
        }
    }

    long retransmissions() {
        long n = 0;
        for (Node d : byAddress.values()) n += d.transport.counters.get(Counter.RETRANSMITS);
        return n;
    }

    /** The packets in {@link #log} from {@code from} with {@code opcode}. */
    long count(Transport from, int opcode) {
        return log.stream()
                .filter(pk -> pk.from() == from && pk.opcode() == opcode)
                .count();
    }

    private Transport.PacketTap tapOf(IpAddress from) {
        return new Transport.PacketTap() {
            /** The packet sent last and when: the network in flight plays a same-host peer's ring. */
            private Packet last;

            private long lastAt;

            /** The packets of the batch being sent ({@link #batchEnded}). */
            private final List<Packet> batch = new ArrayList<>();

            @Override
            public void batchEnded() {
                Batch of = new Batch(batches++, batch.size());
                if (keepLog) for (Packet pk : batch) batchOf.put(pk, of);
                batch.clear();
            }

            @Override
            public void sent(ByteBuffer b, int len, InetSocketAddress to) {
                byte[] copy = new byte[len];
                b.get(0, copy, 0, len);
                Node dest = byAddress.get(IpAddress.of(to.getAddress()));
                assertNotNull(dest, () -> "a packet to " + to + ", which is not on the network");
                Packet pk = new Packet(copy, dest.transport, byAddress.get(from).transport);
                inFlight.add(pk);
                if (keepLog) log.add(pk);
                batch.add(pk);
                sent++;
                last = pk;
                lastAt = clock.nanoTime();
            }

            /** As a ring's: the packet sent last is still in flight (not delivered, not lost) since {@code nanos}. */
            @Override
            public boolean peerBehind(long now, long nanos) {
                Packet pk = last;
                return pk != null && now - lastAt >= nanos && (inFlight.contains(pk) || heldBack.contains(pk));
            }
        };
    }

    boolean idle() {
        return inFlight.isEmpty() && heldBack.isEmpty() && overtaken.isEmpty();
    }

    /**
     * Delivers every packet in flight (what they send meanwhile waits for the next round), up to {@link #burst}
     * consecutive packets of one destination per receive burst; the packets held back in the round before come after
     * them.
     */
    void deliverRound() {
        ArrayDeque<Packet> round = inFlight;
        inFlight = new ArrayDeque<>();
        round.addAll(heldBack);
        heldBack.clear();
        List<Packet> burstOf = new ArrayList<>();
        for (Packet pk : round) {
            if (!burstOf.isEmpty() && (burstOf.getFirst().to() != pk.to() || burstOf.size() >= burst)) {
                receiveBurst(burstOf);
                burstOf.clear();
            }
            if (drop.test(pk)) {
                dropped++;
                continue;
            }
            int late = lateBy.applyAsInt(pk);
            if (late > 0) {
                overtakenPackets++;
                overtaken.add(new Overtaken(pk, late));
                continue;
            }
            double r = rnd.nextDouble();
            if (r < faults.drop()) {
                dropped++;
                continue;
            }
            if (r < faults.drop() + faults.corrupt()) {
                corrupted++; // one bit flipped: the receiver's ICRC check drops it
                continue;
            }
            r = rnd.nextDouble();
            if (r < faults.reorder()) {
                reordered++;
                heldBack.add(pk);
                continue;
            }
            if (r < faults.reorder() + faults.duplicate()) {
                duplicated++;
                heldBack.add(pk); // the copy arrives later
            }
            burstOf.add(pk);
            releaseOvertaken(pk.to(), burstOf);
        }
        // what waits for packets that will not come this round (its sender stopped) arrives now
        for (var it = overtaken.iterator(); it.hasNext(); ) {
            Overtaken o = it.next();
            if (!o.overtakenThisRound) {
                if (!burstOf.isEmpty() && burstOf.getFirst().to() != o.packet.to()) {
                    receiveBurst(burstOf);
                    burstOf.clear();
                }
                burstOf.add(o.packet);
                it.remove();
            }
            o.overtakenThisRound = false;
        }
        if (!burstOf.isEmpty()) receiveBurst(burstOf);
    }

    /** A packet to {@code to} goes in {@code burstOf}: the packets it was the last to overtake follow it. */
    private void releaseOvertaken(Transport to, List<Packet> burstOf) {
        for (var it = overtaken.iterator(); it.hasNext(); ) {
            Overtaken o = it.next();
            if (o.packet.to() != to) continue;
            o.overtakenThisRound = true;
            if (--o.toWaitFor == 0) {
                burstOf.add(o.packet);
                it.remove();
            }
        }
    }

    /** Hands {@code packets} (all to one device) to its receive checks in one drive, as a receive burst. */
    private void receiveBurst(List<Packet> packets) {
        Transport to = packets.getFirst().to();
        List<Packet> copy = List.copyOf(packets);
        Runnable burst = () -> {
            for (Packet pk : copy) handleInDrive(pk);
        };
        if (pollerDrives) to.pollDriveForTest(burst);
        else to.driveForTest(burst);
    }

    /**
     * Hands {@code pk} to its device's receive checks, inside a drive of the caller's ({@link Transport#driveForTest}):
     * CE-marked if {@link #markCe} says so.
     */
    void handleInDrive(Packet pk) {
        Node n = byAddress.get(pk.to().local);
        Receiver r = n.transport.progress().threadReceiver();
        r.ecn = markCe.test(pk) ? Ecn.CE : Ecn.ECT_0;
        // a copy of its own: a duplicate must not see what the first copy's handling did
        ByteBuffer buf = ByteBuffer.allocateDirect(pk.bytes.length);
        buf.put(0, pk.bytes);
        delivered++;
        n.dispatch.handle(
                r,
                new InetSocketAddress(pk.from().local.inet, PORT),
                buf,
                MemorySegment.ofBuffer(buf),
                pk.bytes.length,
                false);
    }
}
