package dev.jrdma.bench.doctor;

import static dev.jrdma.bench.doctor.SysFiles.list;
import static dev.jrdma.bench.doctor.SysFiles.names;
import static dev.jrdma.bench.doctor.SysFiles.read;
import static dev.jrdma.bench.doctor.SysFiles.real;
import static dev.jrdma.bench.doctor.SysFiles.trim;

import dev.jrdma.verbs.GidEntry;
import dev.jrdma.verbs.LinkLayer;
import dev.jrdma.verbs.PortState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code jrdma doctor}: the environment checks of the seed articles (NIC present, driver loaded, user-space
 * verbs installed, device nodes, ports up, memlock, fork safety, error counters, ECN on RoCE), each with a
 * verdict and the fix.
 *
 * <p>Everything read from the file system is read under a configurable root (the real machine: {@code /}),
 * so the checks can be run against a fake tree ({@code jrdma doctor --root DIR}) and tested. {@link DoctorReport}
 * prints the outcome.
 */
public final class Doctor {
    /** Debian/Ubuntu packages that give the user-space RDMA stack and the standard tools. */
    public static final String PACKAGES = "rdma-core ibverbs-utils ibverbs-providers libibverbs1 librdmacm1 perftest";
    /** The command that installs {@link #PACKAGES} (Debian/Ubuntu). */
    public static final String APT = "sudo apt-get install -y " + PACKAGES;
    /** Memory a perftest-style run registers: 2 buffers of 8 MiB (-a) per QP, with room to spare. */
    static final long MEMLOCK_NEEDED = 64L << 20;

    private final Path root;
    private final Map<String, String> env;
    private final PortProbe probe;

    /**
     * A doctor that reads the file system under {@code root}.
     *
     * @param root  the root of the tree to check: {@code /} for this machine, or a fake tree
     * @param env   the environment variables to consider (e.g. {@code RDMAV_FORK_SAFE})
     * @param probe how devices and ports are found
     */
    public Doctor(Path root, Map<String, String> env, PortProbe probe) {
        this.root = root;
        this.env = env;
        this.probe = probe;
    }

    /** {@return a doctor for this machine: root {@code /}, the process environment, the verbs API's devices} */
    public static Doctor system() {
        return new Doctor(Path.of("/"), System.getenv(), PortProbe.verbs());
    }

    private Path p(String rel) {
        return root.resolve(rel);
    }

    // ---------------------------------------------------------------- PCI

    Check checkNics() {
        List<PciNics.PciNic> nics = PciNics.scan(root);
        List<String> details = new ArrayList<>();
        int capable = 0;
        for (PciNics.PciNic n : nics) {
            details.add(String.format(
                    "%s  [%04x:%04x] class 0x%06x  driver %s  %s%s",
                    n.address(),
                    n.vendor(),
                    n.device(),
                    n.pciClass(),
                    n.driver() == null ? "-" : n.driver(),
                    n.rdmaCapable() ? "RDMA-capable: " : "",
                    n.why()));
            if (n.rdmaCapable()) capable++;
        }
        String title = "RDMA-capable NICs (lspci)";
        if (!Files.isDirectory(p("sys/bus/pci/devices"))) {
            return Check.of(
                    "nic",
                    title,
                    Verdict.INFO,
                    "no PCI bus visible (" + p("sys/bus/pci/devices")
                            + " missing: container or VM without PCI passthrough)",
                    details,
                    "use the software device (always works), or run where the NIC is visible");
        }
        if (capable > 0) {
            return Check.of(
                    "nic",
                    title,
                    Verdict.OK,
                    capable + " RDMA-capable NIC" + (capable == 1 ? "" : "s") + " of " + nics.size()
                            + " network functions",
                    details,
                    "");
        }
        return Check.of(
                "nic",
                title,
                Verdict.INFO,
                nics.isEmpty()
                        ? "no network controller on the PCI bus"
                        : "no RDMA-capable NIC among " + nics.size() + " network function"
                                + (nics.size() == 1 ? "" : "s"),
                details,
                "nothing to fix for the software device (jrdma's default, always works); for hardware RDMA fit a RoCE/InfiniBand NIC "
                        + "(Mellanox/NVIDIA ConnectX, Broadcom NetXtreme-E, Intel E810, Chelsio T6, Marvell FastLinQ); "
                        + "for kernel Soft-RoCE on a plain NIC: sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev IF");
    }

    // ---------------------------------------------------------------- kernel modules

    static final List<String> MODULES = List.of(
            "ib_core", "ib_uverbs", "rdma_ucm", "mlx5_core", "mlx5_ib", "rdma_rxe", "siw", "irdma", "bnxt_re", "efa");

    String kernelRelease() {
        String r = read(p("proc/sys/kernel/osrelease"));
        return r == null ? null : r.trim();
    }

    Set<String> loadedModules() {
        Set<String> s = new TreeSet<>();
        String mods = read(p("proc/modules"));
        if (mods != null)
            for (String line : mods.split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (!f[0].isEmpty()) s.add(f[0]);
            }
        return s;
    }

    /** Modules the running kernel has: loadable (modules.dep, what modinfo reads) or built in (modules.builtin). */
    Map<String, String> availableModules() {
        Map<String, String> m = new LinkedHashMap<>();
        String rel = kernelRelease();
        if (rel == null) return m;
        Path dir = p("lib/modules").resolve(rel);
        String dep = read(dir.resolve("modules.dep"));
        if (dep != null)
            for (String line : dep.split("\n")) {
                int c = line.indexOf(':');
                if (c < 0) continue;
                m.putIfAbsent(moduleName(line.substring(0, c)), "loadable");
            }
        String builtin = read(dir.resolve("modules.builtin"));
        if (builtin != null)
            for (String line : builtin.split("\n")) if (!line.isBlank()) m.put(moduleName(line.trim()), "built in");
        return m;
    }

    static String moduleName(String path) {
        String f = path.substring(path.lastIndexOf('/') + 1);
        int dot = f.indexOf(".ko");
        return (dot < 0 ? f : f.substring(0, dot)).replace('-', '_');
    }

    Check checkModules() {
        Set<String> loaded = loadedModules();
        Map<String, String> avail = availableModules();
        String rel = kernelRelease();
        boolean haveDep =
                rel != null && Files.exists(p("lib/modules").resolve(rel).resolve("modules.dep"));
        List<String> details = new ArrayList<>();
        for (String m : MODULES) {
            String a = loaded.contains(m)
                    ? "loaded"
                    : avail.containsKey(m)
                            ? avail.get(m) + ", not loaded"
                            : haveDep ? "not in this kernel" : "not loaded";
            details.add(String.format("%-10s %s", m, a));
        }
        String title = "kernel modules (modinfo, /proc/modules)";
        boolean ibCore = loaded.contains("ib_core") || "built in".equals(avail.get("ib_core"));
        boolean uverbs = loaded.contains("ib_uverbs") || "built in".equals(avail.get("ib_uverbs"));
        boolean anyHw = loaded.stream()
                .anyMatch(m -> Set.of(
                                "mlx5_ib",
                                "mlx4_ib",
                                "bnxt_re",
                                "irdma",
                                "iw_cxgb4",
                                "qedr",
                                "efa",
                                "rdma_rxe",
                                "siw",
                                "hns_roce_hw_v2",
                                "vmw_pvrdma",
                                "ionic_rdma")
                        .contains(m));
        boolean kernelHasIb = ibCore || avail.containsKey("ib_core");
        if (ibCore && uverbs && anyHw) {
            return Check.of(
                    "modules",
                    title,
                    Verdict.OK,
                    "ib_core, ib_uverbs and an RDMA device driver are loaded",
                    details,
                    "");
        }
        if (!kernelHasIb) {
            return Check.of(
                    "modules",
                    title,
                    Verdict.INFO,
                    "this kernel (" + (rel == null ? "?" : rel) + ") has no InfiniBand/RDMA support"
                            + (haveDep
                                    ? ""
                                    : " loaded, and no module tree under " + p("lib/modules") + " to load it from"),
                    details,
                    "nothing to fix for the software device (always works); for kernel Soft-RoCE use a kernel with CONFIG_INFINIBAND "
                            + "(e.g. the project's guest: vm/run-in-guest -- CMD)");
        }
        List<String> todo = new ArrayList<>();
        if (!ibCore) todo.add("ib_core");
        if (!uverbs) todo.add("ib_uverbs");
        if (!anyHw)
            todo.add(
                    avail.containsKey("mlx5_ib")
                            ? "mlx5_ib (or your NIC's RDMA driver)"
                            : "rdma_rxe (Soft-RoCE) or your NIC's RDMA driver");
        return Check.of(
                "modules",
                title,
                Verdict.WARN,
                "not loaded: " + String.join(", ", todo),
                details,
                "sudo modprobe ib_uverbs; sudo modprobe " + (avail.containsKey("mlx5_ib") ? "mlx5_ib" : "rdma_rxe")
                        + "; for Soft-RoCE also: sudo rdma link add rxe0 type rxe netdev IF");
    }

    // ---------------------------------------------------------------- /dev/infiniband

    Check checkDevNodes() {
        Path dir = p("dev/infiniband");
        List<String> nodes = new ArrayList<>();
        for (Path f : list(dir)) nodes.add(f.getFileName().toString());
        List<String> ibdevs = names(p("sys/class/infiniband"));
        String title = "device nodes (/dev/infiniband)";
        List<String> uverbs = nodes.stream().filter(n -> n.startsWith("uverbs")).toList();
        if (!uverbs.isEmpty()) {
            List<String> bad = new ArrayList<>();
            for (String u : uverbs) {
                Path f = dir.resolve(u);
                if (!Files.isReadable(f) || !Files.isWritable(f)) bad.add(u);
            }
            if (!bad.isEmpty())
                return Check.of(
                        "devnodes",
                        title,
                        Verdict.FAIL,
                        "no read/write access to " + String.join(", ", bad),
                        nodes,
                        "add yourself to the group owning the nodes (ls -l /dev/infiniband; often 'rdma'), or install rdma-core's udev rules");
            return Check.of(
                    "devnodes",
                    title,
                    Verdict.OK,
                    uverbs.size() + " uverbs node" + (uverbs.size() == 1 ? "" : "s") + " usable",
                    nodes,
                    "");
        }
        if (!ibdevs.isEmpty()) {
            return Check.of(
                    "devnodes",
                    title,
                    Verdict.FAIL,
                    "RDMA devices " + ibdevs + " exist but there is no /dev/infiniband/uverbs* node",
                    nodes,
                    "sudo modprobe ib_uverbs (containers: pass --device=/dev/infiniband/uverbs0 --device=/dev/infiniband/rdma_cm)");
        }
        return Check.of(
                "devnodes",
                title,
                Verdict.INFO,
                "no /dev/infiniband/uverbs* (no kernel RDMA device)",
                nodes,
                "needed only for hardware or kernel Soft-RoCE; the software device does not use it");
    }

    // ---------------------------------------------------------------- libibverbs

    Check checkLibibverbs() {
        List<String> libs = new ArrayList<>(),
                providers = new ArrayList<>(),
                drivers = new ArrayList<>(),
                details = new ArrayList<>();
        Set<Path> seen = new java.util.HashSet<>(); // /lib -> /usr/lib (merged /usr): list each file once
        for (String base : List.of("usr/lib", "lib", "usr/lib64", "lib64")) {
            Path b = p(base);
            List<Path> dirs = new ArrayList<>();
            dirs.add(b);
            for (Path sub : list(b))
                if (Files.isDirectory(sub) && sub.getFileName().toString().contains("-linux-")) dirs.add(sub);
            for (Path d : dirs) {
                for (Path f : list(d)) {
                    String n = f.getFileName().toString();
                    if (n.startsWith("libibverbs.so.1") && seen.add(real(f)))
                        libs.add(root.relativize(f).toString());
                }
                for (Path f : list(d.resolve("libibverbs"))) {
                    String n = f.getFileName().toString();
                    if (n.endsWith(".so"))
                        providers.add(n.replaceFirst("^lib", "")
                                .replaceFirst("-rdmav\\d+\\.so$", "")
                                .replaceFirst("\\.so$", ""));
                }
            }
        }
        for (Path f : list(p("etc/libibverbs.d")))
            drivers.add(f.getFileName().toString().replaceFirst("\\.driver$", ""));
        libs = libs.stream().distinct().toList();
        providers = providers.stream().distinct().sorted().toList();
        details.add("libibverbs: " + (libs.isEmpty() ? "not found" : String.join(", ", libs)));
        details.add("provider libraries: " + (providers.isEmpty() ? "none" : String.join(" ", providers)));
        details.add("/etc/libibverbs.d: " + (drivers.isEmpty() ? "none" : String.join(" ", drivers)));
        for (String tool : List.of("ibv_devinfo", "ib_write_lat", "rdma")) {
            boolean found = Files.exists(p("usr/bin").resolve(tool))
                    || Files.exists(p("usr/sbin").resolve(tool))
                    || Files.exists(p("sbin").resolve(tool));
            details.add(String.format("%-12s %s", tool, found ? "installed" : "not installed"));
        }
        String title = "user-space verbs (libibverbs + providers)";
        if (libs.isEmpty()) {
            return Check.of(
                    "libibverbs",
                    title,
                    Verdict.WARN,
                    "libibverbs.so.1 not found: the native provider cannot load",
                    details,
                    APT + "  (the software device needs none of it)");
        }
        if (providers.isEmpty()) {
            return Check.of(
                    "libibverbs",
                    title,
                    Verdict.WARN,
                    "libibverbs is installed but no provider library (libmlx5, librxe, ...)",
                    details,
                    "sudo apt-get install -y ibverbs-providers");
        }
        return Check.of(
                "libibverbs",
                title,
                Verdict.OK,
                "libibverbs with " + providers.size() + " provider librar" + (providers.size() == 1 ? "y" : "ies"),
                details,
                "");
    }

    // ---------------------------------------------------------------- devices and ports (verbs API)

    Check checkPorts(List<PortProbe.DeviceInfo> devices) {
        String title = "devices and ports (verbs)";
        List<String> details = new ArrayList<>();
        Verdict worst = Verdict.OK;
        List<String> fixes = new ArrayList<>();
        int hw = 0, soft = 0;
        for (PortProbe.DeviceInfo d : devices) {
            boolean isSoft = "soft".equals(d.provider());
            if (isSoft) soft++;
            else hw++;
            if (d.error() != null) {
                details.add(d.name() + " (" + d.provider() + "): cannot open: " + d.error());
                if (!isSoft) {
                    worst = Verdict.worse(worst, Verdict.FAIL);
                    fixes.add("check permissions on /dev/infiniband and 'jrdma devinfo -d " + d.name() + "'");
                }
                continue;
            }
            details.add(d.name() + " (" + d.provider() + (isSoft ? ", software device: works anywhere" : "") + ")");
            for (PortProbe.PortInfo p : d.ports()) {
                details.add(String.format(
                        "  port %d: %s, link layer %s, MTU %s (max %s)",
                        p.port(), p.state().ibvName(), p.linkLayer().ibvName(), p.activeMtu(), p.maxMtu()));
                for (GidEntry g : p.gids()) {
                    details.add(String.format(
                            "    GID[%d] %s%s%s",
                            g.index(),
                            g.gid(),
                            g.type() == null ? "" : "  " + g.type(),
                            g.netdev() == null ? "" : "  " + g.netdev()));
                }
                if (p.state() != PortState.ACTIVE) {
                    worst = Verdict.worse(worst, isSoft ? Verdict.WARN : Verdict.FAIL);
                    fixes.add(
                            d.name() + " port " + p.port() + " is " + p.state().ibvName() + ": "
                                    + (p.linkLayer() == LinkLayer.INFINIBAND
                                            ? "check the cable and that a subnet manager runs (sudo systemctl start opensm)"
                                            : "check the cable/link and 'ip link set IF up'"));
                }
                if (p.linkLayer() == LinkLayer.ETHERNET && !isSoft) {
                    if (p.gids().stream().noneMatch(GidEntry::isRoceV2)) {
                        worst = Verdict.worse(worst, Verdict.WARN);
                        fixes.add(
                                d.name() + " port " + p.port()
                                        + " has no RoCE v2 GID: give its netdev an IP address (ip addr add A/N dev IF); then use -x with that GID's index");
                    }
                    if (p.activeMtu().bytes < 1024) {
                        worst = Verdict.worse(worst, Verdict.WARN);
                        fixes.add(d.name() + " port " + p.port() + " active MTU " + p.activeMtu()
                                + ": raise the netdev MTU (ip link set IF mtu 4200 gives RoCE MTU 4096)");
                    }
                }
            }
        }
        for (String n : probe.providerNotes()) details.add("provider " + n);
        if (devices.isEmpty()) {
            return Check.of(
                    "ports",
                    title,
                    Verdict.FAIL,
                    "no RDMA device at all, not even the software device",
                    details,
                    "put jrdma-soft on the class path (the jrdma launcher does)");
        }
        String summary = hw + " hardware/kernel device" + (hw == 1 ? "" : "s") + ", " + soft + " software device"
                + (soft == 1 ? "" : "s") + (worst == Verdict.OK ? ", all ports active" : "");
        if (hw == 0 && worst == Verdict.OK) worst = Verdict.INFO;
        return Check.of("ports", title, worst, summary, details, String.join("; ", fixes));
    }

    // ---------------------------------------------------------------- memlock

    /** Soft limit of "Max locked memory" in bytes; -1 = unlimited; null = unknown. */
    Long memlockLimit() {
        String limits = read(p("proc/self/limits"));
        if (limits == null) return null;
        for (String line : limits.split("\n")) {
            if (!line.startsWith("Max locked memory")) continue;
            String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
            if (f.length == 0) return null;
            if (f[0].equals("unlimited")) return -1L;
            try {
                return Long.parseLong(f[0]);
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    Check checkMemlock(boolean kernelRdma) {
        Long lim = memlockLimit();
        String title = "locked-memory limit (ulimit -l)";
        String fix =
                "ulimit -l unlimited (this shell); permanently: '* soft memlock unlimited' and '* hard memlock unlimited' in "
                        + "/etc/security/limits.conf, LimitMEMLOCK=infinity for systemd services, docker run --ulimit memlock=-1";
        if (lim == null)
            return Check.of("memlock", title, Verdict.INFO, "unknown (no /proc/self/limits)", List.of(), "");
        if (lim < 0) return Check.of("memlock", title, Verdict.OK, "unlimited", List.of(), "");
        String have = human(lim);
        String need =
                "registration pins memory: perftest -a needs 2 x 8 MiB per QP, real applications their whole buffer pool; "
                        + human(MEMLOCK_NEEDED) + " is a comfortable minimum";
        if (lim >= MEMLOCK_NEEDED) return Check.of("memlock", title, Verdict.OK, have, List.of(need), "");
        // The software device registers without pinning, so the limit only bites for kernel devices.
        return Check.of(
                "memlock",
                title,
                kernelRdma ? Verdict.WARN : Verdict.INFO,
                have
                        + (kernelRdma
                                ? ": too low for hardware RDMA (ibv_reg_mr fails with ENOMEM)"
                                : " (matters only for hardware/kernel RDMA; the software device does not pin)"),
                List.of(need),
                fix);
    }

    // ---------------------------------------------------------------- fork safety

    Check checkFork() {
        String title = "fork safety (RDMAV_FORK_SAFE)";
        String v = env.get("RDMAV_FORK_SAFE"), w = env.get("IBV_FORK_SAFE");
        String rel = kernelRelease();
        boolean kernelSafe = rel != null && versionAtLeast(rel, 5, 13);
        List<String> details = new ArrayList<>();
        details.add(
                "RDMAV_FORK_SAFE=" + (v == null ? "(unset)" : v) + ", IBV_FORK_SAFE=" + (w == null ? "(unset)" : w));
        details.add("kernel " + (rel == null ? "?" : rel)
                + (kernelSafe
                        ? ": >= 5.13, pinned pages stay with the parent on fork (ibv_fork_init not needed)"
                        : ""));
        details.add("the JVM starts processes with posix_spawn, which does not copy pinned pages");
        if ((v != null && !v.isEmpty() && !v.equals("0")) || (w != null && !w.isEmpty() && !w.equals("0"))) {
            return Check.of("fork", title, Verdict.OK, "fork-safe mode requested", details, "");
        }
        if (kernelSafe) return Check.of("fork", title, Verdict.OK, "not set, not needed with this kernel", details, "");
        return Check.of(
                "fork",
                title,
                Verdict.INFO,
                "not set",
                details,
                "if the application forks children that touch registered memory (JNI code calling fork()), export RDMAV_FORK_SAFE=1");
    }

    // ---------------------------------------------------------------- counters

    static final Set<String> ERROR_COUNTERS = Set.of(
            "symbol_error",
            "port_rcv_errors",
            "port_rcv_remote_physical_errors",
            "port_rcv_switch_relay_errors",
            "link_error_recovery",
            "port_xmit_constraint_errors",
            "port_rcv_constraint_errors",
            "local_link_integrity_errors",
            "excessive_buffer_overrun_errors",
            "port_xmit_discards",
            "link_downed",
            "VL15_dropped",
            "out_of_sequence",
            "packet_seq_err",
            "rnr_nak_retry_err",
            "local_ack_timeout_err",
            "implied_nak_seq_err",
            "duplicate_request",
            "out_of_buffer",
            "req_cqe_error",
            "resp_cqe_error",
            "req_remote_access_errors",
            "resp_local_length_error",
            "req_remote_invalid_request",
            "rx_icrc_encapsulated",
            "roce_adp_retrans_to",
            "resp_remote_access_errors",
            "retry_exceeded_err",
            "send_rnr_err",
            "rcvd_rnr_err",
            "rcvd_seq_err",
            "completer_retry_err");
    static final Set<String> CONGESTION_COUNTERS =
            Set.of("np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored");

    Check checkCounters() {
        String title = "port counters (sysfs)";
        List<String> details = new ArrayList<>();
        List<String> nonzero = new ArrayList<>();
        int seen = 0;
        for (String dev : names(p("sys/class/infiniband"))) {
            for (String port : names(p("sys/class/infiniband").resolve(dev).resolve("ports"))) {
                for (String group : List.of("counters", "hw_counters")) {
                    Path dir = p("sys/class/infiniband")
                            .resolve(dev)
                            .resolve("ports")
                            .resolve(port)
                            .resolve(group);
                    for (String c : names(dir)) {
                        String v = read(dir.resolve(c));
                        if (v == null) continue;
                        v = v.trim();
                        seen++;
                        boolean err = ERROR_COUNTERS.contains(c) && !v.equals("0");
                        if (err) nonzero.add(dev + "/" + port + " " + c + "=" + v);
                        if (err
                                || CONGESTION_COUNTERS.contains(c)
                                || c.equals("port_xmit_data")
                                || c.equals("port_rcv_data"))
                            details.add(String.format(
                                    "%s/%s %s/%s = %s%s", dev, port, group, c, v, err ? "  <- error" : ""));
                    }
                }
            }
        }
        if (seen == 0)
            return Check.of("counters", title, Verdict.INFO, "no kernel RDMA device, no counters", details, "");
        if (!nonzero.isEmpty()) {
            return Check.of(
                    "counters",
                    title,
                    Verdict.WARN,
                    nonzero.size() + " error counter" + (nonzero.size() == 1 ? "" : "s") + " non-zero: "
                            + String.join(", ", nonzero),
                    details,
                    "symbol/link errors: cable or transceiver; out_of_sequence / packet_seq_err / local_ack_timeout_err on RoCE: "
                            + "packet loss, enable PFC or ECN (see the ECN check); rnr_nak_retry_err: the receiver posts receives too slowly "
                            + "(raise rnr_retry / post more receives). Counters are cumulative: compare before and after a run");
        }
        return Check.of("counters", title, Verdict.OK, seen + " counters read, no errors", details, "");
    }

    // ---------------------------------------------------------------- ECN (RoCE)

    Check checkEcn(List<PortProbe.DeviceInfo> devices) {
        String title = "ECN / congestion control (RoCE)";
        List<String> details = new ArrayList<>();
        // RoCE netdevs, from sysfs (gid_attrs) and from the verbs GID table.
        Set<String> netdevs = new TreeSet<>();
        Path ib = p("sys/class/infiniband");
        for (String dev : names(ib)) {
            for (String port : names(ib.resolve(dev).resolve("ports"))) {
                String ll = read(ib.resolve(dev).resolve("ports").resolve(port).resolve("link_layer"));
                if (ll == null || !ll.trim().equalsIgnoreCase("Ethernet")) continue;
                for (String g : names(ib.resolve(dev)
                        .resolve("ports")
                        .resolve(port)
                        .resolve("gid_attrs")
                        .resolve("ndevs"))) {
                    String nd = read(ib.resolve(dev)
                            .resolve("ports")
                            .resolve(port)
                            .resolve("gid_attrs")
                            .resolve("ndevs")
                            .resolve(g));
                    if (nd != null && !nd.isBlank()) netdevs.add(nd.trim());
                }
                for (String nd : names(ib.resolve(dev).resolve("device").resolve("net"))) netdevs.add(nd);
            }
        }
        for (PortProbe.DeviceInfo d : devices) {
            if ("soft".equals(d.provider())) continue;
            for (PortProbe.PortInfo pi : d.ports())
                for (GidEntry g : pi.gids())
                    if (g.netdev() != null && pi.linkLayer() == LinkLayer.ETHERNET) netdevs.add(g.netdev());
        }
        String tcpEcn = read(p("proc/sys/net/ipv4/tcp_ecn"));
        if (tcpEcn != null)
            details.add("net.ipv4.tcp_ecn = " + tcpEcn.trim() + " (TCP's ECN; RoCE's is per NIC below)");
        if (netdevs.isEmpty()) return Check.of("ecn", title, Verdict.INFO, "no RoCE port: not applicable", details, "");
        List<String> off = new ArrayList<>();
        boolean any = false;
        for (String nd : netdevs) {
            Path ecn = p("sys/class/net").resolve(nd).resolve("ecn");
            for (String role : List.of("roce_np", "roce_rp")) {
                Path en = ecn.resolve(role).resolve("enable");
                List<String> prios = names(en);
                if (prios.isEmpty()) continue;
                any = true;
                List<String> on = new ArrayList<>();
                for (String prio : prios) if ("1".equals(trim(read(en.resolve(prio))))) on.add(prio);
                details.add(nd + " " + role + " ECN enabled for priorities: "
                        + (on.isEmpty() ? "none" : String.join(",", on)));
                if (on.isEmpty()) off.add(nd + " " + role);
            }
        }
        Path cm = p("sys/kernel/config/rdma_cm");
        for (String dev : names(cm))
            for (String port : names(cm.resolve(dev).resolve("ports"))) {
                String tos =
                        trim(read(cm.resolve(dev).resolve("ports").resolve(port).resolve("default_roce_tos")));
                String mode =
                        trim(read(cm.resolve(dev).resolve("ports").resolve(port).resolve("default_roce_mode")));
                details.add("rdma_cm " + dev + "/" + port + ": default_roce_tos=" + tos + " default_roce_mode=" + mode);
                if ("0".equals(tos))
                    details.add(
                            "  ToS 0: ECN-capable transport bits not set by rdma_cm (set e.g. 106 for DSCP 26 + ECT)");
            }
        if (!any)
            return Check.of(
                    "ecn",
                    title,
                    Verdict.INFO,
                    "RoCE netdevs " + netdevs + " expose no ECN settings (not mlx5, or Soft-RoCE)",
                    details,
                    "lossless RoCE needs PFC or ECN configured on the NIC and the switches; see your NIC vendor's DCQCN guide");
        if (!off.isEmpty())
            return Check.of(
                    "ecn",
                    title,
                    Verdict.WARN,
                    "ECN off: " + String.join(", ", off),
                    details,
                    "echo 1 | sudo tee /sys/class/net/IF/ecn/roce_np/enable/3 /sys/class/net/IF/ecn/roce_rp/enable/3 (priority 3 = RoCE traffic class), and mark ECN on the switches");
        return Check.of("ecn", title, Verdict.OK, "ECN enabled on " + netdevs, details, "");
    }

    // ---------------------------------------------------------------- all

    /**
     * {@return the outcome of every check, in order: NICs, kernel modules, device nodes, libibverbs, ports, memlock,
     * fork safety, error counters, ECN, and a summary}
     */
    public List<Check> run() {
        List<PortProbe.DeviceInfo> devices = probe.devices();
        boolean kernelRdma = devices.stream().anyMatch(d -> !"soft".equals(d.provider()))
                || !names(p("sys/class/infiniband")).isEmpty();
        List<Check> checks = new ArrayList<>();
        checks.add(checkNics());
        checks.add(checkModules());
        checks.add(checkDevNodes());
        checks.add(checkLibibverbs());
        checks.add(checkPorts(devices));
        checks.add(checkMemlock(kernelRdma));
        checks.add(checkFork());
        checks.add(checkCounters());
        checks.add(checkEcn(devices));
        checks.add(summary(devices, kernelRdma));
        return checks;
    }

    Check summary(List<PortProbe.DeviceInfo> devices, boolean kernelRdma) {
        List<String> soft = devices.stream()
                .filter(d -> "soft".equals(d.provider()) && d.error() == null)
                .map(PortProbe.DeviceInfo::name)
                .toList();
        if (kernelRdma) {
            return Check.of(
                    "summary",
                    "summary",
                    Verdict.INFO,
                    "kernel RDMA present: run 'jrdma perf send_lat -d DEV' on two hosts, or against perftest's ib_send_lat",
                    List.of(),
                    "");
        }
        String s = "no RDMA hardware and no kernel RDMA here"
                + (soft.isEmpty() ? "" : "; the software device works: " + String.join(", ", soft));
        return Check.of(
                "summary",
                "summary",
                Verdict.INFO,
                s,
                List.of(
                        "try it on this machine: 'jrdma perf send_lat -d soft@127.0.0.1' in one terminal, "
                                + "'jrdma perf send_lat -d soft@127.0.0.2 127.0.0.1' in another (two addresses: each soft device owns UDP 4791 on its own)",
                        "for hardware or kernel Soft-RoCE (Debian/Ubuntu): " + APT),
                "");
    }

    // ---------------------------------------------------------------- helpers

    static boolean versionAtLeast(String release, int major, int minor) {
        String[] f = release.split("[.-]");
        try {
            int ma = Integer.parseInt(f[0]), mi = f.length > 1 ? Integer.parseInt(f[1]) : 0;
            return ma > major || (ma == major && mi >= minor);
        } catch (NumberFormatException e) {
            return false;
        }
    }

    static String human(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) return (bytes >> 30) + " GiB";
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) return (bytes >> 20) + " MiB";
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) return (bytes >> 10) + " KiB";
        return bytes + " bytes";
    }
}
