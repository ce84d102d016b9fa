package dev.jrdma.connect;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * The out-of-band handshake over TCP, and the translation of every way it can fail into a
 * {@link RdmaConnectException} with a reason and a message that says what to do.
 *
 * <pre>
 * client -> server  HELLO  "JRDM" u16 version, ConnParams, u32 credits, u32 messageSize, u64 exportLength, u16 n, private data[n]
 *                          [version 2: u8 flags, bit 0: packet authentication offered; then its X25519 public key, 32 bytes]
 * server -> client  REPLY  "JRDM" u16 version, u8 verdict:
 *                          0 ACCEPT  ConnParams, u32 credits, u32 messageSize, u64 exportLength, u16 n, private data[n]
 *                                    [version 2: u8 flags, bit 0: packet authentication on; then the server's public key]
 *                          1 REJECT  UTF reason (written as version 1: every version reads it)
 *                          2 VERSION UTF reason (the server speaks another version)
 * client -> server  READY  'R'  (the client's QP is in RTS; the server moves its QP RTR -> RTS)
 * afterwards        'B' from either side: goodbye (graceful close); end of stream without it: the peer is gone
 * </pre>
 * The server's QP reaches RTR only once it has the client's parameters, and RTS only once the client has the
 * server's (READY); the client's QP reaches RTR/RTS only once it has the server's.
 *
 * <p>Versions: a server reads HELLO of version 1 and 2 and answers in the client's; a client sends version 2 only
 * when it offers packet authentication ({@link PacketAuthAgreement}), so a server of version 1 (an older jrdma) still
 * takes every client that does not, and one that does falls back to version 1 (plain) when such a server refuses its
 * version ({@link Endpoint}).
 */
final class Handshake {
    private static final System.Logger LOG = System.getLogger(Handshake.class.getName());

    private Handshake() {}

    /** The largest HELLO: header, parameters, settings and the most private data. */
    static final int MAX_HELLO =
            4 + 2 + ConnParams.SIZE + 4 + 4 + 8 + 2 + EndpointConfig.MAX_PRIVATE_DATA + Handshake.MAX_EXTENSION;

    /** The largest extension of version 2: flags and a public key. */
    static final int MAX_EXTENSION = 1 + PacketAuthAgreement.PUBLIC_KEY_BYTES;
    /** Bit 0 of version 2's flags: packet authentication offered (HELLO) or on (ACCEPT); a public key follows. */
    static final int FLAG_PACKET_AUTH = 1;

    /** The server answered VERSION: it does not read the HELLO's version (one of version 1 refuses version 2). */
    static final class VersionRefused extends RdmaConnectException {
        VersionRefused(String message) {
            super(Reason.VERSION_MISMATCH, message);
        }
    }

    /** A client's HELLO; {@code authPublicKey}: its X25519 key when it offers packet authentication, else null. */
    record Hello(
            int version,
            ConnParams params,
            int credits,
            int messageSize,
            long exportLength,
            byte[] privateData,
            byte[] authPublicKey) {}

    /** A server's ACCEPT; {@code authPublicKey}: its X25519 key when packet authentication is on, else null. */
    record Reply(
            ConnParams params,
            int credits,
            int messageSize,
            long exportLength,
            byte[] privateData,
            byte[] authPublicKey) {}

    static Socket openSocket(String host, int port, EndpointConfig cfg, Clock clock, long deadline)
            throws RdmaConnectException {
        String where = host + ":" + port;
        InetAddress addr;
        try {
            addr = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR,
                    "cannot resolve host '" + host + "': check the name (or use an IP address)",
                    e);
        }
        if (port < 1 || port > 65535)
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR, "port " + port + " is outside 1..65535");
        IOException last = null;
        while (true) {
            long left = (deadline - clock.nanoTime()) / 1_000_000;
            if (left <= 0) break;
            Socket s = new Socket();
            try {
                s.setTcpNoDelay(true);
                if (cfg.localAddress() != null) {
                    try {
                        s.bind(new InetSocketAddress(cfg.localAddress(), 0));
                    } catch (BindException e) {
                        s.close();
                        throw new RdmaConnectException(
                                RdmaConnectException.Reason.ADDRESS_ERROR,
                                "cannot bind local address "
                                        + cfg.localAddress().getHostAddress() + ": it is not an address of this host ("
                                        + e.getMessage() + ")",
                                e);
                    }
                }
                s.connect(new InetSocketAddress(addr, port), (int) Math.max(1, left));
                return s;
            } catch (RdmaConnectException e) {
                throw e;
            } catch (IOException e) {
                closeQuietly(s);
                last = e;
                if (e instanceof ConnectException && !(e instanceof NoRouteToHostException) && cfg.retryConnect()) {
                    sleep(Math.min(100, Math.max(1, left)));
                    continue;
                }
                throw translate(e, where, cfg.timeout(), "the server");
            }
        }
        if (last != null) throw translate(last, where, cfg.timeout(), "the server");
        throw new RdmaConnectException(
                RdmaConnectException.Reason.TIMEOUT,
                "no connection to " + where + " within " + cfg.timeout().toMillis() + " ms");
    }

    static RdmaConnectException translate(IOException e, String where, Duration timeout, String peer) {
        if (e instanceof RdmaConnectException r) return r;
        if (e instanceof SocketTimeoutException) {
            return new RdmaConnectException(
                    RdmaConnectException.Reason.TIMEOUT,
                    "timed out after " + timeout.toMillis() + " ms: " + peer + " at " + where
                            + " did not answer (host down, firewall, or a busy peer; raise the timeout if it is slow)",
                    e);
        }
        if (e instanceof NoRouteToHostException) {
            return new RdmaConnectException(
                    RdmaConnectException.Reason.ADDRESS_ERROR,
                    "no route to " + where + ": check the address and the network",
                    e);
        }
        if (e instanceof ConnectException) {
            return new RdmaConnectException(
                    RdmaConnectException.Reason.NOTHING_LISTENING,
                    "nothing is listening at " + where
                            + " (connection refused): start the server first, or check the host and port",
                    e);
        }
        if (e instanceof EOFException
                || (e instanceof SocketException
                        && e.getMessage() != null
                        && (e.getMessage().contains("reset")
                                || e.getMessage().contains("Broken pipe")
                                || e.getMessage().contains("closed")))) {
            return new RdmaConnectException(
                    RdmaConnectException.Reason.PEER_GONE,
                    peer + " at " + where
                            + " closed the connection during the handshake (it exited, crashed, or is not a jrdma endpoint)",
                    e);
        }
        return new RdmaConnectException(
                RdmaConnectException.Reason.ADDRESS_ERROR, "connection to " + where + " failed: " + e, e);
    }

    /**
     * The socket's input with one deadline (on {@code clock}) for the whole exchange: before every read the socket's
     * timeout is set to what is left, so a peer that trickles a byte every few seconds is cut off at the deadline like
     * a silent one.
     */
    static DataInputStream input(Socket s, Clock clock, long deadline) throws IOException {
        return new DataInputStream(new DeadlineInput(s, clock, deadline));
    }

    private static final class DeadlineInput extends java.io.InputStream {
        private final Socket socket;
        private final java.io.InputStream in;
        private final Clock clock;
        private final long deadline;

        DeadlineInput(Socket socket, Clock clock, long deadline) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
            this.clock = clock;
            this.deadline = deadline;
        }

        private void arm() throws IOException {
            long left = (deadline - clock.nanoTime()) / 1_000_000;
            if (left <= 0) throw new SocketTimeoutException("the handshake's deadline passed");
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
        }

        @Override
        public int read() throws IOException {
            arm();
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            arm();
            return in.read(b, off, len);
        }
    }

    /** Runs the server's filter: its reason, null to accept; a filter that throws rejects (and says so). */
    static String screen(ServerEndpoint.ConnectionFilter filter, InetSocketAddress client, byte[] privateData) {
        if (filter == null) return null;
        try {
            return filter.check(client, privateData);
        } catch (Throwable t) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "the connection filter threw for " + client + "; the client is rejected",
                    t);
            return "the server's connection filter failed (" + t.getClass().getSimpleName() + ")";
        }
    }

    /** A HELLO of version 1: no offer of packet authentication (what every jrdma server reads). */
    static void writeHello(
            DataOutputStream out, ConnParams p, int credits, int messageSize, long exportLength, byte[] priv)
            throws IOException {
        writeHello(out, p, credits, messageSize, exportLength, priv, null);
    }

    /** A HELLO: of version 2 offering packet authentication with {@code authPublicKey}, or of version 1 when it is null. */
    static void writeHello(
            DataOutputStream out,
            ConnParams p,
            int credits,
            int messageSize,
            long exportLength,
            byte[] priv,
            byte[] authPublicKey)
            throws IOException {
        out.writeInt(Endpoint.HANDSHAKE_MAGIC);
        out.writeShort(authPublicKey == null ? Endpoint.HANDSHAKE_MIN_VERSION : Endpoint.HANDSHAKE_VERSION);
        writeBody(out, p, credits, messageSize, exportLength, priv);
        if (authPublicKey != null) writeExtension(out, authPublicKey);
        out.flush();
    }

    /** An ACCEPT of version 1 (plain). */
    static void writeAccept(
            DataOutputStream out, ConnParams p, int credits, int messageSize, long exportLength, byte[] priv)
            throws IOException {
        writeAccept(out, Endpoint.HANDSHAKE_MIN_VERSION, p, credits, messageSize, exportLength, priv, null);
    }

    /** An ACCEPT in the client's {@code version}; from version 2 it says whether packet authentication is on ({@code authPublicKey} not null). */
    static void writeAccept(
            DataOutputStream out,
            int version,
            ConnParams p,
            int credits,
            int messageSize,
            long exportLength,
            byte[] priv,
            byte[] authPublicKey)
            throws IOException {
        out.writeInt(Endpoint.HANDSHAKE_MAGIC);
        out.writeShort(version);
        out.writeByte(Endpoint.VERDICT_ACCEPT);
        writeBody(out, p, credits, messageSize, exportLength, priv);
        if (version >= 2) writeExtension(out, authPublicKey);
        out.flush();
    }

    private static void writeExtension(DataOutputStream out, byte[] authPublicKey) throws IOException {
        out.writeByte(authPublicKey == null ? 0 : FLAG_PACKET_AUTH);
        if (authPublicKey != null) out.write(authPublicKey);
    }

    /** Version 2's extension: the peer's public key when its flags have {@link #FLAG_PACKET_AUTH}, else null (other bits: later versions'). */
    private static byte[] readExtension(DataInputStream in) throws IOException {
        int flags = in.readUnsignedByte();
        if ((flags & FLAG_PACKET_AUTH) == 0) return null;
        byte[] key = new byte[PacketAuthAgreement.PUBLIC_KEY_BYTES];
        in.readFully(key);
        return key;
    }

    static void writeReject(DataOutputStream out, int verdict, String reason) throws IOException {
        out.writeInt(Endpoint.HANDSHAKE_MAGIC);
        // a refusal reads the same in every version: version 1's header, so that a client of version 1 reads the reason
        out.writeShort(
                verdict == Endpoint.VERDICT_VERSION ? Endpoint.HANDSHAKE_VERSION : Endpoint.HANDSHAKE_MIN_VERSION);
        out.writeByte(verdict);
        out.writeUTF(reason.length() > 1000 ? reason.substring(0, 1000) : reason);
        out.flush();
    }

    private static void writeBody(
            DataOutputStream out, ConnParams p, int credits, int messageSize, long exportLength, byte[] priv)
            throws IOException {
        p.writeTo(out);
        out.writeInt(credits);
        out.writeInt(messageSize);
        out.writeLong(exportLength);
        out.writeShort(priv.length);
        out.write(priv);
    }

    /** Reads a client's HELLO; answers a version mismatch itself (and throws). */
    static Hello readHello(DataInputStream in, DataOutputStream out, String where) throws IOException {
        int magic = in.readInt();
        if (magic != Endpoint.HANDSHAKE_MAGIC) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    String.format(
                            "the client at %s is not a jrdma endpoint (its first bytes are 0x%08x, expected \"JRDM\")",
                            where, magic));
        }
        int version = in.readUnsignedShort();
        if (version < Endpoint.HANDSHAKE_MIN_VERSION || version > Endpoint.HANDSHAKE_VERSION) {
            String reason = "version mismatch: the client speaks handshake version " + version
                    + ", this server versions " + Endpoint.HANDSHAKE_MIN_VERSION + " to " + Endpoint.HANDSHAKE_VERSION
                    + " (run the same jrdma version on both sides)";
            try {
                writeReject(out, Endpoint.VERDICT_VERSION, reason);
            } catch (IOException ignored) {
                // the client will see the connection close
            }
            throw new RdmaConnectException(RdmaConnectException.Reason.VERSION_MISMATCH, reason);
        }
        ConnParams p = ConnParams.readFrom(in);
        int credits = in.readInt();
        int messageSize = in.readInt();
        long exportLength = in.readLong();
        byte[] priv = readPrivate(in);
        byte[] authPublicKey = version >= 2 ? readExtension(in) : null;
        String invalid = invalidBody(credits, messageSize, exportLength, "client at " + where);
        if (invalid != null) {
            // a clear answer, not a silent hang-up: the client learns which setting was refused
            try {
                writeReject(out, Endpoint.VERDICT_REJECT, invalid);
            } catch (IOException ignored) {
                // the client will see the connection close
            }
            throw new RdmaConnectException(RdmaConnectException.Reason.PROTOCOL_ERROR, invalid);
        }
        return new Hello(version, p, credits, messageSize, exportLength, priv, authPublicKey);
    }

    /** Reads the answer to a HELLO of version 1. */
    static Reply readReply(DataInputStream in, String where) throws IOException {
        return readReply(in, where, Endpoint.HANDSHAKE_MIN_VERSION);
    }

    /** Reads the answer to a HELLO of version {@code sent}: an ACCEPT must be of that version. */
    static Reply readReply(DataInputStream in, String where, int sent) throws IOException {
        int magic = in.readInt();
        if (magic != Endpoint.HANDSHAKE_MAGIC) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    String.format(
                            "the server at %s is not a jrdma endpoint (it answered 0x%08x, expected \"JRDM\"): check the port",
                            where, magic));
        }
        int version = in.readUnsignedShort();
        int verdict = in.readUnsignedByte();
        if (verdict == Endpoint.VERDICT_VERSION)
            throw new VersionRefused("the server at " + where + " refused the connection: " + in.readUTF());
        if (verdict == Endpoint.VERDICT_REJECT
                && version >= Endpoint.HANDSHAKE_MIN_VERSION
                && version <= Endpoint.HANDSHAKE_VERSION) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.REJECTED,
                    "the server at " + where + " rejected the connection: " + in.readUTF());
        }
        if (version != sent) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.VERSION_MISMATCH,
                    "version mismatch: the server at " + where + " speaks handshake version " + version
                            + ", this client version " + sent + " (run the same jrdma version on both sides)");
        }
        if (verdict != Endpoint.VERDICT_ACCEPT) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the server at " + where + " answered with unknown verdict " + verdict);
        }
        ConnParams p = ConnParams.readFrom(in);
        int credits = in.readInt();
        int messageSize = in.readInt();
        long exportLength = in.readLong();
        byte[] priv = readPrivate(in);
        byte[] authPublicKey = version >= 2 ? readExtension(in) : null;
        String invalid = invalidBody(credits, messageSize, exportLength, "server at " + where);
        if (invalid != null) throw new RdmaConnectException(RdmaConnectException.Reason.PROTOCOL_ERROR, invalid);
        return new Reply(p, credits, messageSize, exportLength, priv, authPublicKey);
    }

    private static byte[] readPrivate(DataInputStream in) throws IOException {
        int n = in.readUnsignedShort();
        if (n > EndpointConfig.MAX_PRIVATE_DATA) {
            throw new RdmaConnectException(
                    RdmaConnectException.Reason.PROTOCOL_ERROR,
                    "the peer sent " + n + " bytes of private data, more than " + EndpointConfig.MAX_PRIVATE_DATA);
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /**
     * What is wrong with a peer's announced settings, or null when they are valid. The message size is bounded as a
     * local {@link EndpointConfig#messageSize} is: whoever sizes buffers from a peer's announcement (e.g. a send
     * buffer for its largest message) must never be made to allocate more than that by a forged HELLO.
     */
    static String invalidBody(int credits, int messageSize, long exportLength, String who) {
        if (credits < 1
                || credits > 16384
                || messageSize < 1
                || messageSize > EndpointConfig.MAX_MESSAGE_SIZE
                || exportLength < 0) {
            return "the " + who + " sent invalid endpoint settings (credits " + credits + " of 1..16384, message size "
                    + Integer.toUnsignedString(messageSize) + " of 1.." + EndpointConfig.MAX_MESSAGE_SIZE
                    + ", export length "
                    + Long.toUnsignedString(exportLength) + ")";
        }
        return null;
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
