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
    /** The size of a text key message without a GID, NUL included (perftest's {@code KEY_MSG_SIZE}). */
    public static final int KEY_MSG_SIZE = 59;
    /** The size of a text key message with a GID, NUL included (perftest's {@code KEY_MSG_SIZE_GID}). */
    public static final int KEY_MSG_SIZE_GID = 108;

    /**
     * One QP's connection data (perftest's {@code struct pingpong_dest}).
     *
     * @param lid the port's LID (0 on RoCE)
     * @param outReads the RDMA reads/atomics the QP accepts in flight (its {@code max_dest_rd_atomic})
     * @param qpn the QP number, 24 bits
     * @param psn the first PSN the QP sends, 24 bits
     * @param rkey the rkey of the buffer the peer may access
     * @param vaddr the address of that buffer
     * @param gid the GID, or null when the exchange runs without GIDs (no -x)
     * @param srqn the SRQ number (0 without an SRQ)
     */
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
     *
     * @param d the connection data
     * @return the {@value #BINARY_KEY_SIZE} bytes
     */
    public static byte[] encodeBinary(Dest d) {
        ByteBuffer b = ByteBuffer.allocate(BINARY_KEY_SIZE); // big-endian
        b.putInt(0, d.lid())
                .putInt(4, d.outReads())
                .putInt(8, d.qpn())
                .putInt(12, d.psn())
                .putInt(16, d.rkey())
                .putLong(24, d.vaddr());
        if (d.gid() != null) for (int i = 0; i < 16; i++) b.put(32 + i, d.gid().get(i));
        b.putInt(48, d.srqn()).putInt(52, d.gid() == null ? -1 : 0);
        return b.array();
    }

    /**
     * Parses perftest's binary key message (what rdma_read_keys reads: all but gid_index).
     *
     * @param msg at least {@value #BINARY_KEY_SIZE} bytes
     * @param withGid whether the GID is used (else {@link Dest#gid()} is null)
     * @return the peer's connection data
     * @throws BenchException when {@code msg} is shorter than {@value #BINARY_KEY_SIZE} bytes
     */
    public static Dest decodeBinary(byte[] msg, boolean withGid) {
        if (msg.length < BINARY_KEY_SIZE)
            throw new BenchException("the peer's key message has " + msg.length + " bytes, not " + BINARY_KEY_SIZE);
        ByteBuffer b = ByteBuffer.wrap(msg);
        Gid gid = null;
        if (withGid) {
            byte[] raw = new byte[16];
            b.get(32, raw);
            gid = Gid.of(raw);
        }
        return new Dest(
                b.getInt(0),
                b.getInt(4),
                b.getInt(8) & 0xffffff,
                b.getInt(12) & 0xffffff,
                b.getInt(16),
                b.getLong(24),
                gid,
                b.getInt(48));
    }

    /**
     * The text key message: perftest's {@code KEY_PRINT_FMT} / {@code KEY_PRINT_FMT_GID}, NUL-terminated.
     *
     * @param d the connection data; its GID decides the format
     * @return {@value #KEY_MSG_SIZE} bytes without a GID, {@value #KEY_MSG_SIZE_GID} with one
     */
    public static byte[] encode(Dest d) {
        StringBuilder sb = new StringBuilder(String.format(
                Locale.ROOT,
                "%04x:%04x:%06x:%06x:%08x:%016x:",
                d.lid() & 0xffff,
                d.outReads() & 0xffff,
                d.qpn() & 0xffffff,
                d.psn() & 0xffffff,
                d.rkey(),
                d.vaddr()));
        int size;
        if (d.gid() == null) {
            sb.append(String.format(Locale.ROOT, "%08x", d.srqn()));
            size = KEY_MSG_SIZE;
        } else {
            for (int i = 0; i < 16; i++)
                sb.append(String.format(Locale.ROOT, "%02x:", d.gid().get(i) & 0xff));
            sb.append(String.format(Locale.ROOT, "%08x:", d.srqn()));
            size = KEY_MSG_SIZE_GID;
        }
        byte[] text = sb.toString().getBytes(StandardCharsets.US_ASCII);
        if (text.length != size - 1) throw new IllegalStateException("key message of " + text.length + " bytes: " + sb);
        byte[] msg = new byte[size];
        System.arraycopy(text, 0, msg, 0, text.length);
        return msg;
    }

    /**
     * Parses a text key message as perftest does (fields separated by ':', hex).
     *
     * @param msg the message, NUL-terminated or not
     * @param withGid whether the peer sends a GID (both sides use -x, or neither)
     * @return the peer's connection data
     * @throws BenchException when a field is missing or not hex (e.g. the peer runs without a GID and this side with
     *                        one)
     */
    public static Dest decode(byte[] msg, boolean withGid) {
        int len = 0;
        while (len < msg.length && msg[len] != 0) len++;
        String s = new String(msg, 0, len, StandardCharsets.US_ASCII);
        String[] f = s.split(":", -1);
        int need = withGid ? 6 + 16 + 1 : 7;
        if (f.length < need)
            throw new BenchException(
                    "cannot parse the peer's key message <" + s + ">: " + f.length + " fields, " + need + " expected"
                            + (withGid ? " (the peer may run without a GID: use the same -x on both sides)" : ""));
        try {
            int lid = Integer.parseInt(f[0], 16),
                    out = Integer.parseInt(f[1], 16),
                    qpn = Integer.parseInt(f[2], 16),
                    psn = Integer.parseInt(f[3], 16);
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

        @Override
        public void write(byte[] b) throws IOException {
            out.write(b);
            out.flush();
        }

        @Override
        public void readFully(byte[] b) throws IOException {
            in.readFully(b);
        }

        @Override
        public void readTimeout(int ms) {
            try {
                socket.setSoTimeout(ms);
            } catch (IOException ignored) {
            }
        }

        @Override
        public int readTimeout() {
            try {
                return socket.getSoTimeout();
            } catch (IOException e) {
                return -1;
            }
        }

        @Override
        public boolean binaryKeys() {
            return false;
        }

        @Override
        public void close() {
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

    /** {@return whether this side is the client (it writes first)} */
    public boolean isClient() {
        return client;
    }

    /** {@return the version string the peer sent ({@link #versions}), or {@code "?"} before} */
    public String remoteVersion() {
        return remoteVersion;
    }

    /**
     * Connects to a server, retrying a refused connection until {@code timeoutSec} (the server may be starting); an
     * unknown host, an unreachable network or the timeout end with a clear message.
     *
     * @param host the server's host
     * @param port its TCP port (-p)
     * @param timeoutSec how long to keep trying, in seconds
     * @return the connected socket
     * @throws BenchException when the host is unknown or cannot be reached in time
     */
    public static Socket connect(String host, int port, int timeoutSec) {
        return connect(host, port, timeoutSec, false);
    }

    /**
     * As {@link #connect(String, int, int)}; with {@code withChannel} the socket is a {@link SocketChannel}'s, so a
     * test can switch it to non-blocking and spin on it ({@link Socket#getChannel()}).
     *
     * @param host the server's host
     * @param port its TCP port (-p)
     * @param timeoutSec how long to keep trying, in seconds
     * @param withChannel whether to open the socket through a {@link SocketChannel}
     * @return the connected socket
     * @throws BenchException when the host is unknown or cannot be reached in time
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
        throw new BenchException(
                "cannot reach " + host + ":" + port + " within " + timeoutSec + " s"
                        + (last == null ? "" : " (" + last.getMessage() + ")")
                        + ": is the server running ('jrdma perf TEST' or perftest's ib_TEST without a host), is -p the same on both sides, is a firewall in the way?");
    }

    /**
     * The client's side of the exchange over a connected socket (TCP_NODELAY set).
     *
     * @param s the socket from {@link #connect}
     * @param timeoutSec how long one read may wait, in seconds
     * @return the exchange
     * @throws BenchException when the socket cannot be set up
     */
    public static PerftestWire client(Socket s, int timeoutSec) {
        try {
            return new PerftestWire(new SocketLink(s, timeoutSec * 1000), true, timeoutSec * 1000);
        } catch (IOException e) {
            throw new BenchException("socket setup failed: " + e.getMessage(), e);
        }
    }

    /**
     * Listens on {@code port} (SO_REUSEADDR), accepts one client, closes the listener.
     *
     * @param port the TCP port (-p)
     * @param acceptTimeoutSec how long to wait for the client, in seconds; 0 waits for ever
     * @return the client's socket
     * @throws BenchException when the port cannot be bound or no client came in time
     */
    public static Socket accept(int port, int acceptTimeoutSec) {
        return accept(port, acceptTimeoutSec, false);
    }

    /**
     * As {@link #accept(int, int)}; with {@code withChannel} the accepted socket is a {@link SocketChannel}'s.
     *
     * @param port the TCP port (-p)
     * @param acceptTimeoutSec how long to wait for the client, in seconds; 0 waits for ever
     * @param withChannel whether to listen through a {@link ServerSocketChannel}
     * @return the client's socket
     * @throws BenchException when the port cannot be bound or no client came in time
     */
    public static Socket accept(int port, int acceptTimeoutSec, boolean withChannel) {
        try (ServerSocket ss = withChannel ? ServerSocketChannel.open().socket() : new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port));
            ss.setSoTimeout(acceptTimeoutSec * 1000);
            return ss.accept();
        } catch (SocketTimeoutException e) {
            throw new BenchException("no client connected to port " + port + " within " + acceptTimeoutSec + " s");
        } catch (IOException e) {
            throw new BenchException(
                    "cannot listen on TCP port " + port + ": " + e.getMessage() + " (another server running? use -p)",
                    e);
        }
    }

    /**
     * The server's side of the exchange over an accepted socket (TCP_NODELAY set).
     *
     * @param s the socket from {@link #accept}
     * @param timeoutSec how long one read may wait, in seconds
     * @return the exchange
     * @throws BenchException when the socket cannot be set up
     */
    public static PerftestWire server(Socket s, int timeoutSec) {
        try {
            return new PerftestWire(new SocketLink(s, timeoutSec * 1000), false, timeoutSec * 1000);
        } catch (IOException e) {
            throw new BenchException("socket setup failed: " + e.getMessage(), e);
        }
    }

    /**
     * Sets how long one read may wait, e.g. longer while the peer runs a timed test.
     *
     * @param ms milliseconds; 0 waits for ever
     */
    public void readTimeout(int ms) {
        link.readTimeout(ms);
    }

    /** Sets the read timeout back to the one the exchange was made with. */
    public void restoreTimeout() {
        readTimeout(timeoutMs);
    }

    /**
     * perftest's {@code ctx_xchg_data}: the client writes then reads; the server reads then writes.
     *
     * @param mine the bytes to send
     * @param remoteLen how many bytes the peer sends
     * @param what what is exchanged, for the error message
     * @return the peer's bytes
     * @throws BenchException when the peer sends nothing within the read timeout, closes the connection, or the
     *                        connection fails; the message says which and what to check
     */
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
            throw new BenchException(
                    "out-of-band connection failed while exchanging " + what + ": " + e.getMessage(), e);
        }
    }

    /**
     * perftest's {@code exchange_versions} and {@code check_version_compatibility}: 16-byte version strings both ways.
     *
     * @return the peer's version string
     * @throws BenchException when the peer sends no version string, or one older than 5.70 (or the exchange fails)
     */
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
        if (rv < 5.70)
            throw new BenchException("the peer runs perftest " + remoteVersion
                    + ": versions older than 5.70 are not compatible (upgrade perftest)");
        return remoteVersion;
    }

    /**
     * perftest's {@code check_sys_data}: cycle buffer (page size) and cache line size, big-endian ints; each side keeps
     * the larger.
     *
     * @param cycleBuffer this side's page size in bytes
     * @param cacheLine this side's cache line size in bytes
     * @return the larger page size and the larger cache line size
     * @throws BenchException when the peer sends nothing within the read timeout, closes the connection, or the
     *                        connection fails; the message says which and what to check
     */
    public int[] sysData(int cycleBuffer, int cacheLine) {
        byte[] a = exchange(ByteBuffer.allocate(4).putInt(cycleBuffer).array(), 4, "page size");
        byte[] b = exchange(ByteBuffer.allocate(4).putInt(cacheLine).array(), 4, "cache line size");
        return new int[] {
            Math.max(cycleBuffer, ByteBuffer.wrap(a).getInt()),
            Math.max(cacheLine, ByteBuffer.wrap(b).getInt())
        };
    }

    /**
     * perftest's {@code check_mtu}: the {@code ibv_mtu} enum as decimal text in 2 bytes; both use the smaller valid
     * one.
     *
     * @param myMtuCode this side's MTU code, 1..5
     * @return the MTU code both sides use (this side's when the peer's is not valid)
     * @throws BenchException when the peer sends nothing within the read timeout, closes the connection, or the
     *                        connection fails; the message says which and what to check
     */
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

    /**
     * perftest's {@code ctx_hand_shake}: one key message each way (text over TCP, binary over rdma_cm).
     *
     * @param mine this side's connection data
     * @return the peer's connection data
     * @throws BenchException when the exchange fails or the peer's key message cannot be parsed
     */
    public Dest handshake(Dest mine) {
        if (link.binaryKeys())
            return decodeBinary(
                    exchange(encodeBinary(mine), BINARY_KEY_SIZE, "QP keys (handshake)"), mine.gid() != null);
        byte[] msg = encode(mine);
        return decode(exchange(msg, msg.length, "QP keys (handshake)"), mine.gid() != null);
    }

    /**
     * perftest's {@code xchg_bw_reports} (peer 5.33 or newer): size, iterations, peak, average and message rate, 8
     * bytes each, big-endian.
     *
     * @param mine this side's report
     * @return the peer's report
     * @throws BenchException when the peer sends nothing within the read timeout, closes the connection, or the
     *                        connection fails; the message says which and what to check
     */
    public BwResult bwReports(BwResult mine) {
        long size = ByteBuffer.wrap(
                        exchange(ByteBuffer.allocate(8).putLong(mine.size()).array(), 8, "report size"))
                .getLong();
        long iters = ByteBuffer.wrap(
                        exchange(ByteBuffer.allocate(8).putLong(mine.iters()).array(), 8, "report iterations"))
                .getLong();
        double peak = ByteBuffer.wrap(exchange(
                        ByteBuffer.allocate(8).putDouble(mine.bwPeakMBs()).array(), 8, "report peak"))
                .getDouble();
        double avg = ByteBuffer.wrap(exchange(
                        ByteBuffer.allocate(8).putDouble(mine.bwAvgMBs()).array(), 8, "report average"))
                .getDouble();
        double rate = ByteBuffer.wrap(exchange(
                        ByteBuffer.allocate(8).putDouble(mine.msgRateMpps()).array(), 8, "report rate"))
                .getDouble();
        return new BwResult(size, iters, peak, avg, rate);
    }

    /**
     * perftest's {@code ctx_close_connection}: a handshake, then over TCP {@code "done"} with its NUL, then close.
     *
     * @param mine this side's connection data, sent once more
     * @throws BenchException when the closing handshake fails
     */
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

    /** Closes the connection the exchange runs over. */
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
        for (byte x : b)
            sb.append(
                    x >= 0x20 && x < 0x7f
                            ? String.valueOf((char) x)
                            : "\\x" + HexFormat.of().toHexDigits(x));
        return sb.toString();
    }
}
