package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * A device's link when its peers may share its host: the same RoCEv2 packets go through a peer's same-host ring
 * ({@link ShmRingFile}: a file under /dev/shm both processes map) instead of its UDP socket, and come in through the
 * device's own ring as well as its UDP socket. No system call per packet on either side.
 *
 * <p><b>Choice.</b> The device makes its ring when it opens (after binding its UDP port, which makes the ring's
 * well-known name its own). On the first packet to a peer address, the link looks for that peer's ring: there is one
 * when a device of this user in this network namespace is bound to that address and port and has a ring. Then the
 * link claims a slot in it and sends there; otherwise it sends over UDP, and looks again a second later. A peer whose
 * ring closes goes back to UDP at once. {@code -Djrdma.soft.shm}: {@code auto} (the default: rings where possible),
 * {@code off} (UDP only), {@code on} (opening the device fails when it cannot make its ring). Devices in other network
 * namespaces, of other users or on other hosts never see the ring and talk UDP as before.
 *
 * <p><b>Progress.</b> A polling thread looks at the rings on every spin (a few memory reads) and at the UDP socket
 * every {@value #UDP_LOOK_NANOS} ns (a system call; on every spin while it has traffic, or while the rings have given
 * nothing for {@value #RINGS_QUIET_NANOS} ns); a burst takes the rings first
 * and the socket first when its look is due, so neither starves. The receive thread, before it sleeps in the UDP socket's wait, says so
 * in the ring's header; a sender that then puts a packet in sends an empty UDP datagram to wake it (the doorbell), so
 * an idle device sleeps and a sleeping one is woken by the next packet.
 */
final class ShmLink implements Link {
    private static final System.Logger LOG = System.getLogger("dev.jrdma.soft");
    /**
     * While a ring is in use, the UDP socket gets a look (a system call: 1-2 µs here) at most this often, unless its
     * last look found something: a look per poll would put one system call back on every round trip.
     */
    static final long UDP_LOOK_NANOS = 20_000;
    /**
     * The UDP socket's look is rationed ({@link #UDP_LOOK_NANOS}) only while the rings took a packet less than this long
     * ago: a slot claimed by a sender that sends nothing (its proof failed, or it went quiet: the benchmarks' warm-up
     * on a QP connected to itself leaves one for good) must not ration a socket that carries all the traffic. With one
     * such slot, every half round trip to another host waited for the next look: ~10 us against ~4
     * (jrdma-bench/README.md, issue 23's two-host table).
     */
    static final long RINGS_QUIET_NANOS = 1_000_000;
    /**
     * How long the receive thread watches the rings before it sleeps, while a sender has a slot and the rings gave a
     * packet in the last {@link #RINGS_QUIET_NANOS} (not for a slot that carries nothing): a stream to a
     * passive side (nobody polls there, e.g. a {@code write_bw} server) then goes on without a doorbell per burst (a
     * system call at the sender, a wake-up at the receiver: about 3 doorbells per 10 packets before, and a message
     * rate below TCP's).
     */
    static final long SPIN_NANOS = 50_000;
    /** How long a peer found without a ring is sent to over UDP before the link looks for its ring again. */
    static final long RECHECK_NANOS = 1_000_000_000L;
    /**
     * How long a peer's ring may stay full before the link checks that the peer still serves it (its process may have
     * died with the file left behind), and how often it checks again while it stays full: the check makes system calls
     * and allocates, and a live receiver that is only behind (descheduled) frees room within this time.
     */
    static final long FULL_CHECK_NANOS = 20_000_000;
    /** How often a sender resends its HELLO while the receiver has not answered ({@link ShmProof}). */
    static final long PROOF_RESEND_NANOS = 20_000_000;
    /** How long a sender waits for the receiver's ACK before it gives the slot up and sends over UDP until its recheck. */
    static final long PROOF_TIMEOUT_NANOS = 1_000_000_000L;
    /**
     * The longest {@link #close} waits for peers to take the last packets this device put in their rings (see
     * {@link #awaitLastPacketsTaken}): a peer that is alive takes them within a scheduler slice or two even on a
     * loaded host; one that is gone or stopped never does.
     */
    static final long CLOSE_DRAIN_NANOS = 250_000_000L;
    /** How often a watch thread checks that each device's own file is still in place and whole. */
    static final long OWN_CHECK_MILLIS = 1000;

    private static final ByteBuffer DOORBELL = ByteBuffer.allocateDirect(0);

    private final Link udp;
    /** This device's rings: replaced by a new file when the old one fails (truncated or replaced under the mapping). */
    private volatile ShmReceiver receiver;

    private final Clock clock;
    /** Tells once a second at most that the device's rings failed and were made again. */
    private final LogLimiter ringWarnings;

    private final IpAddress local;
    private final int port;
    private final Counter.Set counters;
    /** Sends the doorbells: its own socket, so that they leave whatever kind the data link is. */
    private final DatagramChannel doorbells;

    private final ConcurrentHashMap<InetSocketAddress, Route> routes = new ConcurrentHashMap<>();
    /** How many QPs have each peer as their destination now ({@link #expectPeer}, {@link #forgetPeer}). */
    private final ConcurrentHashMap<InetSocketAddress, Integer> expected = new ConcurrentHashMap<>();
    /** Peers no QP expects any more whose ring still held this device's last packet: released at the next check. */
    private final Set<InetSocketAddress> retiring = ConcurrentHashMap.newKeySet();
    /** The route used last: QPs keep their peer's address object, so a stream to one peer finds it by identity. */
    private volatile Route last;
    /** When the UDP socket gets its next look while the rings are in use (racy between the two driving threads: any interleaving will do). */
    private long udpLookAt;
    /**
     * When a poll first saw that the rings had given packets ({@link #ringsTook}), the time of their last one near
     * enough (racy between the two driving threads: any recent value will do); no clock read per burst.
     */
    private long ringsTookAt;
    /** The rings gave packets since the last poll's look ({@link #readable}). */
    private boolean ringsTook;

    private volatile boolean closed;
    /** The receive thread is in {@link #await} (or about to be). */
    private volatile boolean sleeping;

    /** How packets to one peer address go: through its ring ({@code sender}), or over UDP until {@code recheckAt}. */
    private static final class Route {
        final InetSocketAddress to;
        final ShmSender sender;
        final long recheckAt;
        /**
         * When the ring was found full with no packet in since, 0 when it takes packets; moved on at each check of the
         * peer (racy between sending threads: any value will do).
         */
        long fullSince;
        /** When a packet last went into the peer's ring ({@link #peerBehind}; racy: any recent value will do). */
        volatile long sentAt;
        /** When the sender claimed its slot, and when it last sent its HELLO (racy: any value will do). */
        final long claimedAt;

        long helloAt;

        Route(InetSocketAddress to, ShmSender sender, long now) {
            this.to = to;
            this.sender = sender;
            this.recheckAt = now + RECHECK_NANOS;
            this.claimedAt = now;
            this.helloAt = now;
        }
    }

    private ShmLink(
            Link udp,
            ShmRingFile ring,
            IpAddress local,
            int port,
            Counter.Set counters,
            DatagramChannel doorbells,
            Clock clock) {
        this.udp = udp;
        this.clock = clock;
        this.ringWarnings = new LogLimiter(LOG, clock, 1_000_000_000L);
        this.receiver = new ShmReceiver(ring, counters);
        this.local = local;
        this.port = port;
        this.counters = counters;
        this.doorbells = doorbells;
        this.ringsTookAt = clock.nanoTime() - RINGS_QUIET_NANOS;
    }

    /** What {@code -Djrdma.soft.shm} asks for: auto, off or on. */
    static String mode() throws IOException {
        String mode = System.getProperty("jrdma.soft.shm", "auto").trim();
        if (!mode.equals("auto") && !mode.equals("off") && !mode.equals("on"))
            throw new IOException("jrdma.soft.shm='" + mode + "' is not auto, off or on");
        return mode;
    }

    private static boolean swept;

    /**
     * The device's link with same-host rings around {@code udp} (its socket, bound to {@code local:port}), or {@code udp}
     * itself when they are off or cannot be made (in auto mode). Closes {@code udp} when it throws.
     */
    static Link around(Link udp, IpAddress local, int port, Counter.Set counters) throws IOException {
        return around(udp, local, port, counters, Clock.SYSTEM);
    }

    /** {@link #around(Link, IpAddress, int, Counter.Set)} with the link's time taken from {@code clock}. */
    static Link around(Link udp, IpAddress local, int port, Counter.Set counters, Clock clock) throws IOException {
        String mode;
        try {
            mode = mode();
        } catch (IOException e) {
            udp.close();
            throw e;
        }
        if (mode.equals("off")) {
            if (ShmRingFile.available()) {
                try {
                    ShmRingFile.retire(
                            ShmRingFile.pathFor(local, port)); // a dead device's ring must not take our peers' packets
                } catch (IOException e) {
                    LOG.log(
                            System.Logger.Level.DEBUG,
                            "soft device " + local.literal() + ":" + port + ": " + e.getMessage());
                }
            }
            return udp;
        }
        ShmRingFile ring = null;
        DatagramChannel bells = null;
        try {
            synchronized (ShmLink.class) {
                if (!swept) {
                    swept = true;
                    ShmRingFile.sweepStale();
                }
            }
            ring = ShmRingFile.create(local, port);
            bells = DatagramChannel.open(
                    local.inet instanceof Inet4Address ? StandardProtocolFamily.INET : StandardProtocolFamily.INET6);
            bells.configureBlocking(false);
            ShmLink link = new ShmLink(udp, ring, local, port, counters, bells, clock);
            ShmWatch.add(link);
            return link;
        } catch (IOException | RuntimeException e) {
            if (ring != null) ring.close();
            if (bells != null) bells.close();
            if (mode.equals("on")) {
                udp.close();
                throw new IOException("jrdma.soft.shm=on, but the same-host ring cannot be made: " + e.getMessage(), e);
            }
            LOG.log(
                    System.Logger.Level.INFO,
                    "soft device " + local.literal() + ":" + port + ": no same-host ring (" + e.getMessage()
                            + "), UDP only");
            return udp;
        }
    }

    @Override
    public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        Route r = last;
        if (r == null || r.to != to) r = route(to);
        if (r.sender == null && clock.nanoTime() - r.recheckAt > 0) {
            forget(r); // a while over UDP: look for the peer's ring again, for this packet already
            r = route(to);
        }
        ShmSender s = r.sender;
        if (s != null) {
            switch (s.send(b)) {
                case SENT -> {
                    counters.add(Counter.TX_SHM_PACKETS);
                    if (r.fullSince != 0) r.fullSince = 0;
                    r.sentAt = clock.nanoTime();
                    return true;
                }
                case SENT_WAKE -> {
                    counters.add(Counter.TX_SHM_PACKETS);
                    if (r.fullSince != 0) r.fullSince = 0;
                    r.sentAt = clock.nanoTime();
                    ringDoorbell(s, to);
                    return true;
                }
                case FULL -> {
                    counters.add(Counter.TX_SHM_RING_FULL);
                    if (peerStillServes(r, s)) return false;
                    forget(r); // its receiver is gone: this packet and the next go over UDP until the peer has a ring
                    // again
                }
                case TOO_LONG -> {}
                case GONE -> forget(r);
                case UNPROVEN -> awaitProof(r, s);
            }
        }
        return udp.send(b, to);
    }

    /**
     * A batch to a peer without a ring (net23: the one targeted edit here) goes on as one batch of the link below
     * ({@code sendmmsg}, UDP segmentation between jrdma peers); to a peer with a ring, or one to look for again, packet
     * by packet as {@link #send(ByteBuffer, InetSocketAddress)}.
     */
    @Override
    public int send(TxBatch batch, int from, int n, InetSocketAddress to) throws IOException {
        Route r = last;
        if (r == null || r.to != to) r = route(to);
        if (r.sender != null || clock.nanoTime() - r.recheckAt > 0) return Link.super.send(batch, from, n, to);
        return udp.send(batch, from, n, to);
    }

    /**
     * Whether the receiver of a full ring may still be there: checked once the ring has stayed full for
     * {@link #FULL_CHECK_NANOS} (a process killed outright leaves its file open, and its ring fills and stays full).
     */
    private boolean peerStillServes(Route r, ShmSender s) {
        long now = clock.nanoTime(), since = r.fullSince;
        if (since == 0) {
            r.fullSince = now | 1; // never 0
            return true;
        }
        if (now - since < FULL_CHECK_NANOS) return true;
        r.fullSince = now | 1;
        return s.checkPeer();
    }

    /**
     * Whether packets to {@code to} go through its same-host ring now (a racy hint, for {@link CarriedAcks}: there an
     * ACK alone costs no system call, and holding it for a request to carry gains nothing).
     */
    boolean ringTo(InetSocketAddress to) {
        Route r = last;
        if (r == null || r.to != to) r = routes.get(to);
        return r != null && r.sender != null;
    }

    /**
     * Claims a slot in {@code peer}'s ring and sends the HELLO now, so that the proof is done before the first packet;
     * counts the QPs that expect the peer, so that the slot goes back when the last one leaves ({@link #forgetPeer}).
     */
    @Override
    public void expectPeer(InetSocketAddress peer) {
        if (peer.getAddress() == null || closed) return;
        expected.merge(peer, 1, Integer::sum);
        retiring.remove(peer);
        route(peer);
    }

    /**
     * No QP expects {@code peer} any more (the last one has another destination now, or was destroyed: e.g. a QP that
     * was connected to itself for a warm-up): the slot this device holds in the peer's ring goes back now, or, while
     * its last packet still waits there untaken, at the watch's next check. A later packet to the peer claims a slot
     * again. A peer that a QP was never given ({@link #expectPeer}: UD address handles) keeps its slot.
     */
    @Override
    public void forgetPeer(InetSocketAddress peer) {
        boolean[] last = {false};
        expected.computeIfPresent(peer, (p, n) -> {
            if (n > 1) return n - 1;
            last[0] = true;
            return null;
        });
        Route r = routes.get(peer);
        if (!last[0] || r == null || r.sender == null) return;
        if (r.sender.lastWaiting()) retiring.add(peer);
        else release(peer);
    }

    /**
     * Before the device's slots go back at {@link #close}: waits, at most {@link #CLOSE_DRAIN_NANOS}, until each peer
     * has taken the last packet this device put in its ring. A receiver reads only the slots a sender holds, so a
     * slot given back with a packet in it loses that packet: at a close right after a QP's destroy sent the ACK it
     * owed (perftest's {@code ib_write_lat} server ends so), the peer's last request got no ACK and ended in
     * RETRY_EXC_ERR when the peer was slow to take it (a loaded host). {@link #forgetPeer} keeps such a slot until
     * the watch's next check for the same reason.
     */
    private void awaitLastPacketsTaken() {
        long until = clock.nanoTime() + CLOSE_DRAIN_NANOS;
        // parks counted too: a test's manual clock does not move during a close, and the wait must still end
        int parks = 0;
        for (Route r : routes.values()) {
            ShmSender s = r.sender;
            while (s != null
                    && s.lastWaiting()
                    && clock.nanoTime() - until < 0
                    && parks++ < CLOSE_DRAIN_NANOS / CLOSE_DRAIN_PARK_NANOS)
                LockSupport.parkNanos(CLOSE_DRAIN_PARK_NANOS);
        }
    }

    /** One sleep of {@link #awaitLastPacketsTaken} between two looks at a peer's ring. */
    private static final long CLOSE_DRAIN_PARK_NANOS = 50_000;

    /** Gives back the slots {@link #forgetPeer} left to the watch's check (a second later: the peer took their last packet). */
    void releaseRetiring() {
        for (InetSocketAddress peer : retiring) release(peer);
    }

    /** Gives back the slot of the route to {@code peer}, unless a QP expects that peer again. */
    private synchronized void release(InetSocketAddress peer) {
        retiring.remove(peer);
        Route r = routes.get(peer);
        if (r != null && r.sender != null && !expected.containsKey(peer)) forget(r);
    }

    /**
     * The receiver has not answered the HELLO yet (this packet goes over UDP): resends it now and then, and after
     * {@link #PROOF_TIMEOUT_NANOS} gives the slot up (the file is not the peer's, or the peer is gone).
     */
    private void awaitProof(Route r, ShmSender s) {
        long now = clock.nanoTime();
        if (now - r.claimedAt > PROOF_TIMEOUT_NANOS) {
            counters.add(Counter.RX_SHM_UNPROVEN);
            ringWarnings.warn("soft device " + local.literal() + ":" + port + ": " + r.to
                    + " never answered from its port for its ring " + s.peer.path + ": UDP");
            sendOverUdpUntilRecheck(r);
        } else if (now - r.helloAt > PROOF_RESEND_NANOS) {
            r.helloAt = now;
            sendProof(ShmProof.HELLO, s.slot(), s.nonce, s.start, r.to);
        }
    }

    private synchronized void sendOverUdpUntilRecheck(Route r) {
        forget(r);
        Route udpOnly = new Route(r.to, null, clock.nanoTime());
        routes.put(r.to, udpOnly);
    }

    /** Sends a {@link ShmProof} datagram from this device's own UDP port (that is what proves it); a lost one is resent or answered again. */
    private void sendProof(int kind, int slot, long nonce, long start, InetSocketAddress to) {
        try {
            udp.sendVerbatim(ShmProof.encode(kind, slot, nonce, start), to); // not a RoCEv2 packet: no ICRC patched
        } catch (IOException | RuntimeException e) {
            counters.add(Counter.TX_ERRORS);
        }
    }

    /** A HELLO or an ACK came over UDP from {@code from} (see {@link ShmProof}). */
    private void onProof(ShmProof proof, InetSocketAddress from) {
        if (proof == null) {
            counters.add(Counter.RX_SHM_UNPROVEN);
            return;
        }
        if (proof.kind == ShmProof.HELLO) {
            ShmReceiver rx = receiver;
            boolean proven;
            try {
                proven = rx.prove(proof.slot, proof.nonce, proof.start, from);
            } catch (RuntimeException | InternalError e) {
                ringFailed(rx, e);
                return;
            }
            if (proven) sendProof(ShmProof.ACK, proof.slot, proof.nonce, proof.start, from);
            else counters.add(Counter.RX_SHM_UNPROVEN);
            return;
        }
        for (Route r : routes.values()) {
            ShmSender s = r.sender;
            if (s != null
                    && s.slot() == proof.slot
                    && s.nonce == proof.nonce
                    && s.start == proof.start
                    && sameEndpoint(r.to, from)) {
                s.proven();
                return;
            }
        }
        counters.add(Counter.RX_SHM_UNPROVEN); // an ACK for no claim of ours, or from another port than the peer's
    }

    private static boolean sameEndpoint(InetSocketAddress a, InetSocketAddress b) {
        if (a.getPort() != b.getPort() || a.getAddress() == null || b.getAddress() == null) return false;
        IpAddress x = IpAddress.of(a.getAddress()), y = IpAddress.of(b.getAddress());
        return x.hi == y.hi && x.lo == y.lo;
    }

    private Route route(InetSocketAddress to) {
        Route r = routes.get(to);
        if (r == null || r.sender != null && r.sender.isGone()) r = resolve(to);
        last = r;
        return r;
    }

    /** Finds how to reach {@code to} (once per peer, and again when its ring closed or after a while without one). */
    private synchronized Route resolve(InetSocketAddress to) {
        Route r = routes.get(to);
        if (r != null && (r.sender == null || !r.sender.isGone())) return r;
        if (r != null) forget(r);
        ShmSender s = null;
        if (!closed && to.getAddress() != null) {
            ShmRingFile peer = ShmRingFile.openPeer(IpAddress.of(to.getAddress()), to.getPort());
            if (peer != null) {
                s = ShmSender.claim(peer, local, port);
                if (s == null) {
                    peer.close();
                    LOG.log(
                            System.Logger.Level.DEBUG,
                            "soft device " + local.literal() + ":" + port + ": every slot of " + peer.path
                                    + " is taken: UDP to " + to);
                }
            }
        }
        r = new Route(to, s, clock.nanoTime());
        routes.put(to, r);
        if (s != null) sendProof(ShmProof.HELLO, s.slot(), s.nonce, s.start, to); // cells go in once the peer answers
        return r;
    }

    private void forget(Route r) {
        if (routes.remove(r.to, r) && r.sender != null) r.sender.close();
        if (last == r) last = null;
    }

    /** Wakes the peer's receive thread; when that fails, the next packet rings again. */
    private void ringDoorbell(ShmSender s, InetSocketAddress to) {
        try {
            doorbells.send(DOORBELL, to);
            return;
        } catch (IOException | RuntimeException e) {
            counters.add(Counter.TX_ERRORS);
        }
        s.rearmDoorbell();
    }

    /** One packet, from a ring or the socket (links wrapped around this one receive so; the device takes bursts). */
    @Override
    public InetSocketAddress receive(ByteBuffer b) throws IOException {
        InetSocketAddress from = takeOne(b);
        if (from != null) return from;
        int at = b.position();
        from = udp.receive(b);
        if (from == null) return null;
        int len = b.position() - at;
        if (len == ShmProof.BYTES && ShmProof.is(MemorySegment.ofBuffer(b), at, len)) {
            onProof(ShmProof.decode(MemorySegment.ofBuffer(b), at), from);
            b.position(at);
            return takeOne(b);
        }
        if (len > 0) return from;
        doorbell();
        return takeOne(b);
    }

    private InetSocketAddress takeOne(ByteBuffer b) {
        ShmReceiver rx = receiver;
        try {
            InetSocketAddress from = rx.takeOne(b);
            if (from != null) ringsTook = true;
            return from;
        } catch (RuntimeException | InternalError e) {
            ringFailed(rx, e);
            return null;
        }
    }

    @Override
    public int receive(RxBatch batch) throws IOException {
        if (!ringsHaveSenders()) return receiveUdp(batch); // no ring to share the socket's turn with: no clock read
        boolean udpFirst = udpLookDue(); // so that a stream through the rings does not starve the socket
        int n;
        if (!udpFirst && (n = takeRings(batch)) > 0) return n;
        n = receiveUdp(batch);
        if (n > 0 || !udpFirst) return n;
        return takeRings(batch);
    }

    /** Whether a sender holds a slot in this device's rings (a peer on this host); a failed ring has none. */
    private boolean ringsHaveSenders() {
        ShmReceiver rx = receiver;
        try {
            return rx.hasSenders();
        } catch (RuntimeException | InternalError e) {
            ringFailed(rx, e);
            return false;
        }
    }

    /** Whether the UDP socket's look is due (see {@link #UDP_LOOK_NANOS}); if so, the next one is due a while later. */
    private boolean udpLookDue() {
        return udpLookDue(clock.nanoTime());
    }

    private boolean udpLookDue(long now) {
        if (now - udpLookAt < 0) return false;
        udpLookAt = now + UDP_LOOK_NANOS;
        return true;
    }

    private int takeRings(RxBatch batch) {
        ShmReceiver rx = receiver;
        int n;
        try {
            n = rx.take(batch);
        } catch (RuntimeException | InternalError e) {
            ringFailed(rx, e); // what the burst held is lost: RC retransmits it
            batch.drained = false;
            return 0;
        }
        // a short burst emptied the rings; the socket gets its turn from polls and the receive thread's wait
        batch.drained = n < RxBatch.CAPACITY;
        if (n > 0) ringsTook = true;
        return n;
    }

    private int receiveUdp(RxBatch batch) throws IOException {
        int n = udp.receive(batch);
        for (int i = 0; i < n; i++) {
            int len = batch.lengths[i];
            if (len == 0) {
                batch.lengths[i] = RxBatch.DOORBELL;
                doorbell();
                batch.drained = false; // the packets it rang for are in a ring: the burst goes on to take them
            } else if (len == ShmProof.BYTES && ShmProof.is(batch.segments[i], 0, len)) {
                batch.lengths[i] = RxBatch.DOORBELL; // the link's own: nothing for the transport
                onProof(ShmProof.decode(batch.segments[i], 0), batch.sources[i]);
            }
        }
        return n;
    }

    /** An empty datagram came: a doorbell (see the class comment). */
    private void doorbell() {
        counters.add(Counter.RX_SHM_DOORBELLS);
        // a polling thread took the doorbell meant for the sleeping receive thread, whose wait then goes on; the
        // sender cleared the waiting word when it rang, so no later packet would wake it either, and packets this
        // thread leaves in the rings (its budget, or it stops polling) would wait: wake it (it looks at the rings,
        // then sleeps again with the waiting word set)
        if (sleeping) udp.wakeup();
    }

    @Override
    public void prepare(RxBatch batch) {
        udp.prepare(batch);
    }

    /** Whether the rings gave a packet less than {@link #RINGS_QUIET_NANOS} before {@code now} (as far as seen). */
    private boolean ringsRecent(long now) {
        if (ringsTook) {
            ringsTook = false;
            ringsTookAt = now;
        }
        return now - ringsTookAt < RINGS_QUIET_NANOS;
    }

    @Override
    public boolean readable() throws IOException {
        ShmReceiver rx = receiver;
        try {
            if (rx.anyReady()) return true;
            if (!rx.hasSenders()) return udp.readable();
        } catch (RuntimeException | InternalError e) {
            ringFailed(rx, e);
            return true;
        }
        long now = clock.nanoTime();
        if (!ringsRecent(now)) return udp.readable(); // quiet rings: no ration
        if (!udpLookDue(now)) return false;
        if (!udp.readable()) return false;
        udpLookAt = now; // the socket has traffic: look at it again on the next poll
        return true;
    }

    /**
     * Whether the packet sent last, to the peer sent to last, still waits in that peer's ring after {@code nanos}: its
     * reader polls no more (it is descheduled, or was woken and waits for a CPU). On a machine whose cores are busy,
     * the thread that wakes it may be the one that spins on the CPU it needs: a ping-pong then takes two busy-poll
     * budgets a round trip ({@link ProgressEngine#progressFromPoll} gives the CPU up instead).
     */
    @Override
    public boolean peerBehind(long now, long nanos) {
        Route r = last;
        ShmSender s = r == null ? null : r.sender;
        return s != null && now - r.sentAt >= nanos && s.lastWaiting();
    }

    @Override
    public void await() throws IOException {
        await(-1);
    }

    /**
     * Sleeps in the UDP socket's wait with the ring's waiting word set (a sender then rings the doorbell), for at most
     * {@code timeoutNanos} (-1: no limit). Without a limit (the receive thread) it first watches the rings for
     * {@link #SPIN_NANOS} while a sender has a slot; with one (an application thread standing in, which polled for its
     * own budget already) it does not: on two loaded cores that spin took the CPU the peer needed to answer (an
     * event-mode ping-pong between two devices: 93-160 us a round trip with it, 30-41 us without, load ~10).
     */
    @Override
    public boolean await(long timeoutNanos) throws IOException {
        ShmReceiver rx = receiver;
        long start = clock.nanoTime();
        try {
            // the watch only while the rings carry packets: a slot that sends nothing is no reason to spin
            if (rx.hasSenders() && timeoutNanos < 0 && ringsRecent(start)) {
                long end = start + SPIN_NANOS;
                long now;
                do {
                    if (rx.anyReady()) return true;
                    now = clock.nanoTime();
                    if (ProgressEngine.pollYield && peerBehind(now, ProgressEngine.PEER_BEHIND_NANOS)) {
                        // the receive thread's watch before it sleeps, as a poll: the peer may wait for this CPU
                        counters.add(Counter.POLL_YIELDS);
                        Thread.yield();
                    } else {
                        Thread.onSpinWait();
                    }
                } while (now - end < 0);
            }
            sleeping = true;
            rx.waiting(true); // before looking: a sender that puts a packet in after the look sees it and rings
            try {
                if (rx.anyReady()) return true;
                if (timeoutNanos < 0) udp.await();
                else {
                    long left = timeoutNanos - (clock.nanoTime() - start);
                    return left <= 0 || udp.await(left);
                }
            } finally {
                sleeping = false;
                rx.waiting(false);
            }
        } catch (RuntimeException | InternalError e) {
            ringFailed(rx, e);
        }
        return true;
    }

    /** Makes the rings again when this device's file was replaced or truncated (the {@link ShmWatch} thread asks). */
    void checkOwnFile() {
        ShmReceiver rx = receiver;
        ShmRingFile ring = rx.ring();
        if (ring != null && !ring.intact()) ringFailed(rx, new IOException(ring.path + " was replaced or truncated"));
    }

    /**
     * This device's rings failed under {@code failed} (their file was truncated: a fault on access; or replaced): a
     * new file is made at the same name, so that senders, who stop using the old one, find it; the old one is marked
     * closed and unmapped. When no new file can be made, the device goes on over UDP alone. Counted; told in the log
     * at most once a second.
     */
    private void ringFailed(ShmReceiver failed, Throwable cause) {
        ShmReceiver fresh;
        synchronized (this) {
            if (closed || receiver != failed) return; // the other driving thread made the new one already
            counters.add(Counter.RX_SHM_RING_REBUILDS);
            String why = cause.getMessage() == null ? cause.toString() : cause.getMessage();
            try {
                fresh = new ShmReceiver(ShmRingFile.create(local, port), counters);
                ringWarnings.warn("soft device " + local.literal() + ":" + port + ": its same-host rings failed (" + why
                        + "): made a new file");
            } catch (IOException | RuntimeException e) {
                fresh = ShmReceiver.none(counters);
                ringWarnings.warn("soft device " + local.literal() + ":" + port + ": its same-host rings failed (" + why
                        + ") and cannot be made again (" + e.getMessage() + "): UDP only");
            }
            receiver = fresh;
        }
        udp.wakeup(); // a receive thread asleep with its waiting word in the old file would not be rung for the new one
        ShmRingFile old = failed.ring();
        if (old == null) return;
        try {
            old.close(); // marks it closed (where it still can) so that its senders look for the new one, and unmaps it
        } catch (RuntimeException e) {
            // the other driving thread is inside it: that mapping stays until the process ends (one per failure)
        }
    }

    @Override
    public void wakeup() {
        udp.wakeup();
    }

    /** The peers this device sends to through their rings now (devinfo, tests). */
    List<InetSocketAddress> shmPeers() {
        List<InetSocketAddress> l = new ArrayList<>();
        for (Route r : routes.values()) if (r.sender != null && r.sender.isProven() && !r.sender.isGone()) l.add(r.to);
        return l;
    }

    /** This device's ring file now (null when its rings failed and could not be made again). */
    ShmRingFile ring() {
        return receiver.ring();
    }

    /** The receiving rings' positions (tests, reports). */
    String describeRings() {
        return receiver.describe();
    }

    /** Whether packets to peers off this host leave through a raw IPv4 socket ({@link RawIpv4Link}). */
    boolean sendsRawIpv4() {
        return udp instanceof RawIpv4Link;
    }

    @Override
    public String toString() {
        List<InetSocketAddress> peers = shmPeers();
        ShmRingFile ring = receiver.ring();
        StringBuilder sb = new StringBuilder(udp.toString())
                .append(" + same-host ring ")
                .append(ring == null ? "(failed: UDP only)" : ring.path);
        if (!peers.isEmpty()) {
            sb.append(" (to");
            for (InetSocketAddress p : peers)
                sb.append(' ')
                        .append(IpAddress.of(p.getAddress()).literal())
                        .append(':')
                        .append(p.getPort());
            sb.append(" over shm)");
        }
        return sb.toString();
    }

    @Override
    public void close() {
        ShmWatch.remove(this);
        awaitLastPacketsTaken();
        synchronized (this) {
            closed = true;
            for (Route r : routes.values()) forget(r);
        }
        ShmRingFile ring = receiver.ring();
        if (ring != null) ring.close(); // marks it closed (senders go back to UDP) and removes the file
        try {
            doorbells.close();
        } catch (IOException ignored) {
        }
        udp.close();
    }
}
