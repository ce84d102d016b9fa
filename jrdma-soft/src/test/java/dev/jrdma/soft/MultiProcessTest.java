package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two JVMs on one host: this one on 127.0.0.1, a child on 127.0.0.2, both on the same UDP port (4791 when free). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MultiProcessTest {

    /** With rings (-Djrdma.soft.shm=auto on both sides): the two processes find each other's same-host ring and send through it, not UDP. */
    @Test
    void twoProcessesTalkOverRoceV2() throws Exception {
        Map<String, Long> counters = talk(List.of("-Djrdma.soft.shm=auto"));
        assertTrue(
                counters.get("tx_shm_packets") > 0
                        && counters.get("tx_shm_packets").equals(counters.get("tx_packets")),
                "every packet to the child went through its ring: " + counters);
        assertTrue(
                counters.get("rx_shm_packets") > 0, "the child's packets came through this device's ring: " + counters);
    }

    /** The child without a ring ({@code -Djrdma.soft.shm=off}): both directions fall back to UDP. */
    @Test
    void twoProcessesFallBackToUdpWhenOneHasNoRing() throws Exception {
        Map<String, Long> counters = talk(List.of("-Djrdma.soft.shm=off"));
        assertEquals(0, counters.get("tx_shm_packets"), counters::toString);
        assertEquals(0, counters.get("rx_shm_packets"), counters::toString);
        assertTrue(counters.get("rx_packets") > 0, counters::toString);
    }

    /** Runs the exchange with a child JVM started with {@code childOptions}; returns this device's counters of the run. */
    private static Map<String, Long> talk(List<String> childOptions) throws Exception {
        // 4791 when it is free on both addresses, else a random port free on both (other processes may hold either)
        Context ctx = null;
        int port = 4791;
        for (int i = 0; i < 50 && ctx == null; i++) {
            if (i > 0) port = 20000 + (int) (Math.random() * 30000);
            if (!freeOn(B, port)) continue;
            try {
                ctx = ShmLinkTest.openWith("auto", A, port);
            } catch (VerbsException busy) {
                // try another
            }
        }
        assertNotNull(ctx, "no free UDP port on 127.0.0.1");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED"));
        command.addAll(childOptions);
        command.addAll(List.of(
                "-cp", System.getProperty("java.class.path"), PeerMain.class.getName(), Integer.toString(port)));
        Process child = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Map<String, Long> before = ctx.counters();
        try (Arena arena = Arena.ofShared();
                Context c = ctx) {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()));
            PrintWriter to = new PrintWriter(child.getOutputStream(), true);
            ProtectionDomain pd = c.allocPd();
            CompletionQueue cq = c.createCq(16, null);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
            MemoryRegion mr = pd.registerMemory(
                    arena.allocate(4096, 8), Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            String ready = out.readLine();
            assertNotNull(ready, "the child said nothing");
            assertTrue(ready.startsWith("READY "), ready);
            String[] f = ready.split(" ");
            int peerQpn = Integer.parseInt(f[1]);
            long peerAddr = Long.parseLong(f[2]);
            int peerRkey = Integer.parseInt(f[3]);
            assertEquals(Gid.parse("::ffff:127.0.0.2"), Gid.parse(f[4]));
            new RcWalk()
                    .pkeyIndex(0)
                    .port(1)
                    .access(Access.REMOTE_WRITE, Access.REMOTE_READ)
                    .ah(new AhAttr().global(Gid.parse(f[4]), 0))
                    .pathMtu(Mtu.MTU_1024)
                    .to(peerQpn, 2000)
                    .maxDestRdAtomic(4)
                    .minRnrTimer(1)
                    .timeout(14)
                    .retryCnt(7)
                    .rnrRetry(7)
                    .sqPsn(1000)
                    .maxRdAtomic(4)
                    .walk(qp);
            to.println("PEER " + qp.qpNum() + " " + mr.address() + " " + mr.rkey() + " " + c.queryGid(1, 0));
            assertEquals("CONNECTED", out.readLine());
            if (childOptions.contains("-Djrdma.soft.shm=auto")) {
                ShmLinkTest.awaitRing(ShmLinkTest.transport(c), new InetSocketAddress(B, port));
            }

            // READ the child's pattern
            qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(mr, 2048, 2048)
                    .remote(peerAddr, peerRkey));
            WorkCompletion r = poll(cq, 20000);
            assertEquals(WcStatus.SUCCESS, r.status, r::toString);
            for (int i = 0; i < 2048; i++)
                assertEquals((byte) (i * 7 + 99), mr.segment().get(ValueLayout.JAVA_BYTE, 2048 + i));

            // SEND 100 bytes; the child writes them back at offset 1000 with immediate data
            for (int i = 0; i < 100; i++) mr.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
            qp.postRecv(new RecvWorkRequest().wrId(3).buffer(mr, 3000, 16));
            qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(mr, 0, 100));
            // the two completions in either order: the child writes back on receiving the SEND, and its ACK of the
            // SEND may be coalesced with (sent after) that WRITE
            WorkCompletion s = poll(cq, 20000), w = poll(cq, 20000);
            if (s.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
                WorkCompletion t = s;
                s = w;
                w = t;
            }
            assertEquals(WcStatus.SUCCESS, s.status, s::toString);
            assertEquals(2, s.wrId);
            assertEquals(WcStatus.SUCCESS, w.status, w::toString);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, w.opcode);
            assertEquals(100, w.immData);
            for (int i = 0; i < 100; i++)
                assertEquals((byte) (i + 1), mr.segment().get(ValueLayout.JAVA_BYTE, 1000 + i));
            assertEquals("DONE", out.readLine());
            to.println("BYE");
            assertTrue(child.waitFor(20, TimeUnit.SECONDS));
            assertEquals(0, child.exitValue());
            Map<String, Long> delta = new HashMap<>();
            c.counters().forEach((k, v) -> delta.put(k, v - before.getOrDefault(k, 0L)));
            return delta;
        } finally {
            child.destroyForcibly();
        }
    }

    /** Whether a UDP socket can bind {@code address:port} now. */
    static boolean freeOn(java.net.InetAddress address, int port) {
        try (java.net.DatagramSocket probe =
                new java.net.DatagramSocket(new java.net.InetSocketAddress(address, port))) {
            return true;
        } catch (java.io.IOException taken) {
            return false;
        }
    }
}
