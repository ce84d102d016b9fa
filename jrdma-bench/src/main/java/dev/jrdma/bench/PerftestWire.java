package dev.jrdma.bench;

import dev.jrdma.verbs.Gid;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Locale;

/**
 * perftest's out-of-band exchange (perftest_communication.c of perftest 4.5, version string 6.06): versions,
 * system data, MTU, the key messages ("handshakes"), bandwidth reports and the closing "done".
 * The client writes then reads; the server reads then writes. It travels over TCP, or with -R over an rdma_cm
 * connection ({@link CmLink}): there each message is one SEND, a key message is perftest's binary
 * {@code struct pingpong_dest} instead of text, and no "done" follows the closing handshake.
 */
public final class PerftestWire implements AutoCloseable {
    /** The version we announce: perftest 4.5-0.17's. A peer below 5.70 is refused, as perftest does. */
    public static final String VERSION = "6.06";
    public static final int KEY_MSG_SIZE = 59;
    public static final int KEY_MSG_SIZE_GID = 108;

    /** One QP's connection data (perftest's {@code struct pingpong_dest}). gid is null without GID. */
    public record Dest(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, Gid gid, int srqn) {}

    /** Where the exchange's bytes travel: a TCP socket, or (-R) an rdma_cm connection. */
    interface Link extends AutoCloseable {
        void write(byte[] b) throws IOException;

        /** Reads exactly b.length bytes: SocketTimeoutException after the read timeout, EOFException when the peer is gone. */
        void readFully(byte[] b) throws IOException;

        /** How long one read may wait, in ms (0 = for ever). */
        void readTimeout(int ms);

        int readTimeout();

        /** Whether key messages travel as perftest's binary struct (rdma_cm) rather than text (TCP). */
        boolean binaryKeys();

        @Override
        void close();
    }

    /** sizeof(struct pingpong_dest) on x86-64: lid, out_reads, qpn, psn, rkey, (4 pad), vaddr, gid[16], srqn, gid_index. */
    public static final int BINARY_KEY_SIZE = 56;

    /**
     * The key message of the rdma_cm exchange: perftest's {@code struct pingpong_dest} with every integer big-endian
     * (rdma_write_keys with HAVE_ENDIAN); the GID is raw (zero without one), gid_index -1 without a GID.
     */
    public static byte[] encodeBinary(Dest d) {
        ByteBuffer b = ByteBuffer.allocate(BINARY_KEY_SIZE); // big-endian
        b.putInt(0, d.lid()).putInt(4, d.outReads()).putInt(8, d.qpn()).putInt(12, d.psn()).putInt(16, d.rkey()).putLong(24, d.vaddr());
        if (d.gid() != null) for (int i = 0; i < 16; i++) b.put(32 + i, d.gid().get(i));
        b.putInt(48, d.srqn()).putInt(52, d.gid() == null ? -1 : 0);
        return b.array();
    }

    /** Parses perftest's binary key message (what rdma_read_keys reads: all but gid_index). */
    public static Dest decodeBinary(byte[] msg, boolean withGid) {
        if (msg.length < BINARY_KEY_SIZE) throw new BenchException("the peer's key message has " + msg.length + " bytes, not " + BINARY_KEY_SIZE);
        ByteBuffer b = ByteBuffer.wrap(msg);
        Gid gid = null;
        if (withGid) {
            byte[] raw = new byte[16];
            b.get(32, raw);
            gid = Gid.of(raw);
        }
        return new Dest(b.getInt(0), b.getInt(4), b.getInt(8) & 0xffffff, b.getInt(12) & 0xffffff, b.getInt(16), b.getLong(24), gid, b.getInt(48));
    }

    /** perftest's KEY_PRINT_FMT / KEY_PRINT_FMT_GID, NUL-terminated: 59 or 108 bytes. */
    public static byte[] encode(Dest d) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%04x:%04x:%06x:%06x:%08x:%016x:",
                d.lid() & 0xffff, d.outReads() & 0xffff, d.qpn() & 0xffffff, d.psn() & 0xffffff, d.rkey(), d.vaddr()));
        int size;
        if (d.gid() == null) {
            sb.append(String.format(Locale.ROOT, "%08x", d.srqn()));
            size = KEY_MSG_SIZE;
        } else {
            for (int i = 0; i < 16; i++) sb.append(String.format(Locale.ROOT, "%02x:", d.gid().get(i) & 0xff));
            sb.append(String.format(Locale.ROOT, "%08x:", d.srqn()));
            size = KEY_MSG_SIZE_GID;
        }
        byte[] text = sb.toString().getBytes(StandardCharsets.US_ASCII);
        if (text.length != size - 1) throw new IllegalStateException("key message of " + text.length + " bytes: " + sb);
        byte[] msg = new byte[size];
        System.arraycopy(text, 0, msg, 0, text.length);
        return msg;
    }

    /** Parses a key message as perftest does (fields separated by ':', hex). */
    public static Dest decode(byte[] msg, boolean withGid) {
        int len = 0;
        while (len < msg.length && msg[len] != 0) len++;
        String s = new String(msg, 0, len, StandardCharsets.US_ASCII);
        String[] f = s.split(":", -1);
        int need = withGid ? 6 + 16 + 1 : 7;
        if (f.length < need) throw new BenchException("cannot parse the peer's key message <" + s + ">: " + f.length + " fields, "
                + need + " expected" + (withGid ? " (the peer may run without a GID: use the same -x on both sides)" : ""));
        try {
            int lid = Integer.parseInt(f[0], 16), out = Integer.parseInt(f[1], 16), qpn = Integer.parseInt(f[2], 16), psn = Integer.parseInt(f[3], 16);
            int rkey = Integer.parseUnsignedInt(f[4], 16);
            long vaddr = Long.parseUnsignedLong(f[5], 16);
            Gid gid = null;
            int srqn;
            if (withGid) {
                byte[] raw = new byte[16];
                for (int i = 0; i < 16; i++) raw[i] = (byte) Integer.parseInt(f[6 + i], 16);
                gid = Gid.of(raw);
                srqn = Integer.parseUnsignedInt(f[22], 16);
            } else {
                srqn = Integer.parseUnsignedInt(f[6], 16);
            }
            return new Dest(lid, out, qpn, psn, rkey, vaddr, gid, srqn);
        } catch (NumberFormatException e) {
            throw new BenchException("cannot parse the peer's key message <" + s + ">: " + e.getMessage());
        }
    }

    /** The exchange over a TCP socket. */
    private static final class SocketLink implements Link {
        private final Socket socket;
        private final DataInputStream in;
        private final OutputStream out;

        SocketLink(Socket s, int timeoutMs) throws IOException {
            this.socket = s;
            s.setTcpNoDelay(true);
            s.setSoTimeout(timeoutMs);
            this.in = new DataInputStream(s.getInputStream());
            this.out = s.getOutputStream();
        }

        @Override public void write(byte[] b) throws IOException {
            out.write(b);
            out.flush();
        }

        @Override public void readFully(byte[] b) throws IOException {
            in.readFully(b);
        }

        @Override public void readTimeout(int ms) {
            try {
                socket.setSoTimeout(ms);
            } catch (IOException ignored) {
            }
        }

        @Override public int readTimeout() {
            try {
                return socket.getSoTimeout();
            } catch (IOException e) {
                return -1;
            }
        }

        @Override public boolean binaryKeys() {
            return false;
        }

        @Override public void close() {
            closeQuietly(socket);
        }
    }

    private final Link link;
    private final boolean client;
    private final int timeoutMs;
    private String remoteVersion = "?";

    private PerftestWire(Link link, boolean client, int timeoutMs) {
        this.link = link;
        this.client = client;
        this.timeoutMs = timeoutMs;
        link.readTimeout(timeoutMs);
    }

    /** The exchange over an established link (-R: an rdma_cm connection), this side the client or the server. */
    static PerftestWire over(Link link, boolean client, int timeoutSec) {
        return new PerftestWire(link, client, timeoutSec * 1000);
    }

    public boolean isClient() {
        return client;
    }

    public String remoteVersion() {
        return remoteVersion;
    }

    /**
     * Connects to a server, retrying a refused connection until {@code timeoutSec} (the server may be starting);
     * an unknown host, an unreachable network or the timeout end with a clear message.
     */
    public static Socket connect(String host, int port, int timeoutSec) {
        return connect(host, port, timeoutSec, false);
    }

    /**
     * As {@link #connect(String, int, int)}; with {@code withChannel} the socket is a {@link SocketChannel}'s, so a
     * test can switch it to non-blocking and spin on it ({@link Socket#getChannel()}).
     */
    public static Socket connect(String host, int port, int timeoutSec, boolean withChannel) {
        long deadline = System.nanoTime() + timeoutSec * 1_000_000_000L;
        IOException last = null;
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) break;
            Socket s;
            try {
                s = withChannel ? SocketChannel.open().socket() : new Socket();
            } catch (IOException e) {
                throw new BenchException("cannot open a socket: " + e.getMessage(), e);
            }
            try {
                s.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(left, Integer.MAX_VALUE)));
                return s;
            } catch (UnknownHostException e) {
                closeQuietly(s);
                throw new BenchException("unknown host '" + host + "': check the name or give an IP address");
            } catch (ConnectException | NoRouteToHostException e) {
                closeQuietly(s);
                last = e;
                try {
                    Thread.sleep(Math.min(200, Math.max(1, left)));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            } catch (SocketTimeoutException e) {
                closeQuietly(s);
                last = e;
                break;
            } catch (IOException e) {
                closeQuietly(s);
                last = e;
                break;
            }
        }
        throw new BenchException("cannot reach " + host + ":" + port + " within " + timeoutSec + " s"
                + (last == null ? "" : " (" + last.getMessage() + ")")
                + ": is the server running ('jrdma perf TEST' or perftest's ib_TEST without a host), is -p the same on both sides, is a firewall in the way?");
    }

    public static PerftestWire client(Socket s, int timeoutSec) {
        try {
            return new PerftestWire(new SocketLink(s, timeoutSec * 1000), true, timeoutSec * 1000);
        } catch (IOException e) {
            throw new BenchException("socket setup failed: " + e.getMessage(), e);
        }
    }

    /** Listens on port (SO_REUSEADDR), accepts one client, closes the listener. acceptTimeoutSec 0 waits for ever. */
    public static Socket accept(int port, int acceptTimeoutSec) {
        return accept(port, acceptTimeoutSec, false);
    }

    /** As {@link #accept(int, int)}; with {@code withChannel} the accepted socket is a {@link SocketChannel}'s. */
    public static Socket accept(int port, int acceptTimeoutSec, boolean withChannel) {
        try (ServerSocket ss = withChannel ? ServerSocketChannel.open().socket() : new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port));
            ss.setSoTimeout(acceptTimeoutSec * 1000);
            return ss.accept();
        } catch (SocketTimeoutException e) {
            throw new BenchException("no client connected to port " + port + " within " + acceptTimeoutSec + " s");
        } catch (IOException e) {
            throw new BenchException("cannot listen on TCP port " + port + ": " + e.getMessage() + " (another server running? use -p)", e);
        }
    }

    public static PerftestWire server(Socket s, int timeoutSec) {
        try {
            return new PerftestWire(new SocketLink(s, timeoutSec * 1000), false, timeoutSec * 1000);
        } catch (IOException e) {
            throw new BenchException("socket setup failed: " + e.getMessage(), e);
        }
    }

    /** Sets how long one read may wait (0 = for ever). */
    public void readTimeout(int ms) {
        link.readTimeout(ms);
    }

    public void restoreTimeout() {
        readTimeout(timeoutMs);
    }

    /** ctx_xchg_data: the client writes then reads; the server reads then writes. */
    public byte[] exchange(byte[] mine, int remoteLen, String what) {
        try {
            byte[] rem = new byte[remoteLen];
            if (client) {
                link.write(mine);
                link.readFully(rem);
            } else {
                link.readFully(rem);
                link.write(mine);
            }
            return rem;
        } catch (SocketTimeoutException e) {
            throw new BenchException("the peer sent nothing for " + soTimeoutText() + " while exchanging " + what
                    + ": is it the same test with the same flags (-s, -n, -a, -q, -x)?");
        } catch (EOFException e) {
            throw new BenchException("the peer closed the connection while exchanging " + what
                    + ": it probably failed; see its output (same test and flags on both sides? -x on both sides?)");
        } catch (IOException e) {
            throw new BenchException("out-of-band connection failed while exchanging " + what + ": " + e.getMessage(), e);
        }
    }

    /** exchange_versions + check_version_compatibility. */
    public String versions() {
        byte[] mine = new byte[16];
        byte[] v = VERSION.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(v, 0, mine, 0, v.length);
        byte[] rem = exchange(mine, 16, "versions");
        remoteVersion = cString(rem);
        double rv;
        try {
            rv = Double.parseDouble(remoteVersion.replaceAll("[^0-9.].*$", ""));
        } catch (NumberFormatException e) {
            throw new BenchException("the peer did not send a perftest version string (got '" + printable(rem)
                    + "'): is it a perftest/jrdma perf server on this port?");
        }
        if (rv < 5.70) throw new BenchException("the peer runs perftest " + remoteVersion + ": versions older than 5.70 are not compatible (upgrade perftest)");
        return remoteVersion;
    }

    /** check_sys_data: cycle buffer (page size) and cache line size, big-endian ints; each side keeps the larger. */
    public int[] sysData(int cycleBuffer, int cacheLine) {
        byte[] a = exchange(ByteBuffer.allocate(4).putInt(cycleBuffer).array(), 4, "page size");
        byte[] b = exchange(ByteBuffer.allocate(4).putInt(cacheLine).array(), 4, "cache line size");
        return new int[] {Math.max(cycleBuffer, ByteBuffer.wrap(a).getInt()), Math.max(cacheLine, ByteBuffer.wrap(b).getInt())};
    }

    /** check_mtu: the ibv_mtu enum as decimal text in 2 bytes; both use the smaller valid one. */
    public int mtu(int myMtuCode) {
        byte[] mine = new byte[2];
        mine[0] = (byte) ('0' + myMtuCode);
        byte[] rem = exchange(mine, 2, "MTU");
        int r;
        try {
            r = Integer.parseInt(cString(rem).trim());
        } catch (NumberFormatException e) {
            return myMtuCode;
        }
        return (r >= 1 && r <= 5 && r < myMtuCode) ? r : myMtuCode;
    }

    /** ctx_hand_shake: one key message each way. */
    public Dest handshake(Dest mine) {
        if (link.binaryKeys()) return decodeBinary(exchange(encodeBinary(mine), BINARY_KEY_SIZE, "QP keys (handshake)"), mine.gid() != null);
        byte[] msg = encode(mine);
        return decode(exchange(msg, msg.length, "QP keys (handshake)"), mine.gid() != null);
    }

    /** xchg_bw_reports (peer >= 5.33): size, iters, peak, average, message rate, 8 bytes each, big-endian. */
    public BwResult bwReports(BwResult mine) {
        long size = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine.size()).array(), 8, "report size")).getLong();
        long iters = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine.iters()).array(), 8, "report iterations")).getLong();
        double peak = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putDouble(mine.bwPeakMBs()).array(), 8, "report peak")).getDouble();
        double avg = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putDouble(mine.bwAvgMBs()).array(), 8, "report average")).getDouble();
        double rate = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putDouble(mine.msgRateMpps()).array(), 8, "report rate")).getDouble();
        return new BwResult(size, iters, peak, avg, rate);
    }

    /** ctx_close_connection: a handshake, then over TCP "done" with its NUL, then close. */
    public void closeConnection(Dest mine) {
        handshake(mine);
        if (!link.binaryKeys()) {
            try {
                link.write("done\0".getBytes(StandardCharsets.US_ASCII));
            } catch (IOException ignored) {
                // the peer may already be gone after its own "done": nothing is lost
            }
        }
        close();
    }

    @Override
    public void close() {
        link.close();
    }

    private String soTimeoutText() {
        int ms = link.readTimeout();
        return ms < 0 ? "too long" : ms / 1000 + " s";
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
        }
    }

    static String cString(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) n++;
        return new String(b, 0, n, StandardCharsets.US_ASCII);
    }

    static String printable(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(x >= 0x20 && x < 0x7f ? String.valueOf((char) x) : "\\x" + HexFormat.of().toHexDigits(x));
        return sb.toString();
    }
}
