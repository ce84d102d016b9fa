package dev.jrdma.cli;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jrdma devices}: what {@code ibv_devices} prints, for every provider. */
@Command(name = "devices", description = "List RDMA devices of every provider (like ibv_devices).")
public final class DevicesCommand implements Callable<Integer> {
    /** The {@code jrdma devices} subcommand; picocli creates it and sets its options from the command line. */
    public DevicesCommand() {}

    @Option(
            names = "--provider",
            description = "Also show which provider serves each device and why a provider lists none.")
    boolean showProvider;

    @Override
    public Integer call() {
        print(System.out, showProvider);
        return 0;
    }

    static void print(PrintStream out, boolean showProvider) {
        out.printf("    %-16s\t   node GUID%s%n", "device", showProvider ? "\tprovider" : "");
        out.printf("    %-16s\t----------------%s%n", "------", showProvider ? "\t--------" : "");
        for (VerbsProvider p : Verbs.providers()) {
            List<Device> devices = p.devices();
            for (Device d : devices) {
                out.printf("    %-16s\t%s%s%n", d.name(), d.nodeGuidString(), showProvider ? "\t" + p.name() : "");
            }
            if (showProvider && devices.isEmpty()) {
                out.printf(
                        "    (%s provider: %s)%n",
                        p.name(), p.unavailableReason().orElse("no devices"));
            }
        }
    }
}
