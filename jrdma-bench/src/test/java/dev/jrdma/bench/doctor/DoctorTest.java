package dev.jrdma.bench.doctor;

import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.PortState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DoctorTest {
    static void write(Path root, String rel, String content) throws IOException {
        Path f = root.resolve(rel);
        Files.createDirectories(f.getParent());
        Files.writeString(f, content);
    }

    static Check find(List<Check> checks, String id) {
        return checks.stream()
                .filter(c -> c.id().equals(id))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no check " + id));
    }

    /** A machine with a ConnectX-5 (mlx5_0, RoCE on ens1f0), drivers loaded, rdma-core installed. */
    static Path fakeMlx5(Path root, boolean errors, boolean ecnOn) throws IOException {
        String pci = "sys/bus/pci/devices/0000:3b:00.0/";
        write(root, pci + "vendor", "0x15b3\n");
        write(root, pci + "device", "0x1017\n");
        write(root, pci + "class", "0x020000\n");
        Files.createDirectories(root.resolve("sys/bus/pci/drivers/mlx5_core"));
        Files.createSymbolicLink(root.resolve(pci + "driver"), root.resolve("sys/bus/pci/drivers/mlx5_core"));
        String plain = "sys/bus/pci/devices/0000:00:1f.6/";
        write(root, plain + "vendor", "0x8086\n");
        write(root, plain + "device", "0x15bc\n");
        write(root, plain + "class", "0x020000\n");
        write(root, "sys/bus/pci/devices/0000:00:02.0/class", "0x030000\n");
        write(root, "sys/bus/pci/devices/0000:00:02.0/vendor", "0x8086\n");
        write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write(root, "proc/modules", """
                mlx5_ib 446464 0 - Live 0x0000000000000000
                ib_uverbs 196608 1 mlx5_ib, Live 0x0000000000000000
                ib_core 471040 2 mlx5_ib,ib_uverbs, Live 0x0000000000000000
                mlx5_core 2101248 1 mlx5_ib, Live 0x0000000000000000
                """);
        write(root, "lib/modules/6.1.0-18-amd64/modules.dep", """
                kernel/drivers/infiniband/core/ib_core.ko:
                kernel/drivers/infiniband/core/ib_uverbs.ko: kernel/drivers/infiniband/core/ib_core.ko
                kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko: kernel/drivers/infiniband/core/ib_uverbs.ko kernel/drivers/infiniband/core/ib_core.ko
                kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko: kernel/drivers/infiniband/core/ib_core.ko
                kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.xz:
                """);
        write(root, "dev/infiniband/uverbs0", "");
        write(root, "dev/infiniband/rdma_cm", "");
        write(root, "usr/lib/x86_64-linux-gnu/libibverbs.so.1", "");
        write(root, "usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so", "");
        write(root, "usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so", "");
        write(root, "etc/libibverbs.d/mlx5.driver", "driver mlx5\n");
        write(root, "usr/bin/ibv_devinfo", "");
        write(root, "proc/self/limits", """
                Limit                     Soft Limit           Hard Limit           Units
                Max locked memory         unlimited            unlimited            bytes
                """);
        String port = "sys/class/infiniband/mlx5_0/ports/1/";
        write(root, port + "link_layer", "Ethernet\n");
        write(root, port + "state", "4: ACTIVE\n");
        write(root, port + "gid_attrs/ndevs/0", "ens1f0\n");
        write(root, port + "gid_attrs/ndevs/3", "ens1f0\n");
        write(root, port + "counters/port_rcv_data", "123456\n");
        write(root, port + "counters/port_xmit_data", "654321\n");
        write(root, port + "counters/symbol_error", "0\n");
        write(root, port + "counters/port_rcv_errors", errors ? "17\n" : "0\n");
        write(root, port + "hw_counters/out_of_sequence", errors ? "5\n" : "0\n");
        write(root, port + "hw_counters/np_cnp_sent", "42\n");
        write(root, port + "hw_counters/rnr_nak_retry_err", "0\n");
        for (int prio = 0; prio < 8; prio++) {
            write(root, "sys/class/net/ens1f0/ecn/roce_np/enable/" + prio, ecnOn && prio == 3 ? "1\n" : "0\n");
            write(root, "sys/class/net/ens1f0/ecn/roce_rp/enable/" + prio, ecnOn && prio == 3 ? "1\n" : "0\n");
        }
        write(root, "proc/sys/net/ipv4/tcp_ecn", "2\n");
        write(root, "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "106\n");
        write(root, "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "RoCE v2\n");
        return root;
    }

    static PortProbe mlx5Probe(PortState state, boolean roceV2) {
        Gid v4 = Gid.parse("::ffff:192.168.1.10");
        Gid ll = Gid.parse("fe80::1");
        List<GidEntry> gids = roceV2
                ? List.of(new GidEntry(1, 0, ll, "IB/RoCE v1", "ens1f0"), new GidEntry(1, 3, v4, "RoCE v2", "ens1f0"))
                : List.of(new GidEntry(1, 0, ll, "IB/RoCE v1", "ens1f0"));
        var port = new PortProbe.PortInfo(1, state, LinkLayer.ETHERNET, Mtu.MTU_1024, Mtu.MTU_4096, gids);
        var soft = new PortProbe.PortInfo(
                1,
                PortState.ACTIVE,
                LinkLayer.ETHERNET,
                Mtu.MTU_1024,
                Mtu.MTU_4096,
                List.of(new GidEntry(1, 0, Gid.parse("::ffff:127.0.0.1"), "RoCE v2", "lo")));
        return () -> List.of(
                new PortProbe.DeviceInfo("mlx5_0", "native", List.of(port), null),
                new PortProbe.DeviceInfo("soft_lo", "soft", List.of(soft), null));
    }

    @Test
    void healthyMlx5MachineIsAllOk(@TempDir Path root) throws IOException {
        fakeMlx5(root, false, true);
        List<Check> checks = new Doctor(root, Map.of(), mlx5Probe(PortState.ACTIVE, true)).run();
        String text = DoctorReport.format(checks, true);
        for (String id :
                List.of("nic", "modules", "devnodes", "libibverbs", "ports", "memlock", "fork", "counters", "ecn"))
            assertEquals(Verdict.OK, find(checks, id).verdict(), id + ":\n" + text);
        assertTrue(
                find(checks, "nic").details().stream()
                        .anyMatch(d ->
                                d.contains("[15b3:1017]") && d.contains("mlx5_core") && d.contains("RDMA-capable")),
                text);
        assertTrue(
                find(checks, "nic").summary().startsWith("1 RDMA-capable NIC of 2"),
                text); // the Intel I219 is not RDMA-capable
        assertTrue(find(checks, "libibverbs").details().getFirst().contains("libibverbs.so.1"), text);
        assertTrue(find(checks, "libibverbs").details().get(1).contains("mlx5 rxe"), text);
        assertTrue(
                find(checks, "ports").details().stream().anyMatch(d -> d.contains("GID[3]") && d.contains("RoCE v2")),
                text);
        assertTrue(find(checks, "counters").details().stream().anyMatch(d -> d.contains("np_cnp_sent = 42")), text);
        assertTrue(find(checks, "ecn").summary().contains("ens1f0"), text);
        assertFalse(text.contains("fix:"), text);
    }

    @Test
    void problemsGiveWarningsAndFixes(@TempDir Path root) throws IOException {
        fakeMlx5(root, true, false);
        write(root, "proc/self/limits", "Max locked memory         65536                65536                bytes\n");
        write(root, "proc/sys/kernel/osrelease", "5.4.0-42-generic\n");
        write(root, "lib/modules/5.4.0-42-generic/modules.dep", "kernel/drivers/infiniband/core/ib_core.ko:\n");
        List<Check> checks = new Doctor(root, Map.of(), mlx5Probe(PortState.DOWN, false)).run();
        String text = DoctorReport.format(checks, false);
        Check ports = find(checks, "ports");
        assertEquals(Verdict.FAIL, ports.verdict(), text);
        assertTrue(ports.fix().contains("PORT_DOWN") && ports.fix().contains("no RoCE v2 GID"), ports.fix());
        Check mem = find(checks, "memlock");
        assertEquals(Verdict.WARN, mem.verdict());
        assertTrue(mem.summary().startsWith("64 KiB"), mem.summary());
        assertTrue(mem.fix().contains("ulimit -l unlimited"));
        Check cnt = find(checks, "counters");
        assertEquals(Verdict.WARN, cnt.verdict());
        assertTrue(
                cnt.summary().contains("port_rcv_errors=17") && cnt.summary().contains("out_of_sequence=5"),
                cnt.summary());
        Check ecn = find(checks, "ecn");
        assertEquals(Verdict.WARN, ecn.verdict());
        assertTrue(ecn.fix().contains("roce_np/enable/3"), ecn.fix());
        assertEquals(Verdict.INFO, find(checks, "fork").verdict()); // 5.4 kernel, not set
        assertTrue(text.contains("fix: "), text);
        String json = DoctorReport.toJson(checks);
        assertTrue(
                json.contains("\"id\":\"memlock\",\"title\":\"locked-memory limit (ulimit -l)\",\"verdict\":\"WARN\""),
                json);
        assertTrue(json.contains("\"fail\":1"), json);
        assertEquals(
                Verdict.OK,
                find(new Doctor(root, Map.of("RDMAV_FORK_SAFE", "1"), mlx5Probe(PortState.ACTIVE, true)).run(), "fork")
                        .verdict());
    }

    @Test
    void modulesAvailableButNotLoaded(@TempDir Path root) throws IOException {
        write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write(root, "proc/modules", "");
        write(root, "lib/modules/6.1.0-18-amd64/modules.dep", """
                kernel/drivers/infiniband/core/ib_core.ko:
                kernel/drivers/infiniband/core/ib_uverbs.ko: kernel/drivers/infiniband/core/ib_core.ko
                kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko: kernel/drivers/infiniband/core/ib_core.ko
                """);
        Check m = new Doctor(root, Map.of(), PortProbe.none()).checkModules();
        assertEquals(Verdict.WARN, m.verdict());
        assertTrue(m.fix().contains("modprobe ib_uverbs") && m.fix().contains("rdma_rxe"), m.fix());
        assertTrue(
                m.details().stream().anyMatch(d -> d.startsWith("rdma_rxe") && d.contains("loadable, not loaded")),
                m.details().toString());
        assertTrue(
                m.details().stream().anyMatch(d -> d.startsWith("mlx5_core") && d.contains("not in this kernel")),
                m.details().toString());
    }

    @Test
    void ibDevicesWithoutUverbsNodeFail(@TempDir Path root) throws IOException {
        write(root, "sys/class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
        Check c = new Doctor(root, Map.of(), PortProbe.none()).checkDevNodes();
        assertEquals(Verdict.FAIL, c.verdict());
        assertTrue(c.fix().contains("modprobe ib_uverbs"));
    }

    @Test
    void emptyMachineSaysSoPlainly(@TempDir Path root) {
        PortProbe softOnly = () -> List.of(new PortProbe.DeviceInfo(
                "soft_lo",
                "soft",
                List.of(new PortProbe.PortInfo(
                        1, PortState.ACTIVE, LinkLayer.ETHERNET, Mtu.MTU_1024, Mtu.MTU_4096, List.of())),
                null));
        List<Check> checks = new Doctor(root, Map.of(), softOnly).run();
        String text = DoctorReport.format(checks, false);
        assertTrue(checks.stream().noneMatch(c -> c.verdict() == Verdict.FAIL), text);
        assertEquals(Verdict.WARN, find(checks, "libibverbs").verdict());
        assertTrue(find(checks, "libibverbs")
                .fix()
                .contains("rdma-core ibverbs-utils ibverbs-providers libibverbs1 librdmacm1 perftest"));
        Check s = find(checks, "summary");
        assertTrue(s.summary().contains("no RDMA hardware") && s.summary().contains("soft_lo"), s.summary());
        assertTrue(text.contains("sudo apt-get install -y rdma-core"), text);
        assertTrue(text.contains("jrdma perf send_lat"), text);
        assertEquals(Verdict.INFO, find(checks, "ports").verdict());
    }

    @Test
    void noDeviceAtAllFails(@TempDir Path root) {
        assertEquals(
                Verdict.FAIL,
                find(new Doctor(root, Map.of(), PortProbe.none()).run(), "ports")
                        .verdict());
    }

    /** This machine, for real: every check runs and gives a verdict, nothing throws. */
    @Test
    void realMachine() {
        List<Check> checks = Doctor.system().run();
        assertEquals(10, checks.size());
        String text = DoctorReport.format(checks, true);
        assertTrue(text.contains("checks:"), text);
        // the software device is on the class path here: never "no device at all"
        assertNotEquals(Verdict.FAIL, find(checks, "ports").verdict(), text);
        assertTrue(DoctorReport.toJson(checks).startsWith("{\"checks\":["));
    }

    @Test
    void helpers() {
        assertEquals("mlx5_core", Doctor.moduleName("kernel/drivers/net/mlx5_core.ko.xz"));
        assertEquals("rdma_rxe", Doctor.moduleName("rdma-rxe.ko"));
        assertTrue(Doctor.versionAtLeast("6.1.0-18-amd64", 5, 13));
        assertFalse(Doctor.versionAtLeast("5.4.0-42-generic", 5, 13));
        assertEquals("8 MiB", Doctor.human(8 << 20));
        assertEquals("\"a\\\"b\\n\"", DoctorReport.q("a\"b\n"));
    }
}
