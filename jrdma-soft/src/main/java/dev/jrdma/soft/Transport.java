package dev.jrdma.soft;

import dev.jrdma.verbs.Mtu;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.function.UnaryOperator;

/**
 * The packet side of one software device (one local address and port), shared by every context opened on it, and
 * what its QPs, MRs and CQs reach it through. Its parts, one role each as rxe spreads them over files:
 * <ul>
 * <li>{@link DeviceRegistry}: one transport per address and port in the process ({@link #acquire}, {@link #release});
 * <li>{@link LinkFactory}: the link (a {@link Link}: the UDP socket, {@link UdpLink}, or a raw or same-host one) and
 *     the port's active MTU, from system properties;
 * <li>{@link QpTable} and {@link KeyTable}: QP numbers and memory keys;
 * <li>{@link ProgressEngine}: who takes received packets from the link (polling threads or the receive thread,
 *     with takeover), {@link PacketDispatch} to check and deliver each, {@link OwedAcks} and {@link ReplyTurns};
 * <li>sending, here: a packet or a batch to the link, retried while the link cannot take it.
 * </ul>
 * Time comes from one {@link Clock} (the system's, or a test's for a {@link #detached} transport).
 */
final class Transport {
    /** The largest datagram a link sends or receives. */
    static final int RX_BUF = 1 << 16;

    /** The device's address (IPv4 or IPv6): what its socket binds and the source every ICRC it sends covers. */
    final IpAddress local;

    final int port;
    /** The name of this transport in the registry, threads and logs: address and port. */
    final String key;
    /** The registry that opened it; null for a detached transport. */
    private final DeviceRegistry registry;

    private final Clock clock;

    /** The socket; null for a detached transport (or a test's inbound link). */
    private final Link link;
    /** Where a detached transport's packets go (tests); null for a socket. */
    private final PacketTap tap;
    /** Retransmission timeouts and RNR waits of this device's QPs. */
    final SoftTimer timer;
    /** Port 1's active MTU: {@code -Djrdma.soft.mtu} when set, else from the MTU of the address's interface ({@link LinkFactory#activeMtuFor}). */
    final Mtu activeMtu;

    final Counter.Set counters = new Counter.Set();
    final QpTable qps = new QpTable();
    final KeyTable keys = new KeyTable();
    /** QPs with READ responses left to send, served a turn per pass of the receive loop. */
    private final ReplyTurns turns;

    private final ProgressEngine progress;

    /** Receives what a detached transport sends (tests: the packets the engines produce). */
    @FunctionalInterface
    interface PacketTap {
        /** The packet is {@code len} bytes from the start of {@code packet}; copy what you keep, the buffer is reused. */
        void sent(ByteBuffer packet, int len, InetSocketAddress to);

        /** As {@link Link#peerBehind}: whether the packet sent last still waits, untaken, after {@code nanos}. */
        default boolean peerBehind(long now, long nanos) {
            return false;
        }

        /** The packets {@link #sent} since the last call left together, in one batch (one system call on a link). */
        default void batchEnded() {}
    }

    /**
     * A transport without a socket or threads, for tests that drive the engines directly: sent packets go to
     * {@code tap}, received ones are fed to {@link SoftQp#receive} by the test, and time is {@code clock} with a
     * manual timer (the test calls {@code timer.runDue()}).
     */
    static Transport detached(InetAddress address, int port, Clock clock, PacketTap tap) {
        return new Transport(address, port, clock, tap, null);
    }

    /**
     * {@link #detached}, receiving from {@code inbound} (tests: packets waiting in a link that only the driving
     * threads take out: a polling thread, or the timer before it times a request out); sending still goes to the tap.
     */
    static Transport detached(InetAddress address, int port, Clock clock, PacketTap tap, Link inbound) {
        return new Transport(address, port, clock, tap, inbound);
    }

    private Transport(InetAddress address, int port, Clock clock, PacketTap tap, Link inbound) {
        this.registry = null;
        this.local = IpAddress.of(address);
        this.port = port;
        this.key = DeviceRegistry.key(local, port) + " (detached)";
        this.clock = clock;
        this.tap = tap;
        this.timer = SoftTimer.manual(clock);
        this.activeMtu = LinkFactory.configuredMtu(address);
        this.link = inbound;
        this.turns = new ReplyTurns(counters, key);
        this.progress = newEngine(); // never started: the test drives it (or nothing receives, without a link)
        timer.beforeFiring(() -> progress.driveForTimer(clock.nanoTime()));
    }

    /** Opens the transport of {@code address} and {@code port} for {@code registry} ({@link DeviceRegistry#acquire}). */
    static Transport open(DeviceRegistry registry, InetAddress address, int port, UnaryOperator<Link> wrap)
            throws IOException {
        return new Transport(registry, address, port, wrap);
    }

    private Transport(DeviceRegistry registry, InetAddress address, int port, UnaryOperator<Link> wrap)
            throws IOException {
        this.registry = registry;
        this.local = IpAddress.of(address);
        this.port = port;
        this.key = DeviceRegistry.key(local, port);
        this.clock = Clock.SYSTEM;
        this.tap = null;
        this.timer = SoftTimer.threaded(clock, key);
        this.activeMtu = LinkFactory.configuredMtu(address);
        this.link = wrap.apply(ShmLink.around(LinkFactory.openLink(local.inet, port), local, port, counters));
        this.turns = new ReplyTurns(counters, key);
        this.progress = newEngine();
        timer.beforeFiring(() -> progress.driveForTimer(clock.nanoTime()));
        progress.start();
    }

    private ProgressEngine newEngine() {
        return new ProgressEngine(link, clock, new PacketDispatch(local, port, qps, counters), turns, counters, key);
    }

    /** {@link DeviceRegistry#acquire} of this process's registry. */
    static Transport acquire(InetAddress address, int port) {
        return DeviceRegistry.SHARED.acquire(address, port, UnaryOperator.identity());
    }

    /** {@link #acquire}, with the link of a transport opened now wrapped by {@code wrap} (tests: a link that stalls or drops). */
    static Transport acquire(InetAddress address, int port, UnaryOperator<Link> wrap) {
        return DeviceRegistry.SHARED.acquire(address, port, wrap);
    }

    /** One context is done with this transport; the last one closes it (a detached one has nothing to close). */
    void release() {
        if (registry != null) registry.release(this);
    }

    /** Closes the timer, ends the receive thread and closes the link ({@link DeviceRegistry#release}). */
    void stop() {
        timer.close();
        progress.stop();
        link.close();
    }

    /** What carries this device's packets (devinfo, tests): e.g. "udp 127.0.0.1:4791 (libc)". */
    String linkName() {
        return link == null ? "detached" : link.toString();
    }

    /** Whether this device sends through a raw socket that writes the IPv4 header ({@link RawIpv4Link}). */
    boolean sendsRawIpv4() {
        return link instanceof RawIpv4Link || link instanceof ShmLink s && s.sendsRawIpv4();
    }

    /** The same-host link when this device has one (its peers on this host reach it through a ring), else null. */
    ShmLink shmLink() {
        Link l = link instanceof FaultyLink f ? f.inner() : link;
        return l instanceof ShmLink s ? s : null;
    }

    /** The fault-injecting link when this transport has one (tests), else null. */
    FaultyLink faultyLink() {
        return link instanceof FaultyLink f ? f : null;
    }

    /** The receive thread (never started for a detached transport: it stands for the device's threads in checks). */
    Thread rxThread() {
        return progress.receiveThread;
    }

    /** Whether the receive thread still runs (tests: no fault may end it). */
    boolean rxThreadAlive() {
        return progress.receiveThread.isAlive();
    }

    /** The progress engine (tests). */
    ProgressEngine progress() {
        return progress;
    }

    // ---- QP numbers and keys ---------------------------------------------------------------------------

    int addQp(SoftQp qp) {
        return qps.add(qp);
    }

    /** Removes a destroyed QP; the link may release what it kept for the QP's destination {@code remote} (null: none). */
    void removeQp(int qpn, SoftQp qp, InetSocketAddress remote) {
        qps.remove(qpn, qp);
        peerChanged(remote, null);
    }

    /** Reserves a key index for {@code owner} (the upper 24 bits of an lkey/rkey). */
    int addKey(Object owner) {
        return keys.add(owner);
    }

    void removeKey(int index, Object owner) {
        keys.remove(index, owner);
    }

    /** A new key for {@code index}: a random 8-bit key part, different from the last one used with this index. */
    int freshKey(int index) {
        return keys.freshKey(index);
    }

    /** An application chose {@code key} (a type 2 bind with its own key byte): the next fresh key differs from it. */
    void noteKey(int key) {
        keys.noteKey(key);
    }

    /** The MR or MW a key names, or null. */
    Object keyOwner(int key) {
        return keys.owner(key);
    }

    // ---- sending -----------------------------------------------------------------------------------

    /** Sends {@code len} bytes from the start of {@code b} (a QP's transmit buffer) to {@code to}. */
    void send(ByteBuffer b, int len, InetSocketAddress to) {
        if (tap != null) {
            counters.add(Counter.TX_PACKETS);
            tap.sent(b, len, to);
            tap.batchEnded();
            return;
        }
        b.limit(len).position(0);
        try {
            sendLoop(b, to);
        } finally {
            b.clear();
        }
    }

    /** Sends packets {@code 0..n-1} of {@code batch} to {@code to}, in order (one system call where the link can). */
    void send(TxBatch batch, int n, InetSocketAddress to) {
        if (tap != null || testDropOneIn > 0) { // tests: packet by packet, as they expect
            if (tap == null) {
                for (int i = 0; i < n; i++) send(batch.buffers[i], batch.lengths[i], to);
                return;
            }
            for (int i = 0; i < n; i++) {
                counters.add(Counter.TX_PACKETS);
                tap.sent(batch.buffers[i], batch.lengths[i], to);
            }
            tap.batchEnded();
            return;
        }
        int sent = 0;
        try {
            for (int tries = 0; sent < n && tries < SEND_TRIES; tries++) {
                int k = link.send(batch, sent, n - sent, to);
                if (k > 0) {
                    sent += k;
                    counters.add(Counter.TX_PACKETS, k);
                    tries = 0;
                } else if (tries > 100) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
            }
        } catch (IOException e) { // a closed link (the device was released) ends here too
            counters.add(Counter.TX_ERRORS, n - sent);
            return;
        }
        if (sent < n) counters.add(Counter.TX_DROPPED_LINK_FULL, n - sent);
    }

    /**
     * How often a send tries a link that cannot take the packet now (spinning, then yielding) before it drops it:
     * waiting longer could block the thread that would empty the peer's ring (its own receive thread sends ACKs too),
     * and RC sends a dropped packet again.
     */
    static final int SEND_TRIES = 10_000;

    /** Tests only: drop one in {@code n} packets sent, at random (0 = none), to exercise retransmission. */
    volatile int testDropOneIn;

    private void sendLoop(ByteBuffer b, InetSocketAddress to) {
        int drop = testDropOneIn;
        if (drop > 0 && java.util.concurrent.ThreadLocalRandom.current().nextInt(drop) == 0) return;
        try {
            for (int tries = 0; tries < SEND_TRIES; tries++) {
                if (link.send(b, to)) {
                    counters.add(Counter.TX_PACKETS);
                    return;
                }
                if (tries > 100) Thread.yield();
                else Thread.onSpinWait();
            }
            counters.add(Counter.TX_DROPPED_LINK_FULL);
        } catch (ClosedChannelException e) {
            counters.add(Counter.TX_ERRORS);
        } catch (IOException e) {
            counters.add(Counter.TX_ERRORS);
        }
    }

    /**
     * Whether the packet this device sent last still waits, untaken, in a same-host peer's ring after {@code nanos}
     * ({@link Link#peerBehind}): the peer's threads have not run since, so a missing answer is late, not lost.
     */
    boolean peerBehind(long now, long nanos) {
        return tap != null ? tap.peerBehind(now, nanos) : link != null && link.peerBehind(now, nanos);
    }

    /**
     * A QP's destination is {@code peer} from now on (null: it is destroyed), instead of {@code before} (null: none): the
     * link may prepare its way there and release the old one ({@link Link#expectPeer}, {@link Link#forgetPeer}).
     */
    void peerChanged(InetSocketAddress before, InetSocketAddress peer) {
        if (tap != null) return;
        if (peer != null) link.expectPeer(peer);
        if (before != null) link.forgetPeer(before);
    }

    /** Sends raw bytes (tests: malformed packets). */
    void sendRaw(ByteBuffer b, InetSocketAddress to) throws IOException {
        link.send(b, to);
    }

    // ---- corked posts ---------------------------------------------------------------------------------

    /** QPs whose posts their cork holds ({@link SendCork}), released by the next poll or wait on this device. */
    private final Object corkLock = new Object();

    private SoftQp[] corked = new SoftQp[16];
    /** How many of {@link #corked} are listed (volatile: a poll reads it without the lock). */
    private volatile int corkedCount;

    /** {@code qp} (under its monitor) holds posts: the next poll or wait on this device sends them. */
    void corked(SoftQp qp) {
        synchronized (corkLock) {
            int n = corkedCount;
            if (n == corked.length) corked = java.util.Arrays.copyOf(corked, n * 2);
            corked[n] = qp;
            corkedCount = n + 1;
        }
    }

    /** QPs listed now (tests). */
    int corkedQps() {
        return corkedCount;
    }

    /** A CQ of this device is polled, or a thread is about to wait for an event: the posts corks hold leave now. */
    void releaseCorks() {
        while (corkedCount > 0) {
            SoftQp qp;
            synchronized (corkLock) {
                int n = corkedCount;
                if (n == 0) return;
                qp = corked[n - 1];
                corked[n - 1] = null;
                corkedCount = n - 1;
            }
            qp.cork.release(); // outside the list's lock: a QP's monitor is taken before it (corked)
        }
    }

    // ---- progress ---------------------------------------------------------------------------------------

    /** A CQ of this device is being polled: the polling thread handles what the link holds ({@link ProgressEngine#progressFromPoll}). */
    void progressFromPoll() {
        progress.progressFromPoll();
    }

    /** A thread is about to block for a completion event of this device: the receive thread takes over now. */
    void pollerWaits() {
        releaseCorks();
        progress.pollerWaits(clock.nanoTime());
    }

    /**
     * A thread about to block for a completion event stands in for the receive thread until {@code done} or
     * {@code timeoutNanos} ({@link ProgressEngine#standIn}).
     *
     * @return false when it did not (another thread stands in): the caller waits its own way
     */
    boolean standIn(java.util.function.BooleanSupplier done, long timeoutNanos) {
        releaseCorks();
        return progress.standIn(done, timeoutNanos);
    }

    /** Ends the wait of a thread standing in ({@link ProgressEngine#wakeStandIn}). */
    void wakeStandIn(Thread waiter) {
        progress.wakeStandIn(waiter);
    }

    /** Called by a QP (on a driving thread, see {@link #driving}) that owes its peer an ACK at the end of this burst. */
    void ackLater(SoftQp qp) {
        progress.ackLater(qp);
    }

    /** A QP whose ACK is owed got another packet that asks for one ({@link ProgressEngine#ackAgain}). */
    void ackAgain(SoftQp qp) {
        progress.ackAgain(qp);
    }

    /** Whether the calling thread is driving the device now (handling received packets): ACKs wait for the end of its burst. */
    boolean driving() {
        return progress.driving();
    }

    /** Runs {@code body} as the receive thread's drive runs its burst (tests): the ACKs it owes wait for the end. */
    void driveForTest(Runnable body) {
        progress.driveForTest(body);
    }

    /** Runs {@code body} as a polling thread's drive runs its burst (tests; {@link ProgressEngine#pollDriveForTest}). */
    void pollDriveForTest(Runnable body) {
        progress.pollDriveForTest(body);
    }

    /** A QP (under its lock) has more READ responses to send than one turn allows: it gets another turn. */
    void requestTurn(SoftQp qp) {
        turns.request(qp);
    }

    /** A detached transport's pass of READ-response turns (tests drive the engines by hand). */
    boolean runTurns() {
        return progress.runTurns();
    }

    /** Packets handled so far by polling application threads (racy read; counters and tests). */
    long rxByPoll() {
        return progress.rxByPoll();
    }

    /** Packets handled so far by the receive thread (racy read; counters and tests). */
    long rxByThread() {
        return progress.rxByThread();
    }
}
