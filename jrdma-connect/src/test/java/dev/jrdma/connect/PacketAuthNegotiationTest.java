package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.*;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 21 §7: the TCP handshake negotiates jrdma's authenticated mode ({@link EndpointConfig#packetAuth()},
 * {@link PacketAuthAgreement}): on when both sides' devices support it and both configs allow it, plain otherwise,
 * and plain against a server of handshake version 1.
 */
@Timeout(60)
class PacketAuthNegotiationTest {
    private static final Duration T = Duration.ofSeconds(5);

    private static long qpsInTheMode(EndpointGroup g) {
        return g.context().counters().getOrDefault("qps_packet_auth", 0L);
    }

    /** Messages both ways: whatever the mode, the two QPs understand each other (with keys that differed, nothing would arrive). */
    private static void talk(Endpoint client, Endpoint server) throws Exception {
        client.sendSync("ping".getBytes(StandardCharsets.UTF_8));
        assertEquals("ping", server.receive(T).text());
        byte[] big = new byte[4096]; // several packets (MTU 1024)
        for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 7);
        server.sendSync(big);
        assertArrayEquals(big, client.receive(T).bytes());
    }

    /** Connects a client with {@code clientCfg} to a server with {@code serverCfg}, talks, and returns {client on, server on, QPs moved into the mode}. */
    private static long[] connect(EndpointConfig serverCfg, EndpointConfig clientCfg) throws Exception {
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), serverCfg)) {
            long before = qpsInTheMode(server.group());
            var accepted = TestSupport.acceptAsync(server, T.multipliedBy(2));
            try (Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), clientCfg);
                    Endpoint serverSide = accepted.get(15, java.util.concurrent.TimeUnit.SECONDS)) {
                talk(client, serverSide);
                assertEquals(
                        0,
                        server.group().context().counters().getOrDefault("rx_bad_mac", 0L),
                        "no packet of theirs was refused");
                return new long[] {
                    client.packetAuthenticated() ? 1 : 0,
                    serverSide.packetAuthenticated() ? 1 : 0,
                    qpsInTheMode(server.group()) - before
                };
            }
        }
    }

    /** Whether the device of {@link TestSupport#HOST} has the mode (the software device; not rxe). */
    private static boolean supported() {
        try (EndpointGroup probe = EndpointGroup.forLocalAddress(
                InetAddress.getByName(TestSupport.HOST), TestSupport.config().build())) {
            return probe.context().supportsPacketAuth();
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void whenBothSidesSupportItTheModeIsOn() throws Exception {
        assertFalse(
                TestSupport.config().build().packetAuth(), "off by default (opt-in: it costs a hash of every byte)");
        EndpointConfig cfg = TestSupport.config().packetAuth(true).build();
        long[] r = connect(cfg, cfg);
        if (!supported()) { // rxe in the guest: plain RoCEv2, as before
            assertArrayEquals(new long[] {0, 0, 0}, r);
            return;
        }
        assertArrayEquals(
                new long[] {1, 1, 2},
                r,
                "both ends authenticated; both QPs (one device on loopback) moved into the mode");
    }

    @Test
    void aServerThatDoesNotAllowItGivesPlainMode() throws Exception {
        assertArrayEquals(
                new long[] {0, 0, 0},
                connect(
                        TestSupport.config().packetAuth(false).build(),
                        TestSupport.config().packetAuth(true).build()));
    }

    @Test
    void aClientThatDoesNotOfferItGetsPlainMode() throws Exception {
        assertArrayEquals(
                new long[] {0, 0, 0},
                connect(
                        TestSupport.config().packetAuth(true).build(),
                        TestSupport.config().packetAuth(false).build()));
    }

    /** A server of handshake version 1 (an older jrdma) refuses version 2: the client asks again with version 1, plain. */
    @Test
    void aServerOfVersion1IsAskedAgainWithoutTheOffer() throws Exception {
        List<Integer> versions = new CopyOnWriteArrayList<>();
        try (ServerSocket fake = new ServerSocket(0, 10, InetAddress.getByName(TestSupport.HOST))) {
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                for (int i = 0; i < 2; i++) {
                    try (Socket s = fake.accept()) {
                        DataInputStream in = new DataInputStream(s.getInputStream());
                        assertEquals(Endpoint.HANDSHAKE_MAGIC, in.readInt());
                        int v = in.readUnsignedShort();
                        versions.add(v);
                        if (v == 1) return; // what a server of version 1 reads: enough, it hangs up
                        DataOutputStream out = new DataOutputStream(s.getOutputStream());
                        out.writeInt(Endpoint.HANDSHAKE_MAGIC);
                        out.writeShort(1);
                        out.writeByte(Endpoint.VERDICT_VERSION);
                        out.writeUTF("version mismatch: the client speaks handshake version " + v
                                + ", this server version 1");
                        out.flush(); // and closes with the rest of the HELLO unread, as Handshake.readHello of
                        // version 1 does (the
                        // reset comes after the refusal, which the client reads first: 300 of 300 on loopback)
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            });
            RdmaConnectException e = assertThrows(
                    RdmaConnectException.class,
                    () -> Endpoint.connect(
                            TestSupport.HOST,
                            fake.getLocalPort(),
                            TestSupport.config().packetAuth(true).build()));
            server.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(RdmaConnectException.Reason.PEER_GONE, e.reason(), e.getMessage());
            assertEquals(1, (int) versions.getLast(), "the last HELLO is of version 1: " + versions);
            assertEquals(
                    supported() ? List.of(2, 1) : List.of(1),
                    versions,
                    "a device with the mode offers it first, then asks again without");
        }
    }

    @Test
    void bothSidesDeriveOneKeyThatTheHandshakeDoesNotShow() throws Exception {
        PacketAuthAgreement client = new PacketAuthAgreement(),
                server = new PacketAuthAgreement(),
                observer = new PacketAuthAgreement();
        byte[] c = client.key(server.publicKey, 0x12, 0x34, client.publicKey, server.publicKey);
        byte[] s = server.key(client.publicKey, 0x12, 0x34, client.publicKey, server.publicKey);
        assertEquals(PacketAuthAgreement.KEY_BYTES, c.length);
        assertArrayEquals(c, s);
        assertFalse(
                java.util.Arrays.equals(
                        c, client.key(server.publicKey, 0x12, 0x35, client.publicKey, server.publicKey)),
                "bound to the QP numbers");
        assertFalse(
                java.util.Arrays.equals(
                        c, observer.key(server.publicKey, 0x12, 0x34, client.publicKey, server.publicKey)),
                "another private key, another key");
        RdmaConnectException e = assertThrows(
                RdmaConnectException.class,
                () -> client.key(
                        new byte[32], 0x12, 0x34, client.publicKey, new byte[32])); // u = 0: a point of small order
        assertEquals(RdmaConnectException.Reason.PROTOCOL_ERROR, e.reason());
    }
}
