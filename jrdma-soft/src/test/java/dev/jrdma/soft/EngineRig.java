package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Aeth;
import dev.jrdma.soft.wire.AtomicAckEth;
import dev.jrdma.soft.wire.AtomicEth;
import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.ImmDt;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.Reth;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.WorkCompletion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * One QP of a software device with no socket and no threads, connected to an imaginary peer: the test plays the
 * peer, feeding packets built with the wire codecs into {@link SoftQp#receive} and reading the packets the QP sends
 * from {@link #sent}. Time is a {@link ManualClock}; {@link #tick} fires the deadlines that have passed.
 */
final class EngineRig implements AutoCloseable {
    static final Inet4Address LOCAL = SoftDevices.ip("127.0.0.1"), PEER = SoftDevices.ip("127.0.0.2");
    static final int PORT = 4791; // nothing is bound: the transport is detached
    static final int PEER_QPN = 0x77;
    /** The PSN the peer's requests start at, and the PSN this QP's requests start at. */
    static final int PEER_PSN = 5000, MY_PSN = 100;

    final ManualClock clock = new ManualClock();
    final List<ByteBuffer> sent = new ArrayList<>();
    final Transport transport;
    final SoftContext ctx;
    final SoftPd pd;
    final SoftCq cq;
    final SoftQp qp;
    final Arena arena = Arena.ofShared();
    private final RocePacket parsed = new RocePacket();

    /** Tunables of the connection. */
    static final class Opts {
        Mtu mtu = Mtu.MTU_1024;
        int timeout = 14, retryCnt = 7, rnrRetry = 7, minRnrTimer = 1, maxRdAtomic = 4, maxDestRdAtomic = 4;
        EnumSet<Access> access = EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        /** The authenticated mode's key ({@code QpAttr.packetAuthKey}), or null for plain RoCEv2. */
        byte[] authKey;
    }

    /** The peer's side of the authenticated mode (the same key), or null: what signs {@link #feedWire} packets and checks {@link #drain}ed ones. */
    final PacketAuth peerAuth;
    /** The device's receive checks ({@link #feedWire}): ICRC, then the MAC of a QP with a key, then headers. */
    private final PacketDispatch dispatch;

    private final Receiver receiver;

    EngineRig() {
        this(new Opts());
    }

    EngineRig(Opts o) {
        this(o, null);
    }

    /**
     * A rig whose device also receives from {@code inbound}: packets put there ({@link InboundLink#arrive}) wait, as
     * in a socket, until a driving thread takes them (the timer does before it times a request out).
     */
    EngineRig(Opts o, InboundLink inbound) {
        transport = Transport.detached(
                LOCAL,
                PORT,
                clock,
                (b, len, to) -> {
                    assertEquals(PEER, to.getAddress(), "packets go to the peer's address");
                    ByteBuffer copy = ByteBuffer.allocate(len);
                    copy.put(0, b, 0, len);
                    sent.add(copy);
                },
                inbound);
        ctx = new SoftContext(new SoftDevice("soft@test", LOCAL, PORT), transport);
        pd = (SoftPd) ctx.allocPd();
        cq = (SoftCq) ctx.createCq(256, null);
        qp = (SoftQp) pd.createQueuePair(QpInitAttr.builder(cq)
                .maxSendWr(64)
                .maxRecvWr(64)
                .maxSendSge(4)
                .maxRecvSge(4)
                .build());
        new RcWalk()
                .access(o.access)
                .ah(new AhAttr().global(Gid.fromInetAddress(PEER), 0))
                .pathMtu(o.mtu)
                .to(PEER_QPN, PEER_PSN)
                .maxDestRdAtomic(o.maxDestRdAtomic)
                .minRnrTimer(o.minRnrTimer)
                .packetAuthKey(o.authKey)
                .timeout(o.timeout)
                .retryCnt(o.retryCnt)
                .rnrRetry(o.rnrRetry)
                .sqPsn(MY_PSN)
                .maxRdAtomic(o.maxRdAtomic)
                .walk(qp);
        peerAuth = o.authKey == null ? null : new PacketAuth(o.authKey);
        dispatch = new PacketDispatch(IpAddress.of(LOCAL), PORT, transport.qps, transport.counters);
        receiver = new Receiver(1, new OwedAcks(transport.counters, transport.key));
    }

    MemoryRegion mr(long size, Access... access) {
        return pd.registerMemory(
                arena.allocate(size, 8),
                access.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.of(access[0], access));
    }

    /**
     * A region over a sparse file mapping: registering it touches no page, so tests can post messages of max_msg_sz
     * without allocating (or zeroing) a gigabyte; only the bytes actually sent are read.
     */
    MemoryRegion sparseMr(long size) {
        try {
            java.nio.file.Path f = java.nio.file.Files.createTempFile("jrdma-sparse", ".bin");
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(
                    f,
                    java.nio.file.StandardOpenOption.READ,
                    java.nio.file.StandardOpenOption.WRITE,
                    java.nio.file.StandardOpenOption.DELETE_ON_CLOSE)) {
                MemorySegment seg = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, size, arena);
                return pd.registerMemory(seg, EnumSet.of(Access.LOCAL_WRITE));
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Registers {@code size} bytes with every right, MW_BIND included (as the kit's {@code RcPair.Side.mrBindable}). */
    MemoryRegion mrBindable(long size) {
        return mr(
                size,
                Access.LOCAL_WRITE,
                Access.REMOTE_WRITE,
                Access.REMOTE_READ,
                Access.REMOTE_ATOMIC,
                Access.MW_BIND);
    }

    // ---- the peer's packets -------------------------------------------------------------------------------

    /** A packet under construction: BTH written, extension headers and payload to follow. */
    static final class Pkt {
        final ByteBuffer buf = ByteBuffer.allocate(8192);
        final int opcode;
        int len;

        Pkt(int opcode, int psn, boolean ackReq, int payloadLen) {
            this.opcode = opcode;
            len = RocePacket.writeBth(buf, 0, opcode, false, Bth.DEFAULT_PKEY, 0, ackReq, psn, payloadLen);
        }

        Pkt reth(long va, int rkey, long length) {
            Reth.write(buf, Bth.BYTES, va, rkey, length);
            return this;
        }

        Pkt atomic(long va, int rkey, long swapOrAdd, long compare) {
            AtomicEth.write(buf, Bth.BYTES, va, rkey, swapOrAdd, compare);
            return this;
        }

        Pkt aeth(int syndrome, int msn) {
            Aeth.write(buf, Bth.BYTES, syndrome, msn);
            return this;
        }

        Pkt atomicAck(long orig) {
            AtomicAckEth.write(buf, Bth.BYTES + Aeth.BYTES, orig);
            return this;
        }

        Pkt imm(int imm) {
            ImmDt.write(buf, Opcode.immOffset(opcode), imm);
            return this;
        }

        /** Sets jrdma's offer to take carried ACKs ({@link Bth#takesAcks}): the peer is a jrdma QP that takes them. */
        Pkt takesAcks() {
            Bth.setTakesAcks(buf, 0);
            return this;
        }

        /**
         * Appends jrdma's carried ACK ({@link dev.jrdma.soft.wire.CarriedAck}) after the payload written so far (call it
         * last) and sets the BTH bit that says it is there.
         */
        Pkt carriedAck(boolean mark, int psn, int syndrome, int msn) {
            dev.jrdma.soft.wire.CarriedAck.write(buf, len - dev.jrdma.soft.wire.Icrc.BYTES, mark, psn, syndrome, msn);
            Bth.setCarriesAck(buf, 0, true);
            len += dev.jrdma.soft.wire.CarriedAck.BYTES;
            return this;
        }

        /** Fills the payload with {@code (i * 31 + seed)}. */
        Pkt payload(int n, int seed) {
            int at = Opcode.headerLength(opcode);
            for (int i = 0; i < n; i++) buf.put(at + i, (byte) (i * 31 + seed));
            return this;
        }
    }

    static Pkt request(Opcode op, int psn, int payloadLen) {
        return new Pkt(op.code(), psn, true, payloadLen);
    }

    static Pkt ack(int psn) {
        return new Pkt(Opcode.ACKNOWLEDGE.code(), psn, false, 0).aeth(Aeth.ackSyndrome(Aeth.CREDITS_INVALID), 0);
    }

    static Pkt nak(int psn, int code) {
        return new Pkt(Opcode.ACKNOWLEDGE.code(), psn, false, 0).aeth(Aeth.nakSyndrome(code), 0);
    }

    static Pkt rnrNak(int psn, int timerCode) {
        return new Pkt(Opcode.ACKNOWLEDGE.code(), psn, false, 0).aeth(Aeth.rnrNakSyndrome(timerCode), 0);
    }

    /** Feeds a packet from the peer's address; returns whether the QP accepted it. */
    boolean feed(Pkt p) {
        return feedFrom(p, PEER);
    }

    boolean feedFrom(Pkt p, Inet4Address from) {
        return feedFrom(p, from, PORT);
    }

    /** Feeds a packet as if it came from {@code from}, UDP source port {@code srcPort}. */
    boolean feedFrom(Pkt p, Inet4Address from, int srcPort) {
        RocePacket rp = new RocePacket();
        assertEquals(RocePacket.OK, rp.wrap(p.buf, 0, p.len));
        Bth.setDestQp(p.buf, 0, qp.qpNum());
        return qp.receive(rp, MemorySegment.ofBuffer(p.buf), IpAddress.of(from), srcPort);
    }

    /** A link holding datagrams the test put there, taken out by whichever thread drives the device. */
    static final class InboundLink implements Link {
        private final java.util.ArrayDeque<ByteBuffer> waiting = new java.util.ArrayDeque<>();
        private final java.net.InetSocketAddress from = new java.net.InetSocketAddress(PEER, PORT);

        /** Puts the peer's packet {@code p} (addressed to {@code qpn}, its ICRC computed) in the link. */
        void arrive(Pkt p, int qpn) {
            Bth.setDestQp(p.buf, 0, qpn);
            new dev.jrdma.soft.wire.Icrc().generate(p.buf, 0, p.len, PEER.hashCode(), LOCAL.hashCode(), PORT, PORT);
            waiting.add(p.buf.slice(0, p.len));
        }

        int waiting() {
            return waiting.size();
        }

        @Override
        public boolean send(ByteBuffer b, java.net.InetSocketAddress to) {
            return true;
        }

        @Override
        public java.net.InetSocketAddress receive(ByteBuffer b) {
            ByteBuffer d = waiting.poll();
            if (d == null) return null;
            b.put(d);
            return from;
        }

        @Override
        public void await() {}

        @Override
        public void wakeup() {}

        @Override
        public void close() {}
    }

    /**
     * Feeds a packet from the peer's address as the device receives one: with its ICRC, through the device's checks
     * ({@link PacketDispatch}), signed by {@code signer} first when not null (the peer's key: {@link #peerAuth}; a
     * forger has none). Returns whether it reached the QP.
     */
    boolean feedWire(Pkt p, PacketAuth signer) {
        return feedWireTampered(p, signer, b -> {});
    }

    /**
     * {@link #feedWire}, with {@code tamper} changing a copy of the packet after it was signed (before its ICRC: what a
     * forger on the path who cannot sign may do).
     */
    boolean feedWireTampered(Pkt original, PacketAuth signer, java.util.function.Consumer<ByteBuffer> tamper) {
        Pkt p = new Pkt(original.opcode, 0, false, 0);
        p.buf.put(0, original.buf, 0, original.buf.capacity());
        p.len = original.len;
        Bth.setDestQp(p.buf, 0, qp.qpNum());
        int len = p.len;
        if (signer != null) len = signer.sign(p.buf, len, PEER_QPN, IpAddress.of(PEER));
        tamper.accept(p.buf);
        new dev.jrdma.soft.wire.Icrc()
                .generate(
                        p.buf,
                        0,
                        len,
                        IpAddress.of(PEER).ipv4(),
                        IpAddress.of(LOCAL).ipv4(),
                        PORT,
                        PORT);
        return dispatch.handle(
                receiver, new java.net.InetSocketAddress(PEER, PORT), p.buf, MemorySegment.ofBuffer(p.buf), len, false);
    }

    long count(Counter c) {
        return transport.counters.get(c);
    }

    /** Fires the deadlines that have passed. */
    void tick() {
        transport.timer.runDue();
    }

    // ---- what the QP sent ---------------------------------------------------------------------------------

    /** The packets sent since the last call, parsed, then forgotten. */
    List<RocePacket> drain() {
        List<RocePacket> out = new ArrayList<>();
        for (ByteBuffer b : sent) {
            RocePacket p = new RocePacket();
            int len = b.capacity();
            if (peerAuth != null) { // what the peer checks: every packet sent carries the tag
                assertTrue(
                        peerAuth.verify(b, len, qp.qpNum(), IpAddress.of(LOCAL)),
                        "a packet sent in the authenticated mode carries the right tag");
                len -= PacketAuth.TAG_BYTES;
            }
            assertEquals(RocePacket.OK, p.wrap(b, 0, len));
            assertEquals(PEER_QPN, p.destQp());
            out.add(p);
        }
        sent.clear();
        return out;
    }

    /** The one packet sent since the last call. */
    RocePacket one() {
        List<RocePacket> l = drain();
        assertEquals(1, l.size(), "packets sent: " + describe(l));
        return l.getFirst();
    }

    static String describe(List<RocePacket> l) {
        StringBuilder sb = new StringBuilder("[");
        for (RocePacket p : l)
            sb.append(Opcode.of(p.opcode())).append('@').append(p.psn()).append(' ');
        return sb.append(']').toString();
    }

    WorkCompletion poll() {
        WorkCompletion[] wc = WorkCompletion.array(1);
        assertEquals(1, cq.poll(wc), "a completion");
        return wc[0];
    }

    void assertNoCompletion() {
        WorkCompletion[] wc = WorkCompletion.array(1);
        assertEquals(0, cq.poll(wc), () -> "unexpected " + wc[0]);
    }

    @Override
    public void close() {
        ctx.close();
        arena.close();
    }
}
