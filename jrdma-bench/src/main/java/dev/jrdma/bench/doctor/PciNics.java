package dev.jrdma.bench.doctor;

import static dev.jrdma.bench.doctor.SysFiles.hex;
import static dev.jrdma.bench.doctor.SysFiles.linkName;
import static dev.jrdma.bench.doctor.SysFiles.list;
import static dev.jrdma.bench.doctor.SysFiles.read;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The machine's PCI network functions, and which of them can do RDMA by vendor, class and bound driver. */
final class PciNics {
    private PciNics() {}

    /** Vendors whose NICs can do RDMA (RoCE, InfiniBand or iWARP), with the RDMA kernel drivers. */
    record Vendor(String name, String ibDriver, Set<String> rdmaNetDrivers) {}

    static final Map<Integer, Vendor> RDMA_VENDORS = Map.ofEntries(
            Map.entry(
                    0x15b3,
                    new Vendor("Mellanox/NVIDIA", "mlx5_ib", Set.of("mlx5_core", "mlx4_core", "mlx4_en", "ib_mthca"))),
            Map.entry(0x14e4, new Vendor("Broadcom", "bnxt_re", Set.of("bnxt_en"))),
            Map.entry(0x8086, new Vendor("Intel", "irdma", Set.of("ice", "i40e", "hfi1"))),
            Map.entry(0x1425, new Vendor("Chelsio", "iw_cxgb4", Set.of("cxgb4"))),
            Map.entry(0x1077, new Vendor("Marvell/QLogic", "qedr", Set.of("qede", "qed"))),
            Map.entry(0x1d0f, new Vendor("Amazon EFA", "efa", Set.of("efa"))),
            Map.entry(0x19e5, new Vendor("Huawei", "hns_roce_hw_v2", Set.of("hns3"))),
            Map.entry(0x15ad, new Vendor("VMware PVRDMA", "vmw_pvrdma", Set.of("vmw_pvrdma", "vmxnet3"))),
            Map.entry(0x1dd8, new Vendor("AMD Pensando", "ionic_rdma", Set.of("ionic"))),
            Map.entry(0x1fc1, new Vendor("QLogic InfiniPath", "qib", Set.of("qib"))));

    /** A PCI network function. */
    record PciNic(
            String address, int vendor, int device, int pciClass, String driver, boolean rdmaCapable, String why) {}

    /** {@return the network functions under {@code root}'s {@code sys/bus/pci/devices}, each with whether it can do RDMA} */
    static List<PciNic> scan(Path root) {
        List<PciNic> nics = new ArrayList<>();
        Path dir = root.resolve("sys/bus/pci/devices");
        for (Path d : list(dir)) {
            int cls = hex(read(d.resolve("class")));
            int base = (cls >> 16) & 0xff, sub = (cls >> 8) & 0xff;
            boolean network = base == 0x02; // 0x0200 Ethernet, 0x0207 InfiniBand, 0x0280 other
            if (!network) continue;
            int vendor = hex(read(d.resolve("vendor")));
            int device = hex(read(d.resolve("device")));
            String driver = linkName(d.resolve("driver"));
            Vendor v = RDMA_VENDORS.get(vendor);
            boolean ib = sub == 0x07;
            boolean capable;
            String why;
            if (ib) {
                capable = true;
                why = "InfiniBand controller";
            } else if (v == null) {
                capable = false;
                why = "vendor 0x" + String.format("%04x", vendor) + " has no RDMA driver";
            } else if (vendor == 0x8086 || vendor == 0x14e4) {
                // Intel and Broadcom make many plain NICs: only E810/X722 (ice/i40e + irdma) and NetXtreme-C/E
                // (bnxt_en) do RDMA.
                capable = driver != null && v.rdmaNetDrivers().contains(driver);
                why = capable
                        ? v.name() + " (" + driver + ", RDMA driver " + v.ibDriver() + ")"
                        : v.name() + " NIC without an RDMA-capable driver"
                                + (driver == null ? " (no driver bound)" : " (" + driver + ")");
            } else {
                capable = true;
                why = v.name() + " (RDMA driver " + v.ibDriver() + ")";
            }
            nics.add(new PciNic(d.getFileName().toString(), vendor, device, cls, driver, capable, why));
        }
        return nics;
    }
}
