package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.testkit.Backends;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Java against rdma-core's C {@code ibv_rc_pingpong} and {@code ibv_ud_pingpong}, both ways (needs ibverbs-utils and a device). */
class RcPingPongTest {
    static final int ITERS = Integer.getInteger("jrdma.pingpong.iters", 1000);
    /** ibv_ud_pingpong's default 2048 bytes exceed rxe's 1024-byte MTU on a 1500-byte netdev. */
    static final int UD_SIZE = 512;

    @Test
    void wireFormatMatchesRcPingpong() {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        g[12] = 10;
        g[13] = 99;
        g[15] = 1;
        var d = new RcPingPong.Dest(0, 0x11, 0xabcdef, Gid.of(g));
        byte[] w = d.wire();
        assertEquals(52, w.length);
        assertEquals(
                "0000:000011:abcdef:00000000000000000000ffff0a630001", new String(w, 0, 51, StandardCharsets.US_ASCII));
        assertEquals(0, w[51]);
        assertEquals(d, RcPingPong.Dest.parse(w));
    }

    private static Path pingpong(boolean ud) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
            Path p = Path.of(dir, ud ? "ibv_ud_pingpong" : "ibv_rc_pingpong");
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    private static RcPingPong.Options options(Device dev, int port, boolean ud) {
        RcPingPong.Options o = new RcPingPong.Options();
        o.ud = ud;
        if (ud) o.size = UD_SIZE;
        o.device = dev.name();
        o.gidIndex = Integer.getInteger("jrdma.pingpong.gid", 1);
        o.iters = ITERS;
        o.tcpPort = port;
        return o;
    }

    private static List<String> cmd(Path exe, Device dev, int port, String server, boolean ud) {
        var c = new java.util.ArrayList<>(List.of(
                exe.toString(),
                "-d",
                dev.name(),
                "-g",
                Integer.getInteger("jrdma.pingpong.gid", 1).toString(),
                "-n",
                Integer.toString(ITERS),
                "-p",
                Integer.toString(port)));
        if (ud) c.addAll(List.of("-s", Integer.toString(UD_SIZE)));
        if (server != null) c.add(server);
        return c;
    }

    @ParameterizedTest(name = "ud={0}")
    @ValueSource(booleans = {false, true})
    void javaClientAgainstCServer(boolean ud) throws Exception {
        Device dev = Backends.nativeDevice();
        Path exe = pingpong(ud);
        Assumptions.assumeTrue(
                exe != null, "ibv_rc_pingpong / ibv_ud_pingpong not installed (apt-get install ibverbs-utils)");
        int port = 18515 + (ud ? 17 : 7);
        Process c = new ProcessBuilder(cmd(exe, dev, port, null, ud))
                .redirectErrorStream(true)
                .start();
        try {
            RcPingPong.Options o = options(dev, port, ud);
            o.server = "127.0.0.1";
            RcPingPong.Result r = RcPingPong.run(dev, o);
            System.out.println("Java client vs C server:\n" + r);
            assertTrue(c.waitFor(120, TimeUnit.SECONDS), "ibv_rc_pingpong server did not finish");
            String out = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            System.out.println("ibv_rc_pingpong (server) said:\n" + out);
            assertEquals(0, c.exitValue(), out);
            assertTrue(out.contains(ITERS + " iters in"), out);
        } finally {
            c.destroyForcibly();
        }
    }

    @ParameterizedTest(name = "ud={0}")
    @ValueSource(booleans = {false, true})
    void cClientAgainstJavaServer(boolean ud) throws Exception {
        Device dev = Backends.nativeDevice();
        Path exe = pingpong(ud);
        Assumptions.assumeTrue(
                exe != null, "ibv_rc_pingpong / ibv_ud_pingpong not installed (apt-get install ibverbs-utils)");
        int port = 18515 + (ud ? 18 : 8);
        CountDownLatch listening = new CountDownLatch(1);
        RcPingPong.Options o = options(dev, port, ud);
        o.onListening = listening::countDown;
        Process[] c = new Process[1];
        Thread starter = Thread.ofPlatform().start(() -> {
            try {
                if (listening.await(60, TimeUnit.SECONDS))
                    c[0] = new ProcessBuilder(cmd(exe, dev, port, "127.0.0.1", ud))
                            .redirectErrorStream(true)
                            .start();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        try {
            RcPingPong.Result r = RcPingPong.run(dev, o);
            System.out.println("C client vs Java server:\n" + r);
            starter.join();
            assertTrue(c[0].waitFor(120, TimeUnit.SECONDS), "ibv_rc_pingpong client did not finish");
            String out = new String(c[0].getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            System.out.println("ibv_rc_pingpong (client) said:\n" + out);
            assertEquals(0, c[0].exitValue(), out);
            assertTrue(out.contains(ITERS + " iters in"), out);
        } finally {
            starter.join();
            if (c[0] != null) c[0].destroyForcibly();
        }
    }
}
