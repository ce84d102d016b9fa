package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The jrdma command as a user runs it, on the software device. */
class CliTest {
    record Run(int exit, String out) {}

    static synchronized Run run(String... args) throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Callable<Integer> c = () -> Jrdma.commandLine().execute(args);
        try (PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(ps);
            int exit = c.call();
            return new Run(exit, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(saved);
        }
    }

    @Test
    void devicesListsTheSoftwareDeviceLikeIbvDevices() throws Exception {
        Run r = run("devices", "--provider");
        assertEquals(0, r.exit);
        String[] lines = r.out.split("\n");
        assertTrue(lines[0].matches("\\s+device\\s+node GUID.*"), lines[0]);
        assertTrue(r.out.contains("soft_lo"), r.out);
        assertTrue(r.out.matches("(?s).*soft_lo\\s+[0-9a-f]{16}\\s+soft.*"), r.out);
    }

    @Test
    void devinfoPrintsPortsLikeIbvDevinfo() throws Exception {
        Run r = run("devinfo", "-d", "soft_lo", "-v");
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.startsWith("hca_id:\tsoft_lo"), r.out);
        assertTrue(r.out.contains("PORT_ACTIVE (4)"), r.out);
        assertTrue(r.out.contains("link_layer:\t\tEthernet"), r.out);
        // what carries the soft device's packets: its UDP socket, and the ring its peers on this host send into
        assertTrue(
                r.out.matches(
                        "(?s).*\tlink:\t+udp 127\\.0\\.0\\.1:\\d+ \\((nio|libc)\\)( \\+ same-host ring /dev/shm/jrdma-soft-\\S+)?\n.*"),
                r.out);
        assertTrue(
                r.out.contains("GID[  0]:\t\t::ffff:127.0.0.1"),
                "GID of 127.0.0.1, as ibv_devinfo (inet_ntop) writes it: " + r.out);
    }

    @Test
    void unknownDeviceIsAClearErrorNotAStackTrace() throws Exception {
        Run r = run("devinfo", "-d", "nosuchdev0");
        assertEquals(1, r.exit);
    }

    @Test
    @Timeout(120)
    void examplesRunBothSidesOnTheSoftwareDevice() throws Exception {
        Run echo = run("example", "echo", "-n", "10");
        assertEquals(0, echo.exit, echo.out);
        assertTrue(echo.out.contains("10 echoes ok"), echo.out);
        Run kv = run("example", "kv", "-n", "10");
        assertEquals(0, kv.exit, kv.out);
        assertTrue(kv.out.contains("key-9 -> value-9") && kv.out.contains("no-such-key -> not found"), kv.out);
        Run lock = run("example", "lock", "-n", "10");
        assertEquals(0, lock.exit, lock.out);
        assertTrue(lock.out.contains("counter = 30, expected 30"), lock.out);
        Run grpc = run("example", "grpc", "-n", "10");
        assertEquals(0, grpc.exit, grpc.out);
        assertTrue(grpc.out.contains("10 unary calls ok") && grpc.out.contains("stream #5"), grpc.out);
    }

    @Test
    void badExampleNameIsAClearError() throws Exception {
        assertEquals(1, run("example", "nosuch").exit);
    }

    @Test
    @Timeout(180)
    void demoRunsWhenAnotherProcessHoldsTheRocePort() throws Exception {
        // as a running device or kernel Soft-RoCE would: 127.0.0.1:4791 taken (by this test, or already by another)
        DatagramSocket holder = null;
        try {
            holder = new DatagramSocket(new InetSocketAddress("127.0.0.1", 4791));
        } catch (SocketException alreadyTaken) {
            // someone else holds it: the same situation
        }
        // as a user's JVM, with no port configured (the tests' JVM runs its own devices on a free one)
        String testsPort = System.clearProperty("jrdma.soft.port");
        try {
            Run r = run("demo", "--timeout", "150");
            assertEquals(0, r.exit, r.out);
            assertTrue(r.out.contains("UDP port 4791 is taken"), r.out);
            assertTrue(r.out.contains("both sides completed every step"), r.out);
        } finally {
            if (testsPort != null) System.setProperty("jrdma.soft.port", testsPort);
            if (holder != null) holder.close();
        }
    }

    @Test
    @Timeout(180)
    void demoRunsEveryStepInTwoProcesses() throws Exception {
        Run r = run("demo", "--timeout", "150");
        assertEquals(0, r.exit, r.out);
        for (String step : new String[] {
            "Send/Receive",
            "RDMA Write with immediate",
            "RDMA Read",
            "chain of work requests",
            "fetch-and-add",
            "compare-and-swap",
            "memory window",
            "recover",
            "wrong rkey"
        }) {
            assertTrue(r.out.contains("[client]") && r.out.contains(step), "missing step '" + step + "' in\n" + r.out);
        }
        assertTrue(r.out.contains("IBV_WC_REM_ACCESS_ERR"), r.out);
        assertEquals(2, r.out.split("all steps done", -1).length - 1, "both sides finish: " + r.out);
        assertTrue(r.out.contains("counter went from 100 to 105"), r.out);
        // the summary points at the measurement instead of letting step times pass for speed
        assertTrue(r.out.contains("not how fast RDMA is"), r.out);
        assertTrue(r.out.contains("jrdma perf compare -d ") && r.out.contains(" 127.0.0.1\n"), r.out);
        org.junit.jupiter.api.Assertions.assertFalse(
                r.out.toLowerCase(java.util.Locale.ROOT).matches("(?s).*\\b(faster|slower)\\b.*"),
                "no speed claim that was not measured: " + r.out);
    }
}
