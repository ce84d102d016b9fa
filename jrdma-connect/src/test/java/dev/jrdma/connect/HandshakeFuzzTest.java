package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.Mtu;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 8 §6: the handshake's decoders against mutated and random input. Every decoder a peer's bytes reach (the TCP
 * HELLO and REPLY, {@link ConnParams}, the rdma_cm private data, {@link RemoteBuffer#fromBytes}) either returns a
 * value inside its documented ranges or throws its documented exception (an {@link IOException}:
 * {@link RdmaConnectException} saying what was wrong, or end of input; {@code IllegalArgumentException} for
 * {@code RemoteBuffer.fromBytes}); never anything else. Then a live server on the software device gets mutated HELLOs
 * over TCP, and a legitimate client still connects and exchanges a message.
 *
 * <p>Size: {@code -Djrdma.fuzz.handshakes=N} inputs per decoder (the long run: 100000), {@code -Djrdma.fuzz.connections=M}
 * live connections, {@code -Djrdma.fuzz.seed=S}.
 */
@Timeout(600)
class HandshakeFuzzTest {
    static {
        TestSupport.init();
    }

    static final int INPUTS = Integer.getInteger("jrdma.fuzz.handshakes", 10_000);
    static final int CONNECTIONS = Integer.getInteger("jrdma.fuzz.connections", 40);
    static final long SEED = Long.getLong("jrdma.fuzz.seed", 1);

    private static final ConnParams P =
            new ConnParams(0x7f00_1234_5678L, 0xCAFE01, 0x11, 0, Gid.parse("::ffff:127.0.0.2"), 0xABCDEF, Mtu.MTU_1024);

    private static byte[] hello(byte[] priv) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Handshake.writeHello(new DataOutputStream(b), P, 8, 4096, 64, priv);
        return b.toByteArray();
    }

    /** A HELLO of version 2, offering packet authentication, and an ACCEPT of version 2 taking it. */
    private static byte[] helloV2() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Handshake.writeHello(
                new DataOutputStream(b),
                P,
                8,
                4096,
                64,
                new byte[] {4},
                new byte[PacketAuthAgreement.PUBLIC_KEY_BYTES]);
        return b.toByteArray();
    }

    private static byte[] acceptV2() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Handshake.writeAccept(
                new DataOutputStream(b),
                2,
                P,
                16,
                65536,
                0,
                new byte[] {1, 2, 3},
                new byte[PacketAuthAgreement.PUBLIC_KEY_BYTES]);
        return b.toByteArray();
    }

    private static byte[] accept() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Handshake.writeAccept(new DataOutputStream(b), P, 16, 65536, 0, new byte[] {1, 2, 3});
        return b.toByteArray();
    }

    private static byte[] reject() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Handshake.writeReject(new DataOutputStream(b), Endpoint.VERDICT_REJECT, "no room");
        return b.toByteArray();
    }

    /** A mutation of {@code valid}: bit flips, bytes or 32-bit fields set to edge values, truncation, extension, or random bytes. */
    static byte[] mutate(Random rnd, byte[] valid) {
        if (rnd.nextInt(20) == 0) {
            byte[] r = new byte[rnd.nextInt(valid.length * 2 + 1)];
            rnd.nextBytes(r);
            return r;
        }
        byte[] b = valid.clone();
        for (int m = 1 + rnd.nextInt(3); m > 0; m--) {
            switch (rnd.nextInt(6)) {
                case 0 -> {
                    if (b.length > 0) {
                        int bit = rnd.nextInt(b.length * 8);
                        b[bit >>> 3] ^= (byte) (1 << (bit & 7));
                    }
                }
                case 1 -> {
                    if (b.length > 0) b[rnd.nextInt(b.length)] = (byte) rnd.nextInt();
                }
                case 2 -> { // a 32-bit field (lengths, counts, keys) at an edge value
                    if (b.length >= 4) {
                        int at = rnd.nextInt(b.length - 3);
                        int v = List.of(0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 0x10000, 0xFFFF, 1 << 24)
                                .get(rnd.nextInt(7));
                        b[at] = (byte) (v >>> 24);
                        b[at + 1] = (byte) (v >>> 16);
                        b[at + 2] = (byte) (v >>> 8);
                        b[at + 3] = (byte) v;
                    }
                }
                case 3 -> {
                    if (b.length >= 2) {
                        int at = rnd.nextInt(b.length - 1);
                        b[at] = (byte) 0xFF;
                        b[at + 1] = (byte) rnd.nextInt();
                    }
                } // a u16 length
                case 4 -> b = java.util.Arrays.copyOf(b, rnd.nextInt(b.length + 1)); // truncated
                default -> { // extended
                    int old = b.length;
                    b = java.util.Arrays.copyOf(b, old + 1 + rnd.nextInt(64));
                    for (int i = old; i < b.length; i++) b[i] = (byte) rnd.nextInt();
                }
            }
        }
        return b;
    }

    private static DataInputStream in(byte[] b) {
        return new DataInputStream(new ByteArrayInputStream(b));
    }

    private static void checkParams(ConnParams p) {
        assertTrue(p.qpNum() >>> 24 == 0 && p.psn() >>> 24 == 0 && p.lid() >>> 16 == 0 && p.mtu() != null, p::toString);
    }

    private static void checkBody(int credits, int messageSize, long exportLength, byte[] priv) {
        assertTrue(
                credits >= 1
                        && credits <= 16384
                        && messageSize >= 1
                        && messageSize <= EndpointConfig.MAX_MESSAGE_SIZE
                        && exportLength >= 0,
                "settings out of range accepted: credits " + credits + ", message size " + messageSize
                        + ", export length " + exportLength);
        assertTrue(priv.length <= EndpointConfig.MAX_PRIVATE_DATA, "private data over the limit accepted");
    }

    /** Runs {@code decode}: a value or an IOException is fine; anything else fails the test with the input. */
    private interface Decode {
        void run() throws IOException;
    }

    private static void expectValueOrIoException(String what, byte[] input, Decode decode) {
        try {
            decode.run();
        } catch (IOException e) {
            // refused with the documented exception: RdmaConnectException (a reason and a message) or end of input
            if (e instanceof RdmaConnectException r)
                assertTrue(r.reason() != null
                        && r.getMessage() != null
                        && !r.getMessage().isBlank());
        } catch (Throwable t) {
            throw new AssertionError(
                    what + " threw " + t + " for " + java.util.HexFormat.of().formatHex(input), t);
        }
    }

    @Test
    void everyDecoderReturnsAValidValueOrItsDocumentedException() throws IOException {
        Random rnd = new Random(SEED);
        byte[] hello = hello(new byte[] {9, 8, 7}),
                accept = accept(),
                reject = reject(),
                params = java.util.Arrays.copyOfRange(hello, 6, 6 + ConnParams.SIZE);
        byte[] cm = CmConnector.hello(
                TestSupport.config().privateData(new byte[] {5, 6}).build(), new RemoteBuffer(0x1000, 0x1234, 64));
        byte[] rb = new RemoteBuffer(0x1000, 0x1234, 64).toBytes();
        byte[] hello2 = helloV2(), accept2 = acceptV2();
        int accepted = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < INPUTS; i++) {
            byte[] h = mutate(rnd, rnd.nextBoolean() ? hello : hello2);
            expectValueOrIoException("Handshake.readHello", h, () -> {
                Handshake.Hello x =
                        Handshake.readHello(in(h), new DataOutputStream(new ByteArrayOutputStream()), "fuzz");
                checkParams(x.params());
                checkBody(x.credits(), x.messageSize(), x.exportLength(), x.privateData());
                assertTrue(
                        x.authPublicKey() == null || x.authPublicKey().length == PacketAuthAgreement.PUBLIC_KEY_BYTES);
            });
            int pick = rnd.nextInt(3);
            byte[] r = mutate(rnd, pick == 0 ? accept : pick == 1 ? accept2 : reject);
            expectValueOrIoException("Handshake.readReply", r, () -> {
                Handshake.Reply x = Handshake.readReply(in(r), "fuzz", pick == 1 ? 2 : 1);
                assertTrue(
                        x.authPublicKey() == null || x.authPublicKey().length == PacketAuthAgreement.PUBLIC_KEY_BYTES);
                checkParams(x.params());
                checkBody(x.credits(), x.messageSize(), x.exportLength(), x.privateData());
            });
            byte[] p = mutate(rnd, params);
            expectValueOrIoException("ConnParams.readFrom", p, () -> checkParams(ConnParams.readFrom(in(p))));
            byte[] c = mutate(rnd, cm);
            expectValueOrIoException("CmConnector.parseHello", c, () -> {
                CmConnector.Hello x = CmConnector.parseHello(c, "fuzz");
                assertTrue(x.credits() >= 1
                        && x.messageSize() >= 1
                        && x.messageSize() <= EndpointConfig.MAX_MESSAGE_SIZE
                        && x.user().length <= CmConnector.MAX_USER);
            });
            byte[] k = mutate(rnd, rb);
            try {
                if (RemoteBuffer.fromBytes(k).length() >= 0) accepted++;
            } catch (IllegalArgumentException e) {
                // documented
            } catch (Throwable t) {
                throw new AssertionError(
                        "RemoteBuffer.fromBytes threw " + t + " for "
                                + java.util.HexFormat.of().formatHex(k),
                        t);
            }
        }
        System.out.printf(
                "handshake fuzz seed %d: %d inputs to each of 5 decoders in %.2f s (%d remote buffers decoded)%n",
                SEED, INPUTS, (System.nanoTime() - t0) / 1e9, accepted);
    }

    /**
     * A forged HELLO announcing a message size past {@link EndpointConfig#MAX_MESSAGE_SIZE} (2 GiB - 1, 2 GiB as an
     * unsigned field, 2^30 + 1) gets a REJECT that names the message size, not an accepted connection whose peer
     * claims buffers nobody should allocate; nothing stays pending and a legitimate client is still served.
     */
    @Test
    void aHelloAnnouncingAHugeMessageSizeIsRejectedWithTheReason() throws Exception {
        EndpointConfig cfg = TestSupport.config().timeout(Duration.ofSeconds(5)).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            CompletableFuture<Endpoint> accepting = TestSupport.acceptAsync(server, Duration.ofSeconds(60));
            for (int announced :
                    new int[] {Integer.MAX_VALUE, Integer.MIN_VALUE, EndpointConfig.MAX_MESSAGE_SIZE + 1}) {
                try (Socket s = new Socket(TestSupport.HOST, server.port())) {
                    s.setSoTimeout(10_000);
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    Handshake.writeHello(out, P, 8, announced, 0, new byte[0]);
                    RdmaConnectException e = org.junit.jupiter.api.Assertions.assertThrows(
                            RdmaConnectException.class,
                            () -> Handshake.readReply(new DataInputStream(s.getInputStream()), "the test's server"),
                            "a HELLO announcing " + Integer.toUnsignedString(announced)
                                    + " bytes per message was accepted");
                    assertEquals(RdmaConnectException.Reason.REJECTED, e.reason(), e::toString);
                    assertTrue(
                            e.getMessage().contains("message size " + Integer.toUnsignedString(announced)),
                            e.getMessage());
                }
            }
            assertTrue(!accepting.isDone(), "no forged HELLO became an endpoint");
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (server.pendingHandshakes() > 0 && System.nanoTime() < end) Thread.sleep(10);
            assertEquals(0, server.pendingHandshakes());
            assertEquals(3, server.counters().badHandshakes(), server.counters().toString());
            try (Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                    Endpoint served = accepting.get(30, TimeUnit.SECONDS)) {
                client.sendSync(new byte[] {7});
                assertEquals(7, served.receive(Duration.ofSeconds(5)).bytes()[0]);
            }
        }
    }

    /**
     * A live server gets {@link #CONNECTIONS} mutated HELLOs over TCP (each connection sends one and waits for the
     * server to answer or hang up): each ends in a rejection or a hang-up within the handshake deadline, no
     * handshake stays pending, and a legitimate client still connects and exchanges a message.
     */
    @Test
    void aLiveServerSurvivesMutatedHellosAndStillServes() throws Exception {
        EndpointConfig cfg = TestSupport.config().timeout(Duration.ofSeconds(2)).build();
        Random rnd = new Random(SEED + 1);
        byte[] valid = hello(new byte[0]);
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            CompletableFuture<Endpoint> accepting = TestSupport.acceptAsync(server, Duration.ofSeconds(120));
            for (int i = 0; i < CONNECTIONS; i++) {
                byte[] h = mutate(rnd, valid);
                try (Socket s = new Socket(TestSupport.HOST, server.port())) {
                    s.setSoTimeout(10_000);
                    s.getOutputStream().write(h);
                    s.getOutputStream().flush();
                    s.shutdownOutput(); // no more bytes: the server decides on what it has
                    InputStream in = s.getInputStream();
                    long t0 = System.nanoTime();
                    while (in.read() >= 0) {
                        // its answer (a rejection, or an ACCEPT for a HELLO that is still valid), then its end of the
                        // connection
                    }
                    assertTrue(
                            System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(8),
                            "the server held a fuzzed handshake past its deadline");
                } catch (java.net.SocketException e) {
                    // reset by the server: it hung up
                }
                if (accepting.isDone()) { // a mutation that is still a valid HELLO was accepted: that endpoint is the
                    // peer's, closed here
                    accepting.get().close();
                    accepting = TestSupport.acceptAsync(server, Duration.ofSeconds(120));
                }
            }
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (server.pendingHandshakes() > 0 && System.nanoTime() < end) Thread.sleep(10);
            assertEquals(0, server.pendingHandshakes(), "fuzzed handshakes still pending");
            try (Endpoint client = Endpoint.connect(TestSupport.HOST, server.port(), cfg);
                    Endpoint served = accepting.get(30, TimeUnit.SECONDS)) {
                client.sendSync(new byte[] {42});
                assertEquals(42, served.receive(Duration.ofSeconds(5)).bytes()[0]);
            } catch (java.util.concurrent.ExecutionException e) {
                fail("the server accepted no legitimate client after the fuzzing", e);
            }
        }
    }
}
