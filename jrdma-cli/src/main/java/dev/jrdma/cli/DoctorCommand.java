package dev.jrdma.cli;

import dev.jrdma.bench.doctor.Check;
import dev.jrdma.bench.doctor.Doctor;
import dev.jrdma.bench.doctor.DoctorReport;
import dev.jrdma.bench.doctor.Verdict;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma doctor}: is this machine ready for RDMA? Each check with a verdict and the fix. */
@Command(
        name = "doctor",
        mixinStandardHelpOptions = true,
        description = {
            "Check the RDMA environment: NICs (lspci), kernel modules (modinfo), /dev/infiniband, libibverbs and its providers,",
            "ports and GIDs, the memlock limit, fork safety, port error counters and ECN on RoCE. Each check says OK, WARN, FAIL or INFO and what to do.",
            "Exit status: 0, or 1 when a check FAILs."
        })
public final class DoctorCommand implements Callable<Integer> {
    /** The {@code jrdma doctor} subcommand; picocli creates it and sets its options from the command line. */
    public DoctorCommand() {}

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Option(
            names = {"-v", "--verbose"},
            description = "Show the details of every check, not only of those that need attention.")
    boolean verbose;

    @Option(
            names = "--root",
            paramLabel = "DIR",
            description = "Read /sys, /proc, /dev, /lib, /usr, /etc under DIR instead of / (a copied or fake tree).")
    Path root;

    @Override
    public Integer call() {
        Doctor d;
        if (root == null) {
            d = Doctor.system();
        } else {
            if (!Files.isDirectory(root)) throw new IllegalArgumentException("--root " + root + " is not a directory");
            // under a foreign root the devices come from that tree's sysfs only, not from this machine's verbs
            d = new Doctor(root, System.getenv(), dev.jrdma.bench.doctor.PortProbe.none());
        }
        List<Check> checks = d.run();
        System.out.print(json ? DoctorReport.toJson(checks) : DoctorReport.format(checks, verbose));
        return checks.stream().anyMatch(c -> c.verdict() == Verdict.FAIL) ? 1 : 0;
    }
}
