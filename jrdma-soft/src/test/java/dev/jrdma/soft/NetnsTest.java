package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two hosts on one machine: two network namespaces joined by a veth pair, one JVM in each, on UDP port 4791.
 * Runs only where this user may create namespaces (root with iproute2); skipped elsewhere.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class NetnsTest {
    /**
     * The address vectors' IP header fields in the captured runs (traffic class, flow label, hop limit): the initiator
     * in namespace A (.1) and the peer in B (.2) each with their own, none of them a kernel default. The hop limit on
     * the wire is the route's (64) all the same, as Linux sets it for RoCEv2 devices.
     */
    private static final int[] HEADER_A = {0xB8, 0x12345, 7}, HEADER_B = {0x28, 0xABCDE, 200};

    private static final int ROUTE_HOP_LIMIT = 64;

    private static int run(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(20, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (Exception e) {
            return -1;
        }
    }

    @Test
    void twoNamespacesTalkOverAVethPair() throws Exception {
        exchange(null, "-Djrdma.soft.ipv4.send=udp", false);
    }

    /**
     * RoCEv2 over IPv6 between the namespaces (devices soft@[fd31::1] and soft@[fd31::2], their GIDs at index 2 after
     * the default GID and the IPv4 one, as rxe lists them), captured on the veth: every packet's ICRC recomputed from
     * the IPv6 header as captured (traffic class, flow label and hop limit masked) as a receiving RoCE device would,
     * not with jrdma's Icrc class. Each side's address vector asks for its own traffic class, flow label and hop limit
     * ({@link #HEADER_A}, {@link #HEADER_B}): every packet carries its sender's traffic class and flow label, and the
     * route's hop limit.
     */
    @Test
    void ipv6PacketsCarryTheIpv6IcrcOnTheWire() throws Exception {
        Assumptions.assumeTrue(
                Files.isExecutable(Path.of("/usr/bin/tcpdump")) || Files.isExecutable(Path.of("/usr/sbin/tcpdump")),
                "no tcpdump");
        Path pcap = Files.createTempFile("jrdma-v6", ".pcap");
        try {
            exchange(pcap, "-Djrdma.soft.ipv4.send=udp", true);
            int roce = 0;
            java.util.Set<Integer> senders = new java.util.HashSet<>();
            for (byte[] f : Pcap.ethernetFrames(Files.readAllBytes(pcap))) {
                ByteBuffer e = ByteBuffer.wrap(f);
                if (f.length < 14 + 48 || e.getShort(12) != (short) 0x86dd) continue;
                ByteBuffer ip = e.slice(14, f.length - 14);
                if (ip.get(6) != 17 || (ip.getShort(42) & 0xFFFF) != 4791) continue;
                roce++;
                int sender = ip.get(23) & 0xFF;
                senders.add(sender);
                int[] want = sender == 1 ? HEADER_A : HEADER_B;
                int first = ip.getInt(0);
                assertEquals(
                        Ecn.outgoing(want[0]),
                        (first >>> 20) & 0xFF,
                        "traffic class (and ECT(0)) of packet " + roce + " from ::" + sender);
                assertEquals(want[1], first & 0xFFFFF, "flow label of packet " + roce + " from ::" + sender);
                assertEquals(
                        ROUTE_HOP_LIMIT,
                        ip.get(7) & 0xFF,
                        "hop limit of packet " + roce + " from ::" + sender + " (the route's, not the AV's " + want[2]
                                + ")");
                int udpLen = ip.getShort(4) & 0xFFFF;
                assertEquals(udpLen, ip.getShort(44) & 0xFFFF, "UDP length = IPv6 payload length");
                // (the UDP checksum is the kernel's, and a capture on a veth shows it before checksum offload fills it
                // in)
                byte[] in = new byte[8 + 40 + udpLen - 4];
                java.util.Arrays.fill(in, 0, 8, (byte) 0xFF);
                ip.get(0, in, 8, 40 + udpLen - 4);
                in[8] = (byte) (in[8] | 0x0F);
                in[9] = in[10] = in[11] = (byte) 0xFF;
                in[8 + 7] = (byte) 0xFF;
                in[8 + 46] = in[8 + 47] = (byte) 0xFF;
                in[8 + 48 + 4] = (byte) 0xFF;
                CRC32 c = new CRC32();
                c.update(in);
                int stored = ip.order(ByteOrder.LITTLE_ENDIAN).getInt(40 + udpLen - 4);
                ip.order(ByteOrder.BIG_ENDIAN);
                assertEquals((int) c.getValue(), stored, "IPv6 ICRC of packet " + roce);
            }
            assertTrue(roce >= 4, "RoCEv2 packets over IPv6 captured: " + roce);
            assertEquals(java.util.Set.of(1, 2), senders, "both sides' packets captured");
        } finally {
            Files.deleteIfExists(pcap);
        }
    }

    /**
     * The raw IPv4 send path on the wire: every packet captured on the veth (both directions) carries a non-zero
     * identification of the sender's choosing, a correct IP header checksum and UDP checksum, and an ICRC that is
     * right for the IP header as captured, recomputed here from the captured bytes as another RoCE device would
     * (masks per the RoCEv2 ICRC rules), not with jrdma's Icrc class. TOS is the traffic class of the sender's
     * address vector ({@link #HEADER_A}, {@link #HEADER_B}), TTL the route's.
     */
    @Test
    void rawIpv4PacketsCarryAnIcrcOverTheIdentificationOnTheWire() throws Exception {
        Assumptions.assumeTrue(
                Files.isExecutable(Path.of("/usr/bin/tcpdump")) || Files.isExecutable(Path.of("/usr/sbin/tcpdump")),
                "no tcpdump");
        Path pcap = Files.createTempFile("jrdma-raw", ".pcap");
        try {
            exchange(pcap, "-Djrdma.soft.ipv4.send=raw", false);
            List<byte[]> frames = Pcap.ethernetFrames(Files.readAllBytes(pcap));
            int roce = 0;
            java.util.Set<String> senders = new java.util.HashSet<>();
            for (byte[] f : frames) {
                ByteBuffer e = ByteBuffer.wrap(f);
                if (f.length < 14 + 28 || e.getShort(12) != 0x0800) continue;
                ByteBuffer ip = e.slice(14, f.length - 14);
                if (ip.get(9) != 17 || (ip.getShort(22) & 0xFFFF) != 4791) continue;
                roce++;
                int id = ip.getShort(4) & 0xFFFF;
                senders.add((ip.getInt(12) & 0xFF) + "");
                int[] want = (ip.getInt(12) & 0xFF) == 1 ? HEADER_A : HEADER_B;
                assertEquals(Ecn.outgoing(want[0]), ip.get(1) & 0xFF, "TOS (and ECT(0)) of packet " + roce);
                assertEquals(
                        ROUTE_HOP_LIMIT,
                        ip.get(8) & 0xFF,
                        "TTL of packet " + roce + " (the route's, not the AV's " + want[2] + ")");
                assertNotEquals(0, id, "identification of packet " + roce);
                assertEquals(0x4000, ip.getShort(6) & 0xFFFF, "DF, not fragmented");
                assertEquals(0, Pcap.onesComplementSum(ip, 0, 20), "IPv4 header checksum of packet " + roce);
                int udpLen = ip.getShort(24) & 0xFFFF;
                assertNotEquals(0, ip.getShort(26), "a UDP checksum is set");
                ByteBuffer pseudo = ByteBuffer.allocate(12 + udpLen + 1);
                pseudo.putInt(ip.getInt(12))
                        .putInt(ip.getInt(16))
                        .putShort((short) 17)
                        .putShort((short) udpLen);
                pseudo.put(ip.slice(20, udpLen));
                assertEquals(0, Pcap.onesComplementSum(pseudo, 0, 12 + udpLen), "UDP checksum of packet " + roce);
                // the ICRC as a receiving RoCE device recomputes it: masked LRH, IP header with TOS, TTL and
                // checksum masked, UDP header with its checksum masked, BTH with resv8a masked, then the rest
                byte[] in = new byte[8 + 20 + udpLen - 4];
                java.util.Arrays.fill(in, 0, 8, (byte) 0xFF);
                ip.get(0, in, 8, 20 + udpLen - 4);
                in[8 + 1] = (byte) 0xFF;
                in[8 + 8] = (byte) 0xFF;
                in[8 + 10] = (byte) 0xFF;
                in[8 + 11] = (byte) 0xFF;
                in[8 + 26] = (byte) 0xFF;
                in[8 + 27] = (byte) 0xFF;
                in[8 + 28 + 4] = (byte) 0xFF;
                CRC32 c = new CRC32();
                c.update(in);
                int stored = ip.order(ByteOrder.LITTLE_ENDIAN).getInt(20 + udpLen - 4);
                ip.order(ByteOrder.BIG_ENDIAN);
                assertEquals((int) c.getValue(), stored, "ICRC of packet " + roce + " (identification " + id + ")");
            }
            assertTrue(roce >= 4, "RoCEv2 packets captured: " + roce + " of " + frames.size() + " frames");
            assertEquals(java.util.Set.of("1", "2"), senders, "both sides' packets captured");
        } finally {
            Files.deleteIfExists(pcap);
        }
    }

    /** PeerMain's and InitiatorMain's third argument: TC,FLOW,HOP. */
    private static String headerArg(int[] h) {
        return h[0] + "," + h[1] + "," + h[2];
    }

    /** Whether interface {@code dev} in namespace {@code ns} has a link-local IPv6 address that is not tentative. */
    private static boolean linkLocalReady(String ns, String dev) {
        try {
            Process p = new ProcessBuilder("ip", "-n", ns, "-6", "addr", "show", "dev", dev, "scope", "link")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor(10, TimeUnit.SECONDS);
            return out.contains("fe80") && !out.contains("tentative");
        } catch (Exception e) {
            return false;
        }
    }

    /** One SEND and one WRITE_WITH_IMM between the namespaces; with {@code pcap}, the veth's RoCEv2 traffic captured there. */
    /**
     * Between two jrdma devices batches leave through the UDP socket with UDP segmentation ({@link TxBatch#jrdmaPeer}):
     * a capture on the veth would show segmented datagrams before the receiver cuts them; the captures here check the
     * wire as rxe or a NIC gets it (the exchange without a capture keeps the default).
     */
    private static final String WIRE_AS_RXE_SEES_IT = "-Djrdma.soft.gso=off";

    private void exchange(Path pcap, String jvmOption, boolean ipv6) throws Exception {
        Assumptions.assumeTrue(
                Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip")), "no iproute2");
        String tag = Long.toString(ProcessHandle.current().pid() % 100000) + (ipv6 ? "6" : pcap == null ? "u" : "r");
        String nsA = "jrdmaA" + tag, nsB = "jrdmaB" + tag, vA = "jrA" + tag, vB = "jrB" + tag;
        Assumptions.assumeTrue(
                run("ip", "netns", "add", nsA) == 0, "cannot create network namespaces here (needs root)");
        List<Process> procs = new ArrayList<>();
        try {
            assertEquals(0, run("ip", "netns", "add", nsB));
            assertEquals(0, run("ip", "link", "add", vA, "type", "veth", "peer", "name", vB));
            assertEquals(0, run("ip", "link", "set", vA, "netns", nsA));
            assertEquals(0, run("ip", "link", "set", vB, "netns", nsB));
            assertEquals(0, run("ip", "-n", nsA, "addr", "add", "10.231.0.1/24", "dev", vA));
            assertEquals(0, run("ip", "-n", nsB, "addr", "add", "10.231.0.2/24", "dev", vB));
            if (ipv6) {
                assertEquals(0, run("ip", "-n", nsA, "-6", "addr", "add", "fd31::1/64", "dev", vA, "nodad"));
                assertEquals(0, run("ip", "-n", nsB, "-6", "addr", "add", "fd31::2/64", "dev", vB, "nodad"));
            }
            for (String[] nd : new String[][] {{nsA, vA}, {nsB, vB}}) {
                assertEquals(0, run("ip", "-n", nd[0], "link", "set", nd[1], "up"));
                assertEquals(0, run("ip", "-n", nd[0], "link", "set", "lo", "up"));
            }
            if (ipv6) {
                // neighbour discovery waits for the link-local addresses, tentative while duplicate address detection
                // runs (a second or two after the link comes up): until then packets to the peer are queued or lost
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (System.nanoTime() < deadline && !(linkLocalReady(nsA, vA) && linkLocalReady(nsB, vB)))
                    Thread.sleep(100);
                assertTrue(
                        linkLocalReady(nsA, vA) && linkLocalReady(nsB, vB),
                        "the veth's link-local addresses left the tentative state");
            }
            Process capture = null;
            if (pcap != null) {
                capture = new ProcessBuilder(
                                "ip",
                                "netns",
                                "exec",
                                nsB,
                                "tcpdump",
                                "-i",
                                vB,
                                "-U",
                                "-s",
                                "0",
                                "-w",
                                pcap.toString(),
                                "udp",
                                "port",
                                "4791")
                        .redirectErrorStream(true)
                        .start();
                procs.add(capture);
                BufferedReader cOut = new BufferedReader(new InputStreamReader(capture.getInputStream()));
                String l = cOut.readLine(); // "tcpdump: listening on ..." once it captures
                assertTrue(l != null && l.contains("listening"), "tcpdump: " + l);
            }
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String cp = System.getProperty("java.class.path");
            Process b = new ProcessBuilder(
                            "ip",
                            "netns",
                            "exec",
                            nsB,
                            java,
                            "--enable-native-access=ALL-UNNAMED",
                            jvmOption,
                            pcap != null ? WIRE_AS_RXE_SEES_IT : "-Djrdma.soft.gso=auto",
                            "-cp",
                            cp,
                            PeerMain.class.getName(),
                            "4791",
                            ipv6 ? "[fd31::2]" : "10.231.0.2",
                            headerArg(HEADER_B))
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            procs.add(b);
            Process a = new ProcessBuilder(
                            "ip",
                            "netns",
                            "exec",
                            nsA,
                            java,
                            "--enable-native-access=ALL-UNNAMED",
                            jvmOption,
                            pcap != null ? WIRE_AS_RXE_SEES_IT : "-Djrdma.soft.gso=auto",
                            "-cp",
                            cp,
                            InitiatorMain.class.getName(),
                            "4791",
                            ipv6 ? "[fd31::1]" : "10.231.0.1",
                            headerArg(HEADER_A))
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            procs.add(a);
            BufferedReader bOut = new BufferedReader(new InputStreamReader(b.getInputStream()));
            BufferedReader aOut = new BufferedReader(new InputStreamReader(a.getInputStream()));
            PrintWriter bIn = new PrintWriter(b.getOutputStream(), true),
                    aIn = new PrintWriter(a.getOutputStream(), true);
            String ready = bOut.readLine();
            assertNotNull(ready);
            assertTrue(ready.startsWith("READY "), ready);
            assertTrue(
                    ready.endsWith(
                            ipv6
                                    ? "fd31:0000:0000:0000:0000:0000:0000:0002"
                                    : "0000:0000:0000:0000:0000:ffff:0ae7:0002"),
                    ready);
            aIn.println(ready);
            String peer = aOut.readLine();
            assertNotNull(peer);
            assertTrue(peer.startsWith("PEER "), peer);
            bIn.println(peer);
            String connected = bOut.readLine();
            assertEquals("CONNECTED", connected);
            aIn.println(connected);
            assertEquals("OK", aOut.readLine());
            assertEquals("DONE", bOut.readLine());
            bIn.println("BYE");
            assertTrue(a.waitFor(20, TimeUnit.SECONDS));
            assertTrue(b.waitFor(20, TimeUnit.SECONDS));
            assertEquals(0, a.exitValue());
            assertEquals(0, b.exitValue());
            if (capture != null) {
                // tcpdump may not have read the packets from its socket yet (a busy machine): wait until the file has
                // the exchange's packets and stops growing, then stop it
                long deadline = System.nanoTime() + 20_000_000_000L;
                int seen = -1;
                while (System.nanoTime() < deadline) {
                    Thread.sleep(500);
                    int now = Files.size(pcap) >= 24
                            ? Pcap.ethernetFrames(Files.readAllBytes(pcap)).size()
                            : 0;
                    if (now >= 4 && now == seen) break;
                    seen = now;
                }
                capture.destroy();
                assertTrue(capture.waitFor(10, TimeUnit.SECONDS));
            }
        } finally {
            for (Process p : procs) p.destroyForcibly();
            run("ip", "netns", "del", nsA);
            run("ip", "netns", "del", nsB);
        }
    }

    /** The little of the pcap file format a capture on a veth needs. */
    static final class Pcap {
        static List<byte[]> ethernetFrames(byte[] file) {
            ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
            if (b.getInt(0) != 0xa1b2c3d4 && b.getInt(0) != 0xa1b23c4d) b.order(ByteOrder.BIG_ENDIAN);
            assertEquals(1, b.getInt(20), "link type Ethernet");
            List<byte[]> out = new ArrayList<>();
            for (int off = 24; off + 16 <= file.length; ) {
                int caplen = b.getInt(off + 8);
                byte[] f = new byte[caplen];
                System.arraycopy(file, off + 16, f, 0, caplen);
                out.add(f);
                off += 16 + caplen;
            }
            return out;
        }

        /** The folded one's complement sum of {@code n} bytes (0 for a header that holds its right checksum, inverted). */
        static int onesComplementSum(ByteBuffer b, int off, int n) {
            long sum = 0;
            int i = off;
            for (; i + 1 < off + n; i += 2) sum += b.getShort(i) & 0xFFFF;
            if (i < off + n) sum += (b.get(i) & 0xFF) << 8;
            while ((sum >>> 16) != 0) sum = (sum & 0xFFFF) + (sum >>> 16);
            return ~(int) sum & 0xFFFF;
        }
    }
}
