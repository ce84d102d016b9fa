package dev.jrdma.cli;

import dev.jrdma.bench.JavaCommand;
import dev.jrdma.examples.FirstRdmaApp;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jrdma demo}: the first RDMA application, both sides as two processes on the default device.
 * On the software device each process gets its own loopback address (127.0.0.1 and 127.0.0.2), as two hosts would.
 */
@Command(
        name = "demo",
        description =
                "Run the first RDMA application: a server and a client process, every step printed with its result and timing.")
public final class DemoCommand implements Callable<Integer> {
    /** The {@code jrdma demo} subcommand; picocli creates it and sets its options from the command line. */
    public DemoCommand() {}

    @Option(
            names = {"-d", "--ib-dev"},
            paramLabel = "DEV",
            description = "Device for both sides (default: the default device).")
    String deviceName;

    @Option(
            names = {"-p", "--port"},
            description = "TCP port of the out-of-band exchange (default: a free one).")
    int port;

    @Option(
            names = "--timeout",
            description = "Seconds before the demo gives up (default: ${DEFAULT-VALUE}).",
            defaultValue = "120")
    int timeoutSeconds;

    @Override
    public Integer call() throws Exception {
        Device dev = deviceName != null ? Verbs.device(deviceName) : Verbs.defaultDevice();
        String serverDev = dev.name(), clientDev = dev.name();
        List<String> jvmOptions = new ArrayList<>();
        if (dev.provider().equals("soft")) {
            serverDev = "soft@127.0.0.1";
            clientDev = "soft@127.0.0.2";
            jvmOptions.addAll(softPortOptions());
        }
        if (port == 0) {
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
        }
        System.out.printf(
                "jrdma demo: server on %s, client on %s, out-of-band exchange over TCP 127.0.0.1:%d%n%n",
                serverDev, clientDev, port);
        Side server = start("server", jvmOptions, "server", "--port", Integer.toString(port), "--device", serverDev);
        Side client = start(
                "client", jvmOptions, "client", "127.0.0.1", "--port", Integer.toString(port), "--device", clientDev);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        boolean finished = server.process.waitFor(timeoutSeconds, TimeUnit.SECONDS)
                && client.process.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (!finished) {
            server.process.destroyForcibly();
            client.process.destroyForcibly();
            System.out.println("jrdma demo: gave up after " + timeoutSeconds + " s");
            return 1;
        }
        server.output.join(5000);
        client.output.join(5000);
        int s = server.process.exitValue(), c = client.process.exitValue();
        System.out.println(
                s == 0 && c == 0
                        ? "\njrdma demo: both sides completed every step"
                        : "\njrdma demo: FAILED (server exit " + s + ", client exit " + c + ")");
        System.out.print(timingNote(serverDev, clientDev));
        return s != 0 ? s : c;
    }

    /**
     * What the step times are and are not, and the command that measures speed: each step runs once, cold, so its
     * time says nothing about how fast the device is against sockets; {@code jrdma perf compare} measures that.
     */
    static String timingNote(String serverDev, String clientDev) {
        return String.format("""
                Step times are one cold run of each step (first use, JIT compilation and the TCP barrier included): they
                show where time goes, not how fast RDMA is. To measure this device against TCP and the raw UDP floor on
                this machine, run the comparison (two processes, every figure measured in the same run):
                  jrdma perf compare -d %s &
                  jrdma perf compare -d %s -n 10000 127.0.0.1
                """, serverDev, clientDev);
    }

    private record Side(Process process, Thread output) {}

    /**
     * The two processes' soft-device UDP port, as JVM options: the one this JVM was given ({@code -Djrdma.soft.port},
     * not 0; the environment's {@code JRDMA_SOFT_PORT} reaches them by itself), else RoCEv2's 4791, unless another process
     * (a device, another demo, kernel Soft-RoCE) holds it on either loopback address: then a free port, said on the
     * first line, so that the demo still runs.
     */
    private static List<String> softPortOptions() {
        String configured = System.getProperty(SOFT_PORT_PROPERTY);
        // 0 (a free port, chosen per JVM) would give the two processes two different ports
        if (configured != null && !configured.isBlank() && !configured.trim().equals("0"))
            return List.of("-D" + SOFT_PORT_PROPERTY + "=" + configured.trim());
        if (System.getenv("JRDMA_SOFT_PORT") != null) return List.of();
        if (udpFree("127.0.0.1", ROCE_PORT) && udpFree("127.0.0.2", ROCE_PORT)) return List.of();
        int free;
        try (DatagramSocket probe = new DatagramSocket(0)) {
            free = probe.getLocalPort();
        } catch (SocketException e) {
            return List.of(); // the device's own error will say what is wrong
        }
        System.out.printf(
                "jrdma demo: UDP port %d is taken on 127.0.0.1 or 127.0.0.2 (another device, or kernel Soft-RoCE):"
                        + " both sides use UDP %d instead (%s)%n",
                ROCE_PORT, free, "-D" + SOFT_PORT_PROPERTY + "=" + free);
        return List.of("-D" + SOFT_PORT_PROPERTY + "=" + free);
    }

    /** RoCEv2's UDP port, the software device's default. */
    private static final int ROCE_PORT = 4791;

    private static final String SOFT_PORT_PROPERTY = "jrdma.soft.port";

    private static boolean udpFree(String address, int port) {
        try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(address, port))) {
            return true;
        } catch (SocketException e) {
            return false;
        }
    }

    private static Side start(String tag, List<String> jvmOptions, String... args) throws IOException {
        List<String> cmd = JavaCommand.of(FirstRdmaApp.class);
        cmd.addAll(1, jvmOptions);
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Thread pump = new Thread(
                () -> {
                    try (BufferedReader r =
                            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            synchronized (System.out) {
                                System.out.printf("%-8s %s%n", "[" + tag + "]", line);
                            }
                        }
                    } catch (IOException ignored) {
                        // the process ended
                    }
                },
                "demo-" + tag);
        pump.setDaemon(true);
        pump.start();
        return new Side(p, pump);
    }
}
