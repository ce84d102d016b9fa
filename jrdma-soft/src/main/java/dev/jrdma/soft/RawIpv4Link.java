package dev.jrdma.soft;

import dev.jrdma.soft.wire.Icrc;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An IPv4 send path that writes the IP header itself: a raw socket ({@code socket(AF_INET, SOCK_RAW, IPPROTO_RAW)},
 * through FFM; it needs CAP_NET_RAW) sends each RoCEv2 packet with an IPv4 header and UDP header built here, so the
 * identification field, which the ICRC covers, is known. A UDP socket cannot do that: the kernel picks the
 * identification of its packets (recent kernels draw it from a hashed counter even with DF set), so their ICRC,
 * computed by jrdma as if it were 0, is wrong for every other RoCE implementation (Linux rxe, RoCE NICs).
 *
 * <p>Each packet gets the next identification of a per-link counter (never 0: the kernel replaces a 0 with its own
 * choice), the ICRC that the QP computed for identification 0 is patched by {@link Icrc#idDelta}, and the UDP
 * checksum is computed (the receiver's kernel checks it). DF is set, TTL 64 (the default route's, as the UDP socket
 * sends), TOS the address vector's traffic class ({@link Destination}; 0 for a plain address). Packets
 * are received, and waited for, on the device's UDP socket ({@code receiveSide}): the raw socket is send-only
 * ({@code IPPROTO_RAW} receives nothing).
 */
final class RawIpv4Link implements Link {
    private static final int AF_INET = 2, SOCK_RAW = 3, IPPROTO_RAW = 255, MSG_DONTWAIT = 0x40;
    private static final int EAGAIN = 11, ENOBUFS = 105, EINTR = 4;
    private static final int HDR = 20 + 8;

    private final Link receiveSide;
    private final int fd;
    private final int srcIp, srcPort;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final Arena arena = Arena.ofShared();
    private final MemorySegment out, sockaddr, callState;
    private final ByteBuffer outBuf;
    private int nextId = 1;
    private volatile boolean closed;

    private RawIpv4Link(Link receiveSide, int fd, Inet4Address source, int port) {
        this.receiveSide = receiveSide;
        this.fd = fd;
        this.srcIp = source.hashCode(); // Inet4Address.hashCode() is the address as an int
        this.srcPort = port;
        out = arena.allocate(Transport.RX_BUF + HDR, 8);
        outBuf = out.asByteBuffer().order(ByteOrder.BIG_ENDIAN);
        sockaddr = arena.allocate(16, 4);
        callState = arena.allocate(Native.CALL_STATE);
    }

    /**
     * A raw send path for the device on {@code source} and UDP {@code port} that receives on {@code receiveSide}, or
     * null when this process may not open a raw socket (no CAP_NET_RAW) or the platform has none.
     */
    static RawIpv4Link open(Inet4Address source, int port, Link receiveSide) {
        if (!Native.AVAILABLE) return null;
        int fd;
        try (Arena a = Arena.ofConfined()) {
            fd = (int) Native.SOCKET.invokeExact(a.allocate(Native.CALL_STATE), AF_INET, SOCK_RAW, IPPROTO_RAW);
        } catch (Throwable t) {
            return null;
        }
        return fd < 0 ? null : new RawIpv4Link(receiveSide, fd, source, port);
    }

    @Override
    public boolean send(ByteBuffer b, InetSocketAddress to) throws IOException {
        if (!(to.getAddress() instanceof Inet4Address dst))
            throw new IOException("an IPv4 raw link cannot send to " + to);
        int n = b.remaining();
        if (n > Transport.RX_BUF) throw new IOException("packet of " + n + " bytes is larger than a datagram");
        sendLock.lock();
        try {
            if (closed) throw new java.nio.channels.ClosedChannelException();
            int id = nextId;
            ByteBuffer o = outBuf;
            int dstIp = dst.hashCode(), port = to.getPort();
            // IPv4 header: the kernel fills in the header checksum and total length of an IPPROTO_RAW packet
            o.put(0, (byte) 0x45)
                    .put(1, (byte) Ecn.outgoing(Destination.trafficClass(to)))
                    .putShort(2, (short) (HDR + n))
                    .putShort(4, (short) id)
                    .putShort(6, (short) 0x4000)
                    .put(8, (byte) 64)
                    .put(9, (byte) 17)
                    .putShort(10, (short) 0)
                    .putInt(12, srcIp)
                    .putInt(16, dstIp);
            // UDP header
            o.putShort(20, (short) srcPort)
                    .putShort(22, (short) port)
                    .putShort(24, (short) (8 + n))
                    .putShort(26, (short) 0);
            o.put(HDR, b, b.position(), n);
            // the ICRC (last 4 bytes, least significant first) was computed for identification 0
            int at = HDR + n - Icrc.BYTES;
            o.order(ByteOrder.LITTLE_ENDIAN);
            o.putInt(at, o.getInt(at) ^ Icrc.idDelta(n, id));
            o.order(ByteOrder.BIG_ENDIAN);
            o.putShort(26, (short) udpChecksum(o, n, srcIp, dstIp));

            sockaddr.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET); // sin_family: host order
            sockaddr.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 2, (short) port);
            sockaddr.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 4, dstIp);
            long r;
            try {
                r = (long) Native.SENDTO.invokeExact(callState, fd, out, (long) (HDR + n), MSG_DONTWAIT, sockaddr, 16);
            } catch (Throwable t) {
                throw new IOException("sendto on the raw socket failed", t);
            }
            if (r < 0) {
                int errno = (int) Native.ERRNO.get(callState, 0L);
                if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) return false;
                throw new IOException("sendto on the raw IPv4 socket failed: errno " + errno);
            }
            nextId = id == 0xFFFF ? 1 : id + 1;
            b.position(b.limit());
            return true;
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Through the UDP socket (the receive side, bound to the same port): what is not a RoCEv2 packet has no ICRC to
     * patch, and {@link #send(ByteBuffer, InetSocketAddress)} would overwrite its last four bytes (a same-host ring's
     * proof then never matched, and devices on a non-loopback address never used their rings).
     */
    @Override
    public boolean sendVerbatim(ByteBuffer b, InetSocketAddress to) throws IOException {
        return receiveSide.sendVerbatim(b, to);
    }

    /**
     * A batch for a jrdma peer ({@link TxBatch#jrdmaPeer}: it accepts the kernel's identification) leaves through the
     * UDP socket, in one {@code sendmmsg} with UDP segmentation ({@link LinuxUdpLink}); any other packet by packet
     * through the raw socket, each with its identification in its ICRC, and its UDP checksum computed here (~2 us per
     * 4 KiB packet, as much as the rest of its sending).
     */
    @Override
    public int send(TxBatch batch, int from, int n, InetSocketAddress to) throws IOException {
        return batch.jrdmaPeer ? receiveSide.send(batch, from, n, to) : Link.super.send(batch, from, n, to);
    }

    /** The UDP checksum (RFC 768) of the UDP header at 20 and {@code n} payload bytes after it, over the pseudo header. */
    static int udpChecksum(ByteBuffer o, int n, int srcIp, int dstIp) {
        int udpLen = 8 + n;
        long sum = (srcIp >>> 16) + (srcIp & 0xFFFF) + (dstIp >>> 16) + (dstIp & 0xFFFF) + 17 + udpLen;
        int i = 20, end = 20 + udpLen;
        for (; i + 1 < end; i += 2) sum += o.getShort(i) & 0xFFFF;
        if (i < end) sum += (o.get(i) & 0xFF) << 8;
        while ((sum >>> 16) != 0) sum = (sum & 0xFFFF) + (sum >>> 16);
        int c = ~(int) sum & 0xFFFF;
        return c == 0 ? 0xFFFF : c; // 0 would mean "no checksum"
    }

    @Override
    public InetSocketAddress receive(ByteBuffer b) throws IOException {
        return receiveSide.receive(b);
    }

    @Override
    public int receive(RxBatch batch) throws IOException {
        return receiveSide.receive(batch);
    }

    @Override
    public void prepare(RxBatch batch) {
        receiveSide.prepare(batch);
    }

    @Override
    public boolean readable() throws IOException {
        return receiveSide.readable();
    }

    @Override
    public void await() throws IOException {
        receiveSide.await();
    }

    @Override
    public boolean await(long timeoutNanos) throws IOException {
        return receiveSide.await(timeoutNanos);
    }

    @Override
    public void wakeup() {
        receiveSide.wakeup();
    }

    @Override
    public String toString() {
        return "raw IPv4 send, receive on " + receiveSide;
    }

    @Override
    public void close() {
        receiveSide.close();
        sendLock.lock();
        try {
            if (closed) return;
            closed = true;
            try {
                int ignored = (int) Native.CLOSE.invokeExact(fd);
            } catch (Throwable ignored) {
            }
            arena.close();
        } finally {
            sendLock.unlock();
        }
    }

    /** The libc calls, bound once; {@link #AVAILABLE} is false where they cannot be (not Linux, native access denied). */
    private static final class Native {
        static final boolean AVAILABLE;
        static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
        static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
        static final MethodHandle SOCKET, SENDTO, CLOSE;

        static {
            MethodHandle socket = null, sendto = null, close = null;
            boolean ok = false;
            try {
                if (System.getProperty("os.name", "")
                        .toLowerCase(java.util.Locale.ROOT)
                        .contains("linux")) {
                    Linker linker = Linker.nativeLinker();
                    var libc = linker.defaultLookup();
                    Linker.Option errno = Linker.Option.captureCallState("errno");
                    socket = linker.downcallHandle(
                            libc.find("socket").orElseThrow(),
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT),
                            errno);
                    sendto = linker.downcallHandle(
                            libc.find("sendto").orElseThrow(),
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_INT),
                            errno);
                    close = linker.downcallHandle(
                            libc.find("close").orElseThrow(),
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                    ok = true;
                }
            } catch (RuntimeException | Error e) {
                ok = false;
            }
            SOCKET = socket;
            SENDTO = sendto;
            CLOSE = close;
            AVAILABLE = ok;
        }
    }
}
