package dev.jrdma.soft;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The device's UDP socket through libc (Linux, FFM), for speed: a burst of datagrams is received with one
 * {@code recvmmsg} (a poller learns that the socket is empty from the same call, with no readiness check and no
 * trailing empty receive), and no JDK lock is held around the system calls, so a thread descheduled inside one
 * stops no other (the kernel hands each datagram to exactly one receiver; each datagram is sent whole). Chosen by
 * {@link Transport} where it can be ({@link #AVAILABLE}: Linux, native access enabled for this module), else the
 * {@link UdpLink} of NIO carries the same packets. Per-thread scratch memory for sends, per-{@link RxBatch} message
 * headers for receives: nothing is allocated per packet (a sender's {@link InetSocketAddress} is made once per new
 * sender of a batch).
 */
final class LinuxUdpLink implements Link {
    private static final int AF_INET = 2, AF_INET6 = 10, SOCK_DGRAM = 2, SOCK_NONBLOCK = 0x800, SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1, SO_SNDBUF = 7, SO_RCVBUF = 8;
    private static final int IPPROTO_UDP = 17, UDP_NO_CHECK6_RX = 102, UDP_SEGMENT = 103;
    private static final int EINVAL = 22, EIO = 5, ENOPROTOOPT = 92;
    /**
     * What one generic-segmentation send may carry: the kernel's UDP_MAX_SEGMENTS (64 before Linux 6.8) and a total
     * under the largest UDP payload.
     */
    private static final int GSO_SEGMENTS = 64, GSO_BYTES = 65_000;
    /** CMSG_SPACE(sizeof(u16)) and CMSG_LEN(sizeof(u16)) on LP64: the UDP_SEGMENT control message. */
    private static final int CMSG_U16 = 24, CMSG_U16_LEN = 18;
    /**
     * {@code -Djrdma.soft.gso}: whether a run of equal-size packets leaves as one segmented send. Over IPv4 the kernel
     * gives the segments after the first incrementing IP identifications, which the ICRC covers: a jrdma receiver
     * recovers them ({@code rx_icrc_ipv4_id_recovered}), rxe and NICs drop them as bad ICRCs. {@code auto} (the
     * default): only batches for a peer known to be a jrdma device ({@link TxBatch#jrdmaPeer}, negotiated in band with
     * the selective-repeat mode), which also leave through the UDP socket rather than the raw one ({@link RawIpv4Link});
     * {@code on}: every batch (links between jrdma peers only); {@code off}: none, and every packet leaves as it would
     * for rxe or a NIC (what a capture of the interop wire needs: {@code NetnsTest}).
     */
    static final String GSO_MODE = System.getProperty("jrdma.soft.gso", "auto").trim();

    static final boolean GSO_WANTED = "on".equals(GSO_MODE);
    /**
     * {@code -Djrdma.soft.gro}: whether the socket takes coalesced datagrams ({@code UDP_GRO}: a segmented send of a
     * jrdma peer, or a NIC's GRO of one flow, arrives as one message of up to 64 KiB, split here by its segment size;
     * {@link GroReceiver}). {@code on} (the default) for every peer: the kernel coalesces only datagrams of one sender
     * and one IP header (TOS, so ECN, and TTL alike), and each packet keeps its own ICRC (the IPv4 identification is
     * recovered per packet as before); each burst then lands in 64 KiB areas and is copied into the packet slots.
     * {@code off}: the kernel cuts a segmented send back into datagrams at the socket, one queue entry each.
     */
    static final boolean GRO_WANTED =
            !"off".equals(System.getProperty("jrdma.soft.gro", "on").trim());

    private static final int IPPROTO_IP = 0, IP_TOS = 1, IPPROTO_IPV6 = 41, IPV6_FLOWINFO_SEND = 33, IPV6_TCLASS = 67;
    /** Each received datagram's TOS / traffic class as a control message: its ECN field ({@link RxBatch#ecn}). */
    private static final int IP_RECVTOS = 13, IPV6_RECVTCLASS = 66, RX_CONTROL = 32;

    private static final int MSG_DONTWAIT = 0x40;
    static final int MSG_TRUNC = 0x20;
    private static final int EAGAIN = 11, EINTR = 4, ENOBUFS = 105, EFD_NONBLOCK = 0x800, EFD_CLOEXEC = 0x80000;
    private static final short POLLIN = 1;
    /** sizeof(struct sockaddr_in6), room for either family. */
    static final int SOCKADDR = 28;
    /** The largest UDP payload: the bounce buffer of heap buffers. */
    private static final int BOUNCE = 1 << 16;
    /** Buffers, destinations and senders a thread or batch remembers (their native forms made once). */
    private static final int CACHED = 8;
    /** struct iovec, struct msghdr and struct mmsghdr on LP64 Linux (x86-64, AArch64). */
    static final int IOVEC = 16, MSGHDR = 56, MMSGHDR = 64;

    static final int MSG_NAME = 0,
            MSG_NAMELEN = 8,
            MSG_IOV = 16,
            MSG_IOVLEN = 24,
            MSG_CONTROL = 32,
            MSG_CONTROLLEN = 40,
            MSG_FLAGS = 48,
            MSG_LEN = 56;
    /** CMSG_SPACE(sizeof(int)) on LP64: a struct cmsghdr (len 8, level 4, type 4) and an int, padded to 8. */
    private static final int CMSG_INT = 24;

    private static final ValueLayout.OfShort NET_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt NET_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final int fd, wakeFd, family;
    private final Clock clock;
    private final String name;
    /** Calls inside the socket now: {@link #close} waits for them before it closes the descriptor (never reused under a call). */
    private final AtomicInteger inside = new AtomicInteger();

    private volatile boolean closed;
    /** The receive thread's wait: the socket and the wake-up eventfd. */
    private final MemorySegment pollFds, wakeWord;
    /** {@link #await(long)}'s limit, a {@code struct timespec} (written by the thread that holds the device's duty). */
    private final MemorySegment timeout;
    /** The 1 that {@link #wakeup} adds to the eventfd (made once: a same-host doorbell wakes the link per burst). */
    private final MemorySegment wakeOne;

    private final ThreadLocal<Scratch> scratch = ThreadLocal.withInitial(Scratch::new);
    /** Whether every batch goes out with UDP generic segmentation (off for good once the kernel refuses it). */
    private volatile boolean gso = GSO_WANTED;
    /** Whether batches for jrdma peers go out with it ({@link #GSO_MODE} auto; off for good once the kernel refuses it). */
    private volatile boolean gsoForJrdmaPeers = "auto".equals(GSO_MODE);
    /** Whether the socket takes coalesced datagrams ({@link GroBatch}). */
    private volatile boolean gro;
    /** A thread is in {@link #pollFor} (or about to be): a receive that leaves packets in a landing area wakes it. */
    private volatile boolean awaiting;
    /** Hands the packets of coalesced datagrams out when {@link #gro} is on. */
    private final GroReceiver coalesced = new GroReceiver(this);
    /** Messages sent with UDP generic segmentation (tests, reports). */
    private final java.util.concurrent.atomic.AtomicLong gsoSends = new java.util.concurrent.atomic.AtomicLong();

    /** What one thread's sends and single receives use. */
    private static final class Scratch {
        final Arena arena = Arena.ofAuto();
        final MemorySegment from = arena.allocate(SOCKADDR, 8), fromLen = arena.allocate(4, 4);
        /**
         * The last destinations, their encoded sockaddrs (an IPv6 one with the flow label) and the control messages
         * that set their traffic class (null for traffic class 0, the socket's): a QP sends to the same
         * InetSocketAddress every time.
         */
        final InetSocketAddress[] destinations = new InetSocketAddress[CACHED];

        final MemorySegment[] encoded = new MemorySegment[CACHED], controls = new MemorySegment[CACHED];
        int nextDestination;
        /** The header and iovec of a send with control messages. */
        final MemorySegment message = arena.allocate(MSGHDR, 8), iovec = arena.allocate(IOVEC, 8);
        /**
         * The message headers, iovecs and control messages of a {@code sendmmsg}, made on the thread's first one; how
         * many packets each message carries.
         */
        MemorySegment batchHeaders, batchIovecs, batchControls;

        final int[] batchPackets = new int[TxBatch.CAPACITY];

        /** The slot of {@code to} in {@link #encoded} and {@link #controls}, made on first use. */
        int destination(InetSocketAddress to, int family) throws IOException {
            for (int i = 0; i < CACHED; i++) if (destinations[i] == to) return i;
            if (family == AF_INET && !(to.getAddress() instanceof Inet4Address))
                throw new IOException("an IPv4 socket cannot send to " + to);
            int i = nextDestination;
            nextDestination = (i + 1) % CACHED;
            MemorySegment sa = arena.allocate(SOCKADDR, 8);
            encoded[i] = sa.asSlice(0, encode(sa, to.getAddress(), to.getPort()));
            if (family == AF_INET6)
                sa.set(NET_INT, 4, Destination.flowLabel(to)); // sin6_flowinfo (IPV6_FLOWINFO_SEND is on)
            int trafficClass = Destination.trafficClass(to);
            controls[i] = trafficClass != 0 ? trafficClassControl(Ecn.outgoing(trafficClass), family) : null;
            destinations[i] = to;
            return i;
        }

        /** An IPV6_TCLASS (IPv4: IP_TOS) control message with {@code trafficClass}. */
        private MemorySegment trafficClassControl(int trafficClass, int family) {
            MemorySegment c = arena.allocate(CMSG_INT, 8);
            c.set(ValueLayout.JAVA_LONG, 0, 16 + 4); // CMSG_LEN(sizeof(int))
            c.set(ValueLayout.JAVA_INT, 8, family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP);
            c.set(ValueLayout.JAVA_INT, 12, family == AF_INET6 ? IPV6_TCLASS : IP_TOS);
            c.set(ValueLayout.JAVA_INT, 16, trafficClass);
            return c;
        }

        final SockaddrCache sources = new SockaddrCache();
        /** The last buffers passed and the native addresses of their element 0 (each QP passes its own transmit buffer every time). */
        final ByteBuffer[] buffers = new ByteBuffer[CACHED];

        final long[] bases = new long[CACHED];
        int nextSlot;
        /** Where a heap buffer's bytes go through (tests send and receive heap buffers). */
        final MemorySegment bounce = arena.allocate(BOUNCE, 8);

        /** The native address of {@code b}'s position; a heap buffer's bytes are copied to {@link #bounce} first when {@code out}. */
        long address(ByteBuffer b, boolean out) {
            if (!b.isDirect()) {
                if (out) MemorySegment.copy(MemorySegment.ofBuffer(b), 0, bounce, 0, Math.min(b.remaining(), BOUNCE));
                return bounce.address();
            }
            for (int i = 0; i < CACHED; i++) if (buffers[i] == b) return bases[i] + b.position();
            int i = nextSlot;
            nextSlot = (i + 1) % CACHED;
            bases[i] = MemorySegment.ofBuffer(b).address() - b.position();
            buffers[i] = b;
            return bases[i] + b.position();
        }
    }

    /** A batch's message headers (one mmsghdr, iovec and sockaddr per slot) and its decoded senders. */
    private static final class BatchState {
        final MemorySegment headers, iovecs, names, controls;
        final SockaddrCache sources = new SockaddrCache();
        /** Headers the last {@code recvmmsg} wrote: their in/out lengths are reset before the next ({@link #prepare}). */
        int filled = RxBatch.CAPACITY;

        /**
         * Resets the name and control lengths the last {@code recvmmsg} overwrote (the kernel writes only the headers
         * it filled, and the next one's if a failure cut the call short in it): an empty poll rewrites one.
         */
        void prepare() {
            for (int i = 0, end = Math.min(filled + 1, RxBatch.CAPACITY); i < end; i++) {
                headers.set(ValueLayout.JAVA_INT, (long) i * MMSGHDR + MSG_NAMELEN, SOCKADDR);
                headers.set(ValueLayout.JAVA_LONG, (long) i * MMSGHDR + MSG_CONTROLLEN, RX_CONTROL);
            }
            filled = 0;
        }

        BatchState(RxBatch batch) {
            Arena arena = Arena.ofAuto();
            headers = arena.allocate((long) MMSGHDR * RxBatch.CAPACITY, 8);
            iovecs = arena.allocate((long) IOVEC * RxBatch.CAPACITY, 8);
            names = arena.allocate((long) SOCKADDR * RxBatch.CAPACITY, 8);
            controls = arena.allocate((long) RX_CONTROL * RxBatch.CAPACITY, 8);
            for (int i = 0; i < RxBatch.CAPACITY; i++) {
                MemorySegment iov = iovecs.asSlice((long) i * IOVEC, IOVEC);
                iov.set(ValueLayout.ADDRESS, 0, batch.segments[i]);
                iov.set(ValueLayout.JAVA_LONG, 8, RxBatch.SLOT);
                MemorySegment h = headers.asSlice((long) i * MMSGHDR, MMSGHDR);
                h.set(ValueLayout.ADDRESS, MSG_NAME, names.asSlice((long) i * SOCKADDR, SOCKADDR));
                h.set(ValueLayout.ADDRESS, MSG_IOV, iov);
                h.set(ValueLayout.JAVA_LONG, MSG_IOVLEN, 1);
                h.set(ValueLayout.ADDRESS, MSG_CONTROL, controls.asSlice((long) i * RX_CONTROL, RX_CONTROL));
            }
        }
    }

    private LinuxUdpLink(int fd, int wakeFd, int family, String name, Clock clock) {
        this.clock = clock;
        this.fd = fd;
        this.wakeFd = wakeFd;
        this.family = family;
        this.name = name;
        Arena arena = Arena.ofAuto();
        pollFds = arena.allocate(16, 8);
        timeout = arena.allocate(16, 8);
        pollFds.set(ValueLayout.JAVA_INT, 0, fd);
        pollFds.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pollFds.set(ValueLayout.JAVA_INT, 8, wakeFd);
        pollFds.set(ValueLayout.JAVA_SHORT, 12, POLLIN);
        wakeWord = arena.allocate(8, 8);
        wakeOne = arena.allocateFrom(ValueLayout.JAVA_LONG, 1L);
    }

    /** Whether this link can be opened here: Linux, libc's calls bound, native access enabled for this module. */
    static final boolean AVAILABLE = UdpLibc.AVAILABLE;

    /** A non-blocking UDP socket bound to {@code address}:{@code port}, with send and receive buffers of 4 MiB. */
    static LinuxUdpLink open(InetAddress address, int port) throws IOException {
        return open(address, port, Clock.SYSTEM);
    }

    /** {@link #open(InetAddress, int)} with the close's wait for calls inside the socket timed by {@code clock}. */
    static LinuxUdpLink open(InetAddress address, int port, Clock clock) throws IOException {
        if (!AVAILABLE) throw new IOException("the libc UDP link is not available here");
        int family = address instanceof Inet6Address ? AF_INET6 : AF_INET;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(UdpLibc.CALL_STATE);
            int fd = (int) UdpLibc.SOCKET.invokeExact(state, family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) throw new IOException("socket(): errno " + errno(state));
            int wake = -1;
            try {
                MemorySegment size = a.allocateFrom(ValueLayout.JAVA_INT, 4 << 20);
                int ignored = (int) UdpLibc.SETSOCKOPT.invokeExact(state, fd, SOL_SOCKET, SO_RCVBUF, size, 4);
                ignored = (int) UdpLibc.SETSOCKOPT.invokeExact(state, fd, SOL_SOCKET, SO_SNDBUF, size, 4);
                // rxe (and so RoCE NICs' peers) send RoCEv2 over IPv6 with a zero UDP checksum, which IPv6 forbids:
                // without this option the kernel drops every such datagram before the socket sees it
                if (family == AF_INET6
                        && (int) UdpLibc.SETSOCKOPT.invokeExact(
                                        state,
                                        fd,
                                        IPPROTO_UDP,
                                        UDP_NO_CHECK6_RX,
                                        a.allocateFrom(ValueLayout.JAVA_INT, 1),
                                        4)
                                < 0) throw new IOException("setsockopt(UDP_NO_CHECK6_RX): errno " + errno(state));
                // ECT(0) on every packet, as RoCEv2 NICs send, and each arriving packet's ECN field in a control
                // message (DCQCN's notification point; a kernel without them leaves the device without ECN)
                int v6 = family == AF_INET6 ? 1 : 0;
                ignored = (int) UdpLibc.SETSOCKOPT.invokeExact(
                        state,
                        fd,
                        v6 == 1 ? IPPROTO_IPV6 : IPPROTO_IP,
                        v6 == 1 ? IPV6_TCLASS : IP_TOS,
                        a.allocateFrom(ValueLayout.JAVA_INT, Ecn.outgoing(0)),
                        4);
                ignored = (int) UdpLibc.SETSOCKOPT.invokeExact(
                        state,
                        fd,
                        v6 == 1 ? IPPROTO_IPV6 : IPPROTO_IP,
                        v6 == 1 ? IPV6_RECVTCLASS : IP_RECVTOS,
                        a.allocateFrom(ValueLayout.JAVA_INT, 1),
                        4);
                // an address vector's flow label (Destination) rides in each send's sin6_flowinfo
                if (family == AF_INET6
                        && (int) UdpLibc.SETSOCKOPT.invokeExact(
                                        state,
                                        fd,
                                        IPPROTO_IPV6,
                                        IPV6_FLOWINFO_SEND,
                                        a.allocateFrom(ValueLayout.JAVA_INT, 1),
                                        4)
                                < 0) throw new IOException("setsockopt(IPV6_FLOWINFO_SEND): errno " + errno(state));
                MemorySegment sa = a.allocate(SOCKADDR, 8);
                int len = encode(sa, address, port);
                if ((int) UdpLibc.BIND.invokeExact(state, fd, sa, len) < 0)
                    throw new IOException("bind " + address.getHostAddress() + ":" + port + ": errno " + errno(state)
                            + (errno(state) == 98 ? " (address in use)" : ""));
                wake = (int) UdpLibc.EVENTFD.invokeExact(state, 0, EFD_NONBLOCK | EFD_CLOEXEC);
                if (wake < 0) throw new IOException("eventfd(): errno " + errno(state));
                LinuxUdpLink link = new LinuxUdpLink(fd, wake, family, address.getHostAddress() + ":" + port, clock);
                if (GRO_WANTED) link.receivesCoalesced(true);
                return link;
            } catch (IOException e) {
                closeFd(fd);
                if (wake >= 0) closeFd(wake);
                throw e;
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("the libc UDP link failed to open", t);
        }
    }

    /**
     * The calling thread's errno, read right after a failed hot-path call. Those calls do not capture it through the
     * linker (capturing checks the state segment with a slice that escape analysis does not always remove: 40 bytes
     * allocated per call in some runs); a critical downcall makes no thread-state transition, so nothing of the JVM's
     * runs on this thread between the failed call and this read, short of a safepoint at that very moment, which at
     * worst turns a retryable EAGAIN into a counted error.
     */
    private static int lastErrno() throws Throwable {
        long at = (long) UdpLibc.ERRNO_LOCATION.invokeExact();
        return UdpLibc.EVERYWHERE.get(ValueLayout.JAVA_INT, at);
    }

    private static int errno(MemorySegment state) {
        return (int) UdpLibc.ERRNO.get(state, 0L);
    }

    /** Writes {@code address}:{@code port} as a sockaddr_in or sockaddr_in6 into {@code sa}; returns its length. */
    private static int encode(MemorySegment sa, InetAddress address, int port) {
        sa.fill((byte) 0);
        sa.set(NET_SHORT, 2, (short) port);
        if (address instanceof Inet4Address v4) {
            sa.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET);
            sa.set(NET_INT, 4, v4.hashCode()); // Inet4Address.hashCode() is the address as an int
            return 16;
        }
        Inet6Address v6 = (Inet6Address) address;
        sa.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET6);
        MemorySegment.copy(v6.getAddress(), 0, sa, ValueLayout.JAVA_BYTE, 8, 16);
        sa.set(ValueLayout.JAVA_INT_UNALIGNED, 24, v6.getScopeId());
        return SOCKADDR;
    }

    private void enter() throws ClosedChannelException {
        inside.incrementAndGet();
        if (closed) {
            inside.decrementAndGet();
            throw new ClosedChannelException();
        }
    }

    private void exit() {
        inside.decrementAndGet();
    }

    /**
     * One {@code sendto}, or one {@code sendmsg} with a control message where {@code to} is a {@link Destination}
     * with a traffic class; false when the socket's send buffer is full.
     */
    @Override
    public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        Scratch s = scratch.get();
        int slot = s.destination(to, family);
        MemorySegment sa = s.encoded[slot], control = s.controls[slot];
        int n = b.isDirect() ? b.remaining() : Math.min(b.remaining(), BOUNCE);
        long at = s.address(b, true);
        enter();
        long r;
        int error = 0;
        try {
            if (control == null) {
                r = (long) UdpLibc.SENDTO.invokeExact(fd, at, (long) n, MSG_DONTWAIT, sa, (int) sa.byteSize());
            } else {
                s.iovec.set(ValueLayout.JAVA_LONG, 0, at);
                s.iovec.set(ValueLayout.JAVA_LONG, 8, n);
                MemorySegment m = s.message;
                m.set(ValueLayout.ADDRESS, MSG_NAME, sa);
                m.set(ValueLayout.JAVA_INT, MSG_NAMELEN, (int) sa.byteSize());
                m.set(ValueLayout.ADDRESS, MSG_IOV, s.iovec);
                m.set(ValueLayout.JAVA_LONG, MSG_IOVLEN, 1);
                m.set(ValueLayout.ADDRESS, MSG_CONTROL, control);
                m.set(ValueLayout.JAVA_LONG, MSG_CONTROLLEN, control.byteSize());
                r = (long) UdpLibc.SENDMSG.invokeExact(fd, m, MSG_DONTWAIT);
            }
            if (r < 0) error = lastErrno();
        } catch (Throwable t) {
            throw new IOException("sendto failed", t);
        } finally {
            exit();
            Reference.reachabilityFence(b);
        }
        if (r < 0) {
            int e = error;
            if (e == EAGAIN || e == ENOBUFS || e == EINTR) return false;
            throw new IOException("sendto " + to + " from " + name + ": errno " + e);
        }
        b.position(b.limit());
        return true;
    }

    /**
     * One {@code sendmmsg} for the whole batch, each packet with {@code to}'s address and control messages. With UDP
     * generic segmentation (Linux 4.18+), a run of packets of one size (and a shorter last one) is one message of
     * several iovecs with a {@code UDP_SEGMENT} control message: the kernel takes it through the stack as one datagram
     * and cuts it into the packets at the end (at the receiving socket, over loopback or a veth), so a window of
     * packets costs one pass through the stack, not one each. The receiver sees the same datagrams either way (rxe too).
     */
    @Override
    public int send(TxBatch batch, int from, int n, InetSocketAddress to) throws IOException {
        if (n == 1) {
            ByteBuffer b = batch.buffers[from];
            b.limit(batch.lengths[from]).position(0);
            try {
                return send(b, to) ? 1 : 0;
            } finally {
                b.clear();
            }
        }
        boolean segment = gso || gsoForJrdmaPeers && batch.jrdmaPeer;
        int r = sendBatch(batch, from, n, to, segment);
        if (r == -EINVAL || r == -EIO || r == -ENOPROTOOPT) {
            if (!segment) throw new IOException("sendmmsg " + to + " from " + name + ": errno " + (-r));
            gso = false; // this kernel, socket or path takes no UDP_SEGMENT: single datagrams from now on
            gsoForJrdmaPeers = false;
            System.getLogger("dev.jrdma.soft")
                    .log(
                            System.Logger.Level.INFO,
                            "soft device " + name + ": UDP segmentation refused (errno " + (-r)
                                    + "): one datagram per packet");
            r = sendBatch(batch, from, n, to, false);
            if (r < 0) throw new IOException("sendmmsg " + to + " from " + name + ": errno " + (-r));
        }
        return r;
    }

    /** Sends packets {@code from..from+n-1}; returns how many left, or minus the errno of a failure that is not a full buffer. */
    private int sendBatch(TxBatch batch, int from, int n, InetSocketAddress to, boolean segment) throws IOException {
        Scratch s = scratch.get();
        int slot = s.destination(to, family);
        MemorySegment sa = s.encoded[slot], control = s.controls[slot];
        if (s.batchHeaders == null) {
            s.batchHeaders = s.arena.allocate((long) MMSGHDR * TxBatch.CAPACITY, 8);
            s.batchIovecs = s.arena.allocate((long) IOVEC * TxBatch.CAPACITY, 8);
            s.batchControls = s.arena.allocate((long) (CMSG_U16 + CMSG_INT) * TxBatch.CAPACITY, 8);
        }
        MemorySegment h = s.batchHeaders, iov = s.batchIovecs, controls = s.batchControls;
        long nameAt = sa.address(), iovBase = iov.address(), controlAt = control == null ? 0 : control.address();
        int nameLen = (int) sa.byteSize();
        long controlLen = control == null ? 0 : control.byteSize();
        for (int i = 0; i < n; i++) {
            long v = (long) i * IOVEC;
            iov.set(ValueLayout.JAVA_LONG, v, batch.segments[from + i].address());
            iov.set(ValueLayout.JAVA_LONG, v + 8, batch.lengths[from + i]);
        }
        int messages = 0;
        for (int i = 0; i < n; ) {
            int size = batch.lengths[from + i], k = 1;
            if (segment) {
                long bytes = size;
                while (i + k < n
                        && k < GSO_SEGMENTS
                        && batch.lengths[from + i + k] == size
                        && bytes + size <= GSO_BYTES) {
                    bytes += size;
                    k++;
                }
                int last = i + k < n ? batch.lengths[from + i + k] : Integer.MAX_VALUE;
                if (last < size && k < GSO_SEGMENTS && bytes + last <= GSO_BYTES)
                    k++; // a shorter last segment rides along
            }
            long at = (long) messages * MMSGHDR;
            h.set(ValueLayout.JAVA_LONG, at + MSG_NAME, nameAt);
            h.set(ValueLayout.JAVA_INT, at + MSG_NAMELEN, nameLen);
            h.set(ValueLayout.JAVA_LONG, at + MSG_IOV, iovBase + (long) i * IOVEC);
            h.set(ValueLayout.JAVA_LONG, at + MSG_IOVLEN, k);
            if (k > 1) {
                long c = (long) messages * (CMSG_U16 + CMSG_INT);
                controls.set(ValueLayout.JAVA_LONG, c, CMSG_U16_LEN);
                controls.set(ValueLayout.JAVA_INT, c + 8, IPPROTO_UDP);
                controls.set(ValueLayout.JAVA_INT, c + 12, UDP_SEGMENT);
                controls.set(ValueLayout.JAVA_SHORT, c + 16, (short) size);
                if (control != null) MemorySegment.copy(control, 0, controls, c + CMSG_U16, CMSG_INT);
                h.set(ValueLayout.JAVA_LONG, at + MSG_CONTROL, controls.address() + c);
                h.set(ValueLayout.JAVA_LONG, at + MSG_CONTROLLEN, CMSG_U16 + controlLen);
            } else {
                h.set(ValueLayout.JAVA_LONG, at + MSG_CONTROL, controlAt);
                h.set(ValueLayout.JAVA_LONG, at + MSG_CONTROLLEN, controlLen);
            }
            h.set(ValueLayout.JAVA_INT, at + MSG_FLAGS, 0);
            s.batchPackets[messages++] = k;
            i += k;
        }
        enter();
        int r, error = 0;
        try {
            r = (int) UdpLibc.SENDMMSG.invokeExact(fd, h, messages, MSG_DONTWAIT);
            if (r < 0) error = lastErrno();
        } catch (Throwable t) {
            throw new IOException("sendmmsg failed", t);
        } finally {
            exit();
            Reference.reachabilityFence(batch);
        }
        if (r < 0) {
            int e = error;
            if (e == EAGAIN || e == ENOBUFS || e == EINTR) return 0;
            return -e;
        }
        int packets = 0;
        for (int m = 0; m < r; m++) {
            packets += s.batchPackets[m];
            if (s.batchPackets[m] > 1) gsoSends.incrementAndGet();
        }
        return packets;
    }

    /** Messages this link sent with UDP generic segmentation (tests, reports); 0 when it is off. */
    long gsoSends() {
        return gsoSends.get();
    }

    /** Whether batches go out with UDP generic segmentation now. */
    boolean segments() {
        return gso;
    }

    /** Turns UDP generic segmentation on or off for this link (tests; {@code -Djrdma.soft.gso} sets the default). */
    void segments(boolean on) {
        gso = on;
        if (!on) gsoForJrdmaPeers = false;
    }

    /**
     * Turns the taking of coalesced datagrams ({@code UDP_GRO}) on or off ({@code -Djrdma.soft.gro} sets the default).
     *
     * @return whether it is on now (false where the kernel refuses the option)
     */
    boolean receivesCoalesced(boolean on) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(UdpLibc.CALL_STATE);
            int r = (int) UdpLibc.SETSOCKOPT.invokeExact(
                    state, fd, IPPROTO_UDP, GroBatch.UDP_GRO, a.allocateFrom(ValueLayout.JAVA_INT, on ? 1 : 0), 4);
            gro = on && r == 0;
        } catch (Throwable t) {
            gro = false;
        }
        return gro;
    }

    /** One {@code recvfrom} (links that wrap this one receive one datagram at a time). */
    @Override
    public InetSocketAddress receive(ByteBuffer b) throws IOException {
        if (gro) return coalesced.receive(b); // a coalesced message is split first
        Scratch s = scratch.get();
        s.fromLen.set(ValueLayout.JAVA_INT, 0, SOCKADDR);
        int room = b.isDirect() ? b.remaining() : Math.min(b.remaining(), BOUNCE);
        long at = s.address(b, false);
        enter();
        long r;
        int error = 0;
        try {
            r = (long) UdpLibc.RECVFROM.invokeExact(fd, at, (long) room, MSG_DONTWAIT, s.from, s.fromLen);
            if (r < 0) error = lastErrno();
        } catch (Throwable t) {
            throw new IOException("recvfrom failed", t);
        } finally {
            exit();
            Reference.reachabilityFence(b);
        }
        if (r < 0) {
            int e = error;
            if (e == EAGAIN || e == EINTR) return null;
            throw new IOException("recvfrom on " + name + ": errno " + e);
        }
        if (!b.isDirect()) MemorySegment.copy(s.bounce, 0, MemorySegment.ofBuffer(b), 0, r);
        b.position(b.position() + (int) r);
        return s.sources.decode(s.from, 0);
    }

    @Override
    public void prepare(RxBatch batch) {
        scratch.get();
        if (gro) GroReceiver.of(batch);
        else if (!(batch.linkState instanceof BatchState)) batch.linkState = new BatchState(batch);
    }

    /** One {@code recvmmsg} for the whole burst; a short burst means the socket is empty. */
    @Override
    public int receive(RxBatch batch) throws IOException {
        if (gro) return coalesced.receive(batch);
        BatchState st;
        if (batch.linkState instanceof BatchState known) st = known;
        else batch.linkState = st = new BatchState(batch);
        MemorySegment h = st.headers;
        st.prepare();
        int n = recvmmsg(h, RxBatch.CAPACITY, batch);
        st.filled = n;
        for (int i = 0; i < n; i++) {
            long at = (long) i * MMSGHDR;
            boolean cut = (h.get(ValueLayout.JAVA_INT, at + MSG_FLAGS) & MSG_TRUNC) != 0;
            batch.lengths[i] = cut ? RxBatch.TRUNCATED : h.get(ValueLayout.JAVA_INT, at + MSG_LEN);
            batch.sources[i] = st.sources.decode(st.names, (long) i * SOCKADDR);
            batch.ecn[i] = (byte) ControlMessages.ecn(ControlMessages.scan(
                    st.controls, (long) i * RX_CONTROL, h.get(ValueLayout.JAVA_LONG, at + MSG_CONTROLLEN)));
        }
        batch.drained = n < RxBatch.CAPACITY;
        return n;
    }

    /** Coalesced messages received in {@code batch} so far (tests). */
    static long coalesced(RxBatch batch) {
        return batch.linkState instanceof GroBatch g ? g.coalesced : 0;
    }

    /** One non-blocking {@code recvmmsg} of up to {@code vlen} messages; 0 (the batch marked drained on EAGAIN) when none. */
    int recvmmsg(MemorySegment h, int vlen, RxBatch batch) throws IOException {
        enter();
        int n, error = 0;
        try {
            n = (int) UdpLibc.RECVMMSG.invokeExact(fd, h, vlen, MSG_DONTWAIT, MemorySegment.NULL);
            if (n < 0) error = lastErrno();
        } catch (Throwable t) {
            throw new IOException("recvmmsg failed", t);
        } finally {
            exit();
        }
        if (n < 0) {
            int e = error;
            if (e == EAGAIN || e == EINTR) {
                batch.drained = e == EAGAIN;
                return 0;
            }
            throw new IOException("recvmmsg on " + name + ": errno " + e);
        }
        return n;
    }

    /** Blocks in {@code poll} on the socket and the wake-up eventfd. */
    @Override
    public void await() throws IOException {
        pollFor(-1);
    }

    /**
     * {@code ppoll} with a limit in nanoseconds: a thread standing in waits for its event loop's next timer, which may be
     * microseconds away ({@code poll}'s whole milliseconds made a 50 us wait 1 ms).
     */
    @Override
    public boolean await(long timeoutNanos) throws IOException {
        long nanos = Math.max(1, timeoutNanos);
        timeout.set(ValueLayout.JAVA_LONG, 0, nanos / 1_000_000_000L);
        timeout.set(ValueLayout.JAVA_LONG, 8, nanos % 1_000_000_000L);
        pollFor(0);
        return true;
    }

    /**
     * Blocks in {@code poll} on the socket and the wake-up eventfd: for no limit ({@code millis} -1), or in
     * {@code ppoll} for the limit in {@link #timeout} ({@code millis} 0).
     */
    private void pollFor(int millis) throws IOException {
        enter();
        awaiting = true; // before the look: a receive that leaves packets behind after it wakes this thread
        try {
            if (gro && coalesced.handsOutNow()) return; // packets wait in a landing area: no sleep
            pollFds.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
            pollFds.set(ValueLayout.JAVA_SHORT, 14, (short) 0);
            // no errno capture on this path: the linker's capture check allocates a segment slice per call when
            // escape analysis does not remove it (1.1 MB on a receive thread in 5,000 ping-pongs, AllocationTest)
            int r = millis < 0
                    ? (int) UdpLibc.POLL.invokeExact(pollFds, 2L, -1)
                    : (int) UdpLibc.PPOLL.invokeExact(pollFds, 2L, timeout, MemorySegment.NULL);
            if (r < 0) {
                // read after the call; a blocking downcall returns through a thread-state transition, which may in a
                // rare case change errno first: then a spurious EINTR is a retry, another error one more IOException
                int errno = lastErrno();
                if (errno != EINTR) throw new IOException("poll on " + name + ": errno " + errno);
            }
            if (r > 0 && (pollFds.get(ValueLayout.JAVA_SHORT, 14) & POLLIN) != 0) {
                long ignored = (long) UdpLibc.READ_QUIET.invokeExact(wakeFd, wakeWord, 8L); // reset the eventfd
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("poll failed", t);
        } finally {
            awaiting = false;
            exit();
        }
    }

    /** Whether a thread waits in {@link #await} now (or is about to). */
    boolean awaiting() {
        return awaiting;
    }

    /** Wakes an await; after close it does nothing (the eventfd's number may belong to another file by then). */
    @Override
    public void wakeup() {
        inside.incrementAndGet(); // as enter(): close() waits for us before it closes the eventfd
        try {
            if (!closed) ring();
        } finally {
            exit();
        }
    }

    /** Adds 1 to the eventfd; only while it is open (wakeup, or close before it closes it). */
    private void ring() {
        try {
            long ignored = (long) UdpLibc.WRITE.invokeExact(wakeFd, wakeOne, 8L);
        } catch (Throwable ignored) {
            // cannot happen on an open eventfd (its counter would have to reach 2^64 - 2)
        }
    }

    /**
     * Closes the socket once no call is inside it: an await is woken, a receive or send ends within microseconds. A
     * call that does not end within 2 s (a thread stopped in a debugger) keeps the descriptors open: better a leak
     * than a descriptor number reused under a call.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        ring();
        long end = clock.nanoTime() + 2_000_000_000L;
        while (inside.get() > 0) {
            if (clock.nanoTime() - end > 0) return;
            ring();
            Thread.onSpinWait();
            Thread.yield();
        }
        closeFd(fd);
        closeFd(wakeFd);
    }

    private static void closeFd(int fd) {
        try {
            int ignored = (int) UdpLibc.CLOSE.invokeExact(fd);
        } catch (Throwable ignored) {
        }
    }

    @Override
    public String toString() {
        return "udp " + name + " (libc)";
    }

    /** The libc calls, bound once; {@link #AVAILABLE} is false where they cannot be (not Linux, native access not enabled). */
}
