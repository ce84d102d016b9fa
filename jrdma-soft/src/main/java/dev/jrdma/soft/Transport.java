package dev.jrdma.soft;

import dev.jrdma.soft.wire.Icrc;
import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.VerbsException;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

/**
 * The packet side of one software device (one local address and port), shared by every context opened on it:
 * the link (a {@link Link}: the UDP socket, {@link UdpLink}), who drives it, the receive thread, the QP number table and the memory key table.
 *
 * <p><b>Progress.</b> Received packets are handled by whichever thread drives the device: it drains the socket
 * (non-blocking) packet by packet, verifies
 * the ICRC, frames the packet, finds the destination QP and hands the packet to it under the QP's lock; when the
 * socket is empty it sends the ACKs that the packets of this burst asked for (ACK coalescing). An application
 * thread that polls a CQ of the device drives it itself ({@link #progressFromPoll}, the model of UCX's worker
 * progress), so a busy-polling application gets its completions on its own thread with no hand-off and no
 * wake-up. The receive thread drives it for traffic nobody polls for (event mode, passive one-sided targets):
 * it blocks in the selector while no thread has polled for {@link #POLL_QUIET_NANOS}, and stays off the socket
 * (parked, not woken by packets) while one has. Polling threads drive one at a time (a lock only ever tried, never
 * waited for); the receive thread has a {@link Receiver} of its own, so a poller descheduled in the middle of its
 * drive never stops the device. Each packet is received by exactly one thread (the socket hands it out once),
 * handled under its QP's lock, and every drive ends by sending the ACKs its packets asked for. Each receiver's
 * buffer is preallocated and direct: no allocation per packet.
 */
final class Transport {
    static final int TABLE_SIZE = 1 << 16;
    static final int FIRST_QPN = 0x11;
    static final int RX_BUF = 1 << 16;

    private static final Map<String, Transport> OPEN = new HashMap<>();
    /** Transports released but whose socket is not closed yet: opening the same address and port waits for them. */
    private static final Map<String, Transport> CLOSING = new HashMap<>();

    /** The device's address (IPv4 or IPv6): what its socket binds and the source every ICRC it sends covers. */
    final IpAddress local;
    final int port;
    private final String key;
    private int refs;

    /** The socket; null for a detached transport. */
    private final Link link;
    private final Thread rxThread;
    private volatile boolean running = true;
    /** Where a detached transport's packets go (tests); null for a socket. */
    private final PacketTap tap;
    /** Retransmission timeouts and RNR waits of this device's QPs. */
    final SoftTimer timer;
    /** Port 1's active MTU: {@code -Djrdma.soft.mtu} when set, else from the MTU of the address's interface ({@link #activeMtuFor}). */
    final Mtu activeMtu;

    /**
     * RoCE carries no authentication: whoever guesses a QP number, a PSN and an rkey can inject packets. So QP
     * numbers and key indices start at random points, and the 8-bit key part of every registration and window bind is
     * drawn at random (ReDMArk, USENIX Security 2021, exploited the predictable ones).
     */
    private static final SecureRandom RANDOM = new SecureRandom();

    final AtomicReferenceArray<SoftQp> qps = new AtomicReferenceArray<>(TABLE_SIZE);
    private int nextQpn = FIRST_QPN + RANDOM.nextInt(TABLE_SIZE - FIRST_QPN);
    final AtomicReferenceArray<Object> keys = new AtomicReferenceArray<>(TABLE_SIZE);
    private int nextKeyIndex = 1 + RANDOM.nextInt(TABLE_SIZE - 1);
    /** The key byte last handed out for each key index: the next one differs, so an old key never names a new owner. */
    private final byte[] lastKeyByte = new byte[TABLE_SIZE];

    // progress: two receivers, one for polling application threads (one at a time), one for the receive thread
    private final Receiver pollRx = new Receiver(1), threadRx = new Receiver(2);
    /**
     * The receiver whose thread takes packets from the link now (null: none), so that packets are handled in the order
     * they arrived (a batch taken by one thread and handled after a later batch another thread took looks to the QPs
     * like loss: READ re-requests, out-of-window ACKs) and two threads never contend in the link's receive call (the
     * JDK's socket lock allocates a queue node per contended call). Only ever tried, never waited for: a thread that
     * finds its holder making no progress for {@link #POLL_QUIET_NANOS} (descheduled in its drive) takes it over, and
     * first handles what is left of the holder's batch, in order ({@link Receiver#cursor}).
     */
    private final AtomicReference<Receiver> linkOwner = new AtomicReference<>();
    /**
     * {@code -Djrdma.soft.deferAcks=true}: a polling thread's coalesced ACKs wait for its next post on the QP (or its
     * next drive, or the receive thread after {@link #POLL_QUIET_NANOS}), so that a ping-pong's ACK and answer leave in
     * one system call (send_lat 64 B about 25% faster on the libc link). Off by default: an ACK then depends on the
     * application thread being scheduled again soon, and a peer with a short retransmission timeout (2 ms, retry_cnt
     * 1) on a loaded machine timed out in a test (jrdma-connect's CreditBoundTest, once, at load average 15).
     */
    private final boolean deferAcks = Boolean.getBoolean("jrdma.soft.deferAcks");
    /** When an application thread last polled a CQ of this device ({@link System#nanoTime}). */
    private volatile long lastPollNanos = System.nanoTime() - POLL_QUIET_NANOS;
    /** The receive thread is (about to be) parked off the socket because a thread polled recently. */
    private volatile boolean rxSteppedBack;
    /**
     * The receive thread is about to block until a packet arrives (or blocks): a polling thread then sends its ACKs at
     * once, since nothing would send them if the application stopped polling (it sets {@link Receiver#acksLeft} before it
     * reads this, the receive thread this before it reads that, so one of them sees the other).
     */
    private volatile boolean rxAwaiting;
    /** QPs with READ responses left to send: each gets one turn (a send window) per pass of the receive loop. */
    private SoftQp[] turns = new SoftQp[16];
    private int turnCount;

    /**
     * What one driving thread receives and handles packets with: its own receive buffer and packet view, and the QPs
     * that owe an ACK at the end of its burst. The receive thread has one; polling application threads share the
     * other, one at a time (a lock only ever tried). Two receivers, not one: a thread can be descheduled in the
     * middle of a drive (on a loaded machine for hundreds of milliseconds; under emulation, where the guest's vCPUs
     * take turns, for tens of milliseconds again and again) while it owns the link ({@link #linkOwner}), and the other
     * must still be able to take the packets then (it takes over once the holder has made no progress for
     * {@link #POLL_QUIET_NANOS}, counted in {@code rx_takeovers}); otherwise the peer's retransmissions all go
     * unanswered and its requests fail with RETRY_EXC_ERR.
     */
    private static final class Receiver {
        final AtomicBoolean lock = new AtomicBoolean();
        /** Counts this receiver's drives and the packets they handled (release stores by its owner; the other receiver's thread reads it). */
        final AtomicLong progress = new AtomicLong();
        /** The other receiver's {@link #progress} when this one last found the link owned by it, and since when it has not moved. */
        long otherProgress = -1, otherStillSince;
        /**
         * The packets of {@link #batch} received and the next one to handle ({@code count << 32 | next}): the owner and a
         * thread that takes the link over from it claim packets here, one at a time and in order.
         */
        final AtomicLong cursor = new AtomicLong();
        /**
         * Threads that took the link over from this receiver's thread and may still read its batch: its thread does not
         * receive into the batch again until they are done (it can own the link again before then, by taking it back
         * from one of them that stalls in turn).
         */
        final AtomicInteger borrowers = new AtomicInteger();

        /**
         * Claims the next packet of this receiver's batch: its index, or -1 when none is left, or when {@code taker} is
         * false and another thread has taken the batch over ({@link #seal}): from then on only that thread claims, so
         * the stalled one, back on a CPU, handles no packet after the ones the taker handled.
         */
        int claim(boolean taker) {
            while (true) {
                long v = cursor.get();
                if (v < 0 && !taker) return -1;
                int count = (int) (v >>> 32) & 0x7fff_ffff, next = (int) v;
                if (next >= count) return -1;
                if (cursor.compareAndSet(v, v + 1)) return next;
            }
        }

        /** A thread took the link over from this receiver's: the rest of the batch is the taker's ({@link #claim}). */
        void seal() {
            long v;
            do v = cursor.get(); while (v >= 0 && !cursor.compareAndSet(v, v | Long.MIN_VALUE));
        }

        /**
         * The packet this receiver's thread is handling now, {@code batchTag << 32 | slot} (the tag says whose batch:
         * a taker handles another receiver's), or 0 between packets: a thread that takes the link over handles that
         * packet again first, so its QP gets it before the later ones (RC drops the second copy as a duplicate).
         */
        final AtomicLong inHand = new AtomicLong();
        /** This receiver's tag in {@link #inHand}. */
        final long tag;

        Receiver(long tag) { this.tag = tag; }

        /** This receiver's thread is inside the link's receive call ({@link #RECEIVE_STALL_NANOS}). */
        volatile boolean inReceive;
        /** The thread driving with this receiver, or null (written by that thread only). */
        Thread owner;
        /** Where bursts are received: preallocated slots, and the link's native message headers. */
        final RxBatch batch = new RxBatch();
        final Icrc icrc = new Icrc();
        final RocePacket pkt = new RocePacket();
        /** The sender of the last packet received and its address: the JDK hands back the same object while the sender stays the same. */
        private InetSocketAddress lastFrom;
        private IpAddress lastSender;
        SoftQp[] ackPending = new SoftQp[64];
        int ackPendingCount;
        /** Drives with this receiver so far (stamps the ACKs it leaves owed). */
        long drives;
        /** Whether ACKs were left owed (volatile: the receive thread reads it before it blocks, see {@link #rxAwaiting}). */
        volatile boolean acksLeft;
        SoftQp[] turnsRunning = new SoftQp[16];
        /** Packets handled with this receiver (written by its owner only; racy reads for counters and tests). */
        long handled;
        /** The last drive left QPs wanting another turn (READ responses still to send). */
        boolean turnsLeft;

        /** The address of {@code from}: made once per change of sender, so a steady stream from one peer allocates nothing. */
        IpAddress sender(InetSocketAddress from) {
            if (from != lastFrom) {
                lastSender = IpAddress.of(from.getAddress());
                lastFrom = from;
            }
            return lastSender;
        }
    }

    final Counter.Set counters = new Counter.Set();

    /** Receives what a detached transport sends (tests: the packets the engines produce). */
    @FunctionalInterface
    interface PacketTap {
        /** The packet is {@code len} bytes from the start of {@code packet}; copy what you keep, the buffer is reused. */
        void sent(ByteBuffer packet, int len, InetSocketAddress to);
    }

    /**
     * A transport without a socket or threads, for tests that drive the engines directly: sent packets go to
     * {@code tap}, received ones are fed to {@link SoftQp#receive} by the test, and time is {@code clock} with a
     * manual timer (the test calls {@code timer.runDue()}).
     */
    static Transport detached(InetAddress address, int port, Clock clock, PacketTap tap) {
        return new Transport(address, port, clock, tap);
    }

    private Transport(InetAddress address, int port, Clock clock, PacketTap tap) {
        this.local = IpAddress.of(address);
        this.port = port;
        this.key = local.literal() + ":" + port + " (detached)";
        this.tap = tap;
        this.timer = SoftTimer.manual(clock);
        this.activeMtu = configuredMtu(address);
        this.link = null;
        running = false;
        rxThread = Thread.ofPlatform().unstarted(() -> {}); // never started: stands for the device's threads in checks
    }

    private Transport(InetAddress address, int port, UnaryOperator<Link> wrap) throws IOException {
        this.local = IpAddress.of(address);
        this.port = port;
        this.key = local.literal() + ":" + port;
        this.tap = null;
        this.timer = SoftTimer.threaded(Clock.SYSTEM, key);
        this.activeMtu = configuredMtu(address);
        this.link = wrap.apply(ShmLink.around(openLink(local.inet, port), local, port, counters));
        rxThread = Thread.ofPlatform().daemon().name("jrdma-soft-rx-" + key).unstarted(this::rxLoop);
        rxThread.start();
    }

    /**
     * The device's link: its UDP socket, sending through a {@link RawIpv4Link} where the packets may reach another RoCE
     * implementation (a non-loopback address) and the process may open a raw socket, so that their ICRC covers the
     * identification they carry. {@code jrdma.soft.ipv4.send}: {@code auto} (that rule, the default), {@code udp}
     * (always the UDP socket) or {@code raw} (the raw socket, or an error without CAP_NET_RAW). An IPv6 device always
     * sends through its UDP socket: the IPv6 ICRC covers nothing the kernel chooses.
     */
    private static Link openLink(InetAddress address, int port) throws IOException {
        String mode = System.getProperty("jrdma.soft.ipv4.send", "auto").trim();
        if (!mode.equals("auto") && !mode.equals("udp") && !mode.equals("raw"))
            throw new IOException("jrdma.soft.ipv4.send='" + mode + "' is not auto, udp or raw");
        Link udp = openUdp(address, port);
        if (!(address instanceof Inet4Address v4) || mode.equals("udp") || mode.equals("auto") && address.isLoopbackAddress()) return udp;
        RawIpv4Link raw = RawIpv4Link.open(v4, port, udp);
        if (raw != null) return raw;
        if (mode.equals("raw")) {
            udp.close();
            throw new IOException("jrdma.soft.ipv4.send=raw needs a raw socket (CAP_NET_RAW), which this process cannot open");
        }
        return udp;
    }

    /**
     * The UDP socket: through libc ({@link LinuxUdpLink}: bursts in one system call, no JDK locks) or NIO's
     * ({@link UdpLink}). {@code jrdma.soft.udp}: {@code auto} (the default: libc where available, i.e. on Linux with
     * native access enabled for this module), {@code libc} (an error where it is not) or {@code nio}. IPv6 needs libc
     * to talk to rxe or a RoCE NIC: they send a zero UDP checksum, which only a socket with {@code UDP_NO_CHECK6_RX}
     * accepts, and NIO cannot set it. Over IPv4 libc is faster (64 B send_lat 7.2-8.7 us against NIO's 8.9-10.4, with
     * udp_lat at 3.1-3.8, session 8) and allocates nothing per packet either ({@code LinuxUdpLinkTest}).
     */
    static Link openUdp(InetAddress address, int port) throws IOException {
        String impl = System.getProperty("jrdma.soft.udp", "auto").trim();
        switch (impl) {
            case "nio" -> { return new UdpLink(address, port); }
            case "libc" -> { return LinuxUdpLink.open(address, port); }
            case "auto", "" -> { return LinuxUdpLink.AVAILABLE ? LinuxUdpLink.open(address, port) : new UdpLink(address, port); }
            default -> throw new IOException("jrdma.soft.udp='" + impl + "' is not nio, libc or auto");
        }
    }

    /** What carries this device's packets (devinfo, tests): e.g. "udp 127.0.0.1:4791 (libc)". */
    String linkName() { return link == null ? "detached" : link.toString(); }

    /** Whether this device sends through a raw socket that writes the IPv4 header ({@link RawIpv4Link}). */
    boolean sendsRawIpv4() { return link instanceof RawIpv4Link || link instanceof ShmLink s && s.sendsRawIpv4(); }

    /** The same-host link when this device has one (its peers on this host reach it through a ring), else null. */
    ShmLink shmLink() {
        Link l = link instanceof FaultyLink f ? f.inner() : link;
        return l instanceof ShmLink s ? s : null;
    }

    /** The fault-injecting link when this transport has one (tests), else null. */
    FaultyLink faultyLink() { return link instanceof FaultyLink f ? f : null; }

    static Transport acquire(InetAddress address, int port) {
        return acquire(address, port, UnaryOperator.identity());
    }

    /** {@link #acquire}, with the link of a transport opened now wrapped by {@code wrap} (tests: a link that stalls or drops). */
    static Transport acquire(InetAddress address, int port, UnaryOperator<Link> wrap) {
        String k = IpAddress.of(address).literal() + ":" + port;
        synchronized (OPEN) {
            awaitClosed(k);
            Transport t = OPEN.get(k);
            if (t == null) {
                try {
                    t = new Transport(address, port, wrap);
                } catch (IOException e) {
                    throw new VerbsException("ibv_open_device", VerbsException.EBUSY,
                            "cannot bind UDP " + k + " for the soft device (" + e.getMessage() + "): another process (or kernel Soft-RoCE) "
                                    + "holds the port, or the address is not local; pick another address (soft@127.0.0.2) or port (-Djrdma.soft.port)", e);
                }
                OPEN.put(k, t);
            }
            t.refs++;
            return t;
        }
    }

    /**
     * Waits (holding OPEN's monitor, which wait gives up) until a released transport on {@code k} has closed its socket:
     * a device closed and opened again at once on the same address would otherwise fail to bind (EADDRINUSE).
     */
    private static void awaitClosed(String k) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        boolean interrupted = false;
        while (CLOSING.containsKey(k)) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) break; // its close hangs: the bind below says EBUSY
            try {
                OPEN.wait(left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    void release() {
        if (tap != null) return;
        synchronized (OPEN) {
            if (--refs > 0) return;
            OPEN.remove(key);
            CLOSING.put(key, this);
        }
        try {
            stop();
        } finally {
            synchronized (OPEN) {
                CLOSING.remove(key, this);
                OPEN.notifyAll();
            }
        }
    }

    private void stop() {
        timer.close();
        running = false;
        link.wakeup();
        LockSupport.unpark(rxThread);
        try {
            rxThread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        link.close();
    }

    Thread rxThread() { return rxThread; }

    // ---- MTU ---------------------------------------------------------------------------------------

    /**
     * The most header bytes a RoCEv2 packet carries around its payload (rxe's RXE_MAX_HDR_LENGTH: IPv6 + UDP + BTH
     * + the largest extension headers + ICRC): what the interface's MTU must hold besides the IB payload.
     */
    static final int ROCE_MAX_HEADERS = 80;

    /** The active MTU for an interface MTU, as rxe sets it: the largest IB MTU that fits beside the headers, at most 4096, at least 256. */
    static Mtu activeMtuFor(int interfaceMtu) {
        int room = interfaceMtu - ROCE_MAX_HEADERS;
        Mtu m = Mtu.MTU_256;
        for (Mtu candidate : Mtu.values()) if (candidate.bytes <= room) m = candidate;
        return m;
    }

    /** The MTU of the interface that holds {@code address}, or -1 when it cannot be found (then 1500 is assumed). */
    static int interfaceMtu(InetAddress address) {
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(address);
            // 127.0.0.2 and the like belong to the loopback interface without being listed on it
            if (ni == null && address.isLoopbackAddress()) ni = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
            return ni == null ? -1 : ni.getMTU();
        } catch (SocketException e) {
            return -1;
        }
    }

    /** {@code -Djrdma.soft.mtu} (256..4096) when set and valid, else the MTU that the interface of {@code address} allows. */
    static Mtu configuredMtu(InetAddress address) {
        String s = System.getProperty("jrdma.soft.mtu");
        if (s != null && !s.isBlank()) {
            try {
                return Mtu.ofBytes(Integer.parseInt(s.trim()));
            } catch (IllegalArgumentException e) {
                System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING,
                        "-Djrdma.soft.mtu=" + s + " is not 256, 512, 1024, 2048 or 4096: the interface's MTU decides");
            }
        }
        int ifMtu = interfaceMtu(address);
        return activeMtuFor(ifMtu > 0 ? ifMtu : 1500);
    }

    // ---- tables ------------------------------------------------------------------------------------

    synchronized int addQp(SoftQp qp) {
        for (int i = 0; i < TABLE_SIZE; i++) {
            int n = nextQpn;
            nextQpn = nextQpn + 1 >= TABLE_SIZE ? FIRST_QPN : nextQpn + 1;
            if (qps.get(n) == null) {
                qps.set(n, qp);
                return n;
            }
        }
        throw new VerbsException("ibv_create_qp", VerbsException.ENOMEM, "the soft device has no free QP number (65000 QPs open): close some");
    }

    void removeQp(int qpn, SoftQp qp) { qps.compareAndSet(qpn & (TABLE_SIZE - 1), qp, null); }

    /** Reserves a key index (the upper 24 bits of an lkey/rkey; only 16 are used). */
    synchronized int addKey(Object owner) {
        for (int i = 0; i < TABLE_SIZE; i++) {
            int n = nextKeyIndex;
            nextKeyIndex = nextKeyIndex + 1 >= TABLE_SIZE ? 1 : nextKeyIndex + 1;
            if (keys.get(n) == null) {
                keys.set(n, owner);
                return n;
            }
        }
        throw new VerbsException("ibv_reg_mr", VerbsException.ENOMEM, "the soft device has no free memory key (65000 MRs/MWs registered): deregister some");
    }

    void removeKey(int index, Object owner) { keys.compareAndSet(index, owner, null); }

    /** A new key for {@code index}: a random 8-bit key part, different from the last one used with this index. */
    synchronized int freshKey(int index) {
        int last = lastKeyByte[index] & 0xFF, b;
        do {
            b = RANDOM.nextInt(256);
        } while (b == last);
        lastKeyByte[index] = (byte) b;
        return (index << 8) | b;
    }

    /** An application chose {@code key} (a type 2 bind with its own key byte): the next fresh key differs from it. */
    synchronized void noteKey(int key) {
        int index = key >>> 8;
        if (index < TABLE_SIZE) lastKeyByte[index] = (byte) key;
    }

    /** The MR or MW a key names, or null. */
    Object keyOwner(int key) {
        int idx = key >>> 8;
        return idx < TABLE_SIZE ? keys.get(idx) : null;
    }

    // ---- sending -----------------------------------------------------------------------------------

    /** Sends {@code len} bytes from the start of {@code b} (a QP's transmit buffer) to {@code to}. */
    void send(ByteBuffer b, int len, InetSocketAddress to) {
        if (tap != null) {
            counters.add(Counter.TX_PACKETS);
            tap.sent(b, len, to);
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
            for (int i = 0; i < n; i++) send(batch.buffers[i], batch.lengths[i], to);
            return;
        }
        int sent = 0;
        try {
            for (int tries = 0; sent < n && tries < 10_000; tries++) {
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
        } catch (IOException e) {
            // counted below; a closed link (the device was released) ends here too
        }
        if (sent < n) counters.add(Counter.TX_ERRORS, n - sent);
    }

    /** Tests only: drop one in {@code n} packets sent, at random (0 = none), to exercise retransmission. */
    volatile int testDropOneIn;

    private void sendLoop(ByteBuffer b, InetSocketAddress to) {
        int drop = testDropOneIn;
        if (drop > 0 && java.util.concurrent.ThreadLocalRandom.current().nextInt(drop) == 0) return;
        try {
            for (int tries = 0; tries < 10_000; tries++) {
                if (link.send(b, to)) {
                    counters.add(Counter.TX_PACKETS);
                    return;
                }
                if (tries > 100) Thread.yield(); else Thread.onSpinWait();
            }
            counters.add(Counter.TX_ERRORS);
        } catch (ClosedChannelException e) {
            counters.add(Counter.TX_ERRORS);
        } catch (IOException e) {
            counters.add(Counter.TX_ERRORS);
        }
    }

    /** Sends raw bytes (tests: malformed packets). */
    void sendRaw(ByteBuffer b, InetSocketAddress to) throws IOException { link.send(b, to); }

    // ---- receiving ---------------------------------------------------------------------------------

    /** Called by a QP (on a driving thread, see {@link #driving}) that owes its peer an ACK at the end of this burst. */
    void ackLater(SoftQp qp) {
        Receiver r = pollRx.owner == Thread.currentThread() ? pollRx : threadRx;
        if (r.ackPendingCount == r.ackPending.length) r.ackPending = java.util.Arrays.copyOf(r.ackPending, r.ackPending.length * 2);
        r.ackPending[r.ackPendingCount++] = qp;
        if (r == pollRx) qp.ackDrive = r.drives; else qp.ackRxDrive = r.drives;
    }

    /**
     * A QP whose ACK is owed already got another packet that asks for one: when the receive thread handles it while a
     * polling thread's receiver holds the ACK (it left it owed, or is descheduled in its drive), the receive thread
     * sends it too at the end of its burst, once per burst.
     */
    void ackAgain(SoftQp qp) {
        Receiver r = threadRx;
        if (r.owner != Thread.currentThread() || qp.ackRxDrive == r.drives) return;
        ackLater(qp);
    }

    /** Runs {@code body} as the receive thread's drive runs its burst (tests): the ACKs it owes wait for the end. */
    void driveForTest(Runnable body) {
        threadRx.owner = Thread.currentThread();
        threadRx.drives++;
        try {
            body.run();
        } finally {
            threadRx.owner = null;
            flushAcks(threadRx);
        }
    }

    /** Whether the calling thread is driving the device now (handling received packets): ACKs wait for the end of its burst. */
    boolean driving() {
        Thread t = Thread.currentThread();
        return pollRx.owner == t || threadRx.owner == t;
    }

    /** An application thread holds the drive for at most this many packets per poll, so poll returns promptly. */
    static final int POLL_BUDGET = 64;
    /** The receive thread's batch between two looks at whether it should step back. */
    private static final int RX_BUDGET = 256;
    /**
     * The receive thread stays off the socket until no application thread has polled for this long (or one that
     * polled starts waiting for a completion event): the longest a packet can wait when a poller stops polling
     * without waiting for an event, e.g. to spin on memory that a peer writes.
     */
    static final long POLL_QUIET_NANOS = 1_000_000;
    /**
     * How long a thread descheduled inside the link's receive call keeps the link: the packets it is taking are older
     * than any a taker would receive, so a takeover then reorders them (a PSN gap at their QPs). Long enough for most
     * stalls under emulation, far below a retransmission timeout. In the guest ({@code read-bw-probe.sh}, 100 READs of
     * 64 KiB from rxe): READ re-requests per run 0-60 (mean 18) with the 1 ms of {@link #POLL_QUIET_NANOS}, 0-30 (mean
     * 7.5, 0 in 7 of 12 runs) with this.
     */
    static final long RECEIVE_STALL_NANOS = 10_000_000;

    /**
     * A CQ of this device is being polled: handle what the socket holds on the polling thread (no hand-off to
     * the receive thread). Does nothing when another thread drives the device at this moment: that one's
     * completions become visible to the next poll.
     */
    void progressFromPoll() {
        if (link == null) return;
        long now = System.nanoTime();
        lastPollNanos = now;
        drive(pollRx, POLL_BUDGET, now);
    }

    /**
     * A thread is about to block for a completion event of this device: the receive thread takes over now (it may
     * be parked because that thread polled a moment ago), so the event's packet does not wait for the quiet time.
     */
    void pollerWaits() {
        if (link == null) return;
        lastPollNanos = System.nanoTime() - POLL_QUIET_NANOS;
        if (rxSteppedBack) LockSupport.unpark(rxThread);
    }

    /**
     * Receives and handles up to {@code budget} packets with {@code r}, then sends the coalesced ACKs; never blocks.
     * It drives as the link's owner ({@link #linkOwner}), or takes the link over when the other receiver's thread owns
     * it and has made no progress (no drive begun, no packet claimed) for {@link #POLL_QUIET_NANOS}: that thread is
     * descheduled in its drive. A takeover first handles the rest of the stalled thread's batch, so the order of
     * arrival holds: the packet the stalled thread is in the middle of again ({@link #repeatInHand}), then the ones it
     * has not claimed (from the takeover on only the taker claims them: {@link Receiver#seal}).
     *
     * @param now {@link System#nanoTime} at the call
     * @return the number of packets handled, or -1 when another thread is driving with {@code r} or owns the link
     */
    private int drive(Receiver r, int budget, long now) {
        if (!r.lock.compareAndSet(false, true)) return -1;
        Receiver other = r == pollRx ? threadRx : pollRx;
        boolean owner = linkOwner.compareAndSet(null, r);
        if (!owner) {
            boolean takeOver = holderStalled(r, other, now);
            if (takeOver) {
                other.borrowers.incrementAndGet(); // before the takeover: once the link is ours its owner may look
                takeOver = linkOwner.compareAndSet(other, r);
                if (!takeOver) other.borrowers.decrementAndGet();
            }
            if (!takeOver) {
                r.lock.set(false); // the other thread drives now: what it handles shows in the next poll
                return -1;
            }
        }
        r.owner = Thread.currentThread();
        r.drives++;
        r.progress.lazySet(r.progress.get() + 1);
        int n = 0;
        try {
            if (!owner) {
                counters.add(Counter.RX_TAKEOVERS);
                try {
                    other.seal(); // what the stalled thread received and has not handled yet is ours, in order
                    repeatInHand(r, other);
                    n += handleBatch(r, other);
                } finally {
                    other.borrowers.decrementAndGet();
                }
            }
            // a poller spins on the readiness check, outside the link's receive path (see Link.readable)
            boolean look;
            try {
                look = r != pollRx || link.readable();
            } catch (IOException | RuntimeException | Error e) {
                look = false; // the device was released, or the link fails: the receive thread's drive counts it
            }
            RxBatch batch = r.batch;
            // the owner check: a thread that took the link over from this one has it now, with the rest of this batch
            while (look && n < budget && linkOwner.get() == r && r.borrowers.get() == 0) {
                int got;
                try {
                    r.inReceive = true;
                    try {
                        got = link.receive(batch);
                        r.cursor.set((long) got << 32); // published for a takeover: got packets, the next is the first
                    } finally {
                        r.inReceive = false;
                    }
                } catch (ClosedChannelException e) {
                    break; // the device was released
                } catch (IOException | RuntimeException | Error e) {
                    // a failing link must not throw into an application's poll: counted, the next drive tries again
                    counters.add(Counter.RX_DROPPED);
                    if (!(e instanceof IOException)) System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": receiving failed", e);
                    break;
                }
                n += handleBatch(r, r);
                if (got == 0 || batch.drained) break; // the link said it is empty: no call to find that out again
            }
            // with jrdma.soft.deferAcks a polling application thread leaves the ACKs of this drive owed: its next post on
            // the QP sends the ACK with the request, in one system call (a ping-pong's answer); a later drive sends them otherwise
            if (deferAcks && r == pollRx && n > 0) deferAcks(r); else flushAcks(r);
            r.turnsLeft = runTurns(r); // READ responses paced per pass: QPs that asked get their next turn now
        } finally {
            linkOwner.compareAndSet(r, null); // unless it was taken over
            r.owner = null;
            r.lock.set(false);
        }
        return n;
    }

    /** Handles, with {@code r}, the packets of {@code from}'s batch that nobody has claimed yet; returns how many. */
    private int handleBatch(Receiver r, Receiver from) {
        RxBatch batch = from.batch;
        boolean taker = r != from;
        int n = 0;
        for (int i; (i = from.claim(taker)) >= 0; ) {
            n++;
            r.handled++;
            r.progress.lazySet(r.progress.get() + 1);
            r.inHand.lazySet(from.tag << 32 | i);
            try {
                handle(r, batch.sources[i], batch.buffers[i], batch.segments[i], batch.lengths[i], false);
            } catch (RuntimeException | Error e) {
                // never let one packet stop the device, nor throw into an application's poll
                counters.add(Counter.RX_DROPPED);
                System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": packet handling failed", e);
            }
            r.inHand.lazySet(0);
        }
        return n;
    }

    /**
     * A takeover: handles again, with {@code r} and the slot's second view, the RC packet {@code stalled}'s thread is
     * in the middle of, so that its QP gets it before the ones {@code r} takes next (the stalled thread's own copy, when
     * it gets on, or this one, is then an RC duplicate: re-ACKed, never executed twice). Not a UD or UC packet: those
     * have no duplicate detection, and the QP would get it twice.
     */
    private void repeatInHand(Receiver r, Receiver stalled) {
        long h = stalled.inHand.get();
        if (h == 0) return;
        RxBatch batch = (h >>> 32 == pollRx.tag ? pollRx : threadRx).batch;
        int i = (int) h;
        try {
            if (handle(r, batch.sources[i], batch.takerViews[i], batch.segments[i], batch.lengths[i], true)) counters.add(Counter.RX_TAKEOVER_REPEATS);
        } catch (RuntimeException | Error e) {
            System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": packet handling failed", e);
        }
    }

    /**
     * The link is owned by {@code other}'s thread: whether that thread has made no progress for
     * {@link #POLL_QUIET_NANOS}, as far as {@code r}'s thread has watched it (each failed try looks once).
     */
    private static boolean holderStalled(Receiver r, Receiver other, long now) {
        long p = other.progress.get();
        if (p != r.otherProgress) {
            r.otherProgress = p;
            r.otherStillSince = now;
            return false;
        }
        return now - r.otherStillSince >= (other.inReceive ? RECEIVE_STALL_NANOS : POLL_QUIET_NANOS);
    }

    /** Whether the receive thread still runs (tests: no fault may end it). */
    boolean rxThreadAlive() { return rxThread.isAlive(); }

    /** Packets handled so far by polling application threads (racy read; counters and tests). */
    long rxByPoll() { return pollRx.handled; }

    /** Packets handled so far by the receive thread (racy read; counters and tests). */
    long rxByThread() { return threadRx.handled; }

    /** A QP (under its lock) has more READ responses to send than one turn allows: it gets another turn. */
    void requestTurn(SoftQp qp) {
        synchronized (turnsLock) {
            if (turnCount == turns.length) turns = java.util.Arrays.copyOf(turns, turns.length * 2);
            turns[turnCount++] = qp;
        }
    }

    private final Object turnsLock = new Object();

    /** A detached transport's pass of READ-response turns (tests drive the engines by hand). */
    boolean runTurns() { return runTurns(threadRx); }

    /** Gives every QP that asked for it one more turn (with {@code r}'s scratch array); returns whether some still want more. */
    private boolean runTurns(Receiver r) {
        int n;
        SoftQp[] running;
        synchronized (turnsLock) {
            n = turnCount;
            if (n == 0) return false;
            if (r.turnsRunning.length < n) r.turnsRunning = new SoftQp[turns.length];
            running = r.turnsRunning;
            System.arraycopy(turns, 0, running, 0, n);
            java.util.Arrays.fill(turns, 0, n, null);
            turnCount = 0;
        }
        for (int i = 0; i < n; i++) {
            SoftQp qp = running[i];
            running[i] = null;
            try {
                qp.continueReplies();
            } catch (RuntimeException | Error e) {
                counters.add(Counter.RX_DROPPED);
                System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": sending replies of " + qp + " failed", e);
            }
        }
        synchronized (turnsLock) {
            return turnCount > 0;
        }
    }

    private void rxLoop() {
        link.prepare(threadRx.batch);
        while (running) {
            try {
                rxSteppedBack = true; // before reading lastPollNanos: pollerWaits writes and reads them the other way round
                long sincePoll = System.nanoTime() - lastPollNanos;
                if (sincePoll < POLL_QUIET_NANOS) {
                    // an application thread polls and takes the packets itself: stay off the socket (no wake-up per
                    // packet, which on a small machine preempts the poller) until it has not polled for a while
                    LockSupport.parkNanos(this, POLL_QUIET_NANOS - sincePoll);
                    continue;
                }
                rxSteppedBack = false;
                flushDeferredAcks();
                // the poller that polled last may still be inside its drive (descheduled): drive takes over then
                int n = drive(threadRx, RX_BUDGET, System.nanoTime());
                if (n < 0) { // a poller holds the link, still making progress: look again shortly
                    LockSupport.parkNanos(this, 50_000);
                    continue;
                }
                if (n == RX_BUDGET || threadRx.turnsLeft) continue; // more waiting, or READ responses to send: serve the socket first
                if (running && System.nanoTime() - lastPollNanos >= POLL_QUIET_NANOS) {
                    rxAwaiting = true;
                    try {
                        if (pollRx.acksLeft) { // a poller's drive left ACKs owed just now: send them first (that poller may hold them: not too eagerly)
                            LockSupport.parkNanos(this, 20_000);
                            continue;
                        }
                        link.await();
                    } finally {
                        rxAwaiting = false;
                    }
                }
            } catch (ClosedChannelException | java.nio.channels.ClosedSelectorException e) {
                return;
            } catch (IOException e) {
                if (!running) return;
                counters.add(Counter.RX_DROPPED);
            } catch (RuntimeException | Error e) {
                counters.add(Counter.RX_DROPPED);
                System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": receive loop failed", e);
            }
        }
    }

    /**
     * Checks one received packet and hands it to its QP; each packet that is not delivered is counted in one drop
     * counter. {@code repeat}: the packet is handled a second time at a takeover ({@link #repeatInHand}): counted
     * nowhere (its first handling counts it), and delivered only when it is an RC packet.
     *
     * @return whether the packet reached its QP
     */
    private boolean handle(Receiver r, InetSocketAddress from, ByteBuffer buf, MemorySegment seg, int len, boolean repeat) {
        if (len == RxBatch.DOORBELL) return false; // it woke the receive thread for the same-host ring: done (counted by the link)
        if (!repeat) counters.add(Counter.RX_PACKETS);
        if (len == RxBatch.TRUNCATED) return drop(Counter.RX_MALFORMED, repeat);
        IpAddress src = r.sender(from);
        int srcPort = from.getPort();
        if (src.isIpv4() != local.isIpv4()) return drop(Counter.RX_MALFORMED, repeat); // a socket of one family hears no other; never trust that blindly
        if (src.isIpv4()) {
            // the IPv4 identification is not visible to a UDP socket: accept the packet if some identification makes
            // its ICRC right (16 of the 32 check bits remain; the kernel has checked the UDP checksum when one was set)
            int ipId = r.icrc.recoverId(buf, 0, len, src.ipv4(), local.ipv4(), srcPort, port);
            if (ipId == Icrc.NO_ID) return drop(Counter.RX_BAD_ICRC, repeat);
            if (ipId != 0 && !repeat) counters.add(Counter.RX_ICRC_IPV4_ID_RECOVERED);
        } else if (!r.icrc.verifyIpv6(buf, 0, len, src.hi, src.lo, local.hi, local.lo, srcPort, port)) {
            return drop(Counter.RX_BAD_ICRC, repeat); // over IPv6 the whole ICRC is checked: nothing in it is the kernel's choice
        }
        if (r.pkt.wrap(buf, 0, len) != RocePacket.OK) return drop(Counter.RX_MALFORMED, repeat);
        if (repeat && !Opcode.isRc(r.pkt.opcode())) return false; // UD and UC have no duplicate detection
        int qpn = r.pkt.destQp();
        SoftQp qp = qpn < TABLE_SIZE ? qps.get(qpn) : null;
        if (qp == null) return drop(Counter.RX_UNKNOWN_QP, repeat);
        qp.receive(r.pkt, seg, src, srcPort);
        return true;
    }

    private boolean drop(Counter reason, boolean repeat) {
        if (!repeat) counters.add(reason);
        return false;
    }

    /**
     * The end of a polling thread's drive that received packets: the ACKs owed since an earlier drive are sent now,
     * those of this drive stay owed one drive more (or until a post on their QP, or a drive that finds the link empty,
     * or the receive thread, once nobody has polled for {@link #POLL_QUIET_NANOS}: an ACK waits at most about that long,
     * below the shortest retransmission timeout).
     */
    private void deferAcks(Receiver r) {
        int kept = 0;
        long now = r.drives;
        for (int i = 0; i < r.ackPendingCount; i++) {
            SoftQp qp = r.ackPending[i];
            r.ackPending[i] = null;
            if (!qp.ackOwed()) continue;               // a post on the QP sent it
            if (qp.ackDrive != now) flushAck(qp);      // owed since an earlier drive
            else if (qp.ackKept != now) {              // (a QP whose ACK a post sent and this drive owes again is listed twice)
                qp.ackKept = now;
                r.ackPending[kept++] = qp;
            }
        }
        r.ackPendingCount = kept;
        if (kept > 0) {
            r.acksLeft = true;
            if (rxAwaiting) flushAcks(r);
        }
    }

    /** The receive thread takes over: ACKs a polling thread left owed are sent now (when no poller drives at this moment). */
    private void flushDeferredAcks() {
        Receiver r = pollRx;
        if (!r.acksLeft || !r.lock.compareAndSet(false, true)) return;
        try {
            flushAcks(r);
        } finally {
            r.lock.set(false);
        }
    }

    private void flushAck(SoftQp qp) {
        try {
            qp.flushAck();
        } catch (RuntimeException | Error e) {
            counters.add(Counter.RX_DROPPED);
            System.getLogger("dev.jrdma.soft").log(System.Logger.Level.WARNING, "soft device " + key + ": sending an ACK of " + qp + " failed", e);
        }
    }

    private void flushAcks(Receiver r) {
        if (r.acksLeft) r.acksLeft = false;
        for (int i = 0; i < r.ackPendingCount; i++) {
            SoftQp qp = r.ackPending[i];
            r.ackPending[i] = null;
            flushAck(qp);
        }
        r.ackPendingCount = 0;
    }
}
