package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two hosts on one machine: two network namespaces joined by a veth pair, one JVM in each, on UDP port 4791.
 * Runs only where this user may create namespaces (root with iproute2); skipped elsewhere.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class NetnsTest {

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
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip")), "no iproute2");
        String tag = Long.toString(ProcessHandle.current().pid() % 100000);
        String nsA = "jrdmaA" + tag, nsB = "jrdmaB" + tag, vA = "jrA" + tag, vB = "jrB" + tag;
        Assumptions.assumeTrue(run("ip", "netns", "add", nsA) == 0, "cannot create network namespaces here (needs root)");
        List<Process> procs = new ArrayList<>();
        try {
            assertEquals(0, run("ip", "netns", "add", nsB));
            assertEquals(0, run("ip", "link", "add", vA, "type", "veth", "peer", "name", vB));
            assertEquals(0, run("ip", "link", "set", vA, "netns", nsA));
            assertEquals(0, run("ip", "link", "set", vB, "netns", nsB));
            assertEquals(0, run("ip", "-n", nsA, "addr", "add", "10.231.0.1/24", "dev", vA));
            assertEquals(0, run("ip", "-n", nsB, "addr", "add", "10.231.0.2/24", "dev", vB));
            for (String[] nd : new String[][] {{nsA, vA}, {nsB, vB}}) {
                assertEquals(0, run("ip", "-n", nd[0], "link", "set", nd[1], "up"));
                assertEquals(0, run("ip", "-n", nd[0], "link", "set", "lo", "up"));
            }
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String cp = System.getProperty("java.class.path");
            Process b = new ProcessBuilder("ip", "netns", "exec", nsB, java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                    PeerMain.class.getName(), "4791", "10.231.0.2").redirectError(ProcessBuilder.Redirect.INHERIT).start();
            procs.add(b);
            Process a = new ProcessBuilder("ip", "netns", "exec", nsA, java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                    InitiatorMain.class.getName(), "4791", "10.231.0.1").redirectError(ProcessBuilder.Redirect.INHERIT).start();
            procs.add(a);
            BufferedReader bOut = new BufferedReader(new InputStreamReader(b.getInputStream()));
            BufferedReader aOut = new BufferedReader(new InputStreamReader(a.getInputStream()));
            PrintWriter bIn = new PrintWriter(b.getOutputStream(), true), aIn = new PrintWriter(a.getOutputStream(), true);
            String ready = bOut.readLine();
            assertNotNull(ready);
            assertTrue(ready.startsWith("READY "), ready);
            assertTrue(ready.endsWith("0000:0000:0000:0000:0000:ffff:0ae7:0002"), ready);
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
        } finally {
            for (Process p : procs) p.destroyForcibly();
            run("ip", "netns", "del", nsA);
            run("ip", "netns", "del", nsB);
        }
    }
}
