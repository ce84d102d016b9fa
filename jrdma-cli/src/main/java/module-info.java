/**
 * The {@code jrdma} command ({@code ./jrdma}): demo, devices, devinfo, examples, perf and doctor. Run it on the
 * module path with {@code -m dev.jrdma.cli/dev.jrdma.cli.Jrdma}; the providers found on the module path are bound
 * as services.
 */
module dev.jrdma.cli {
    requires dev.jrdma.verbs;
    requires dev.jrdma.connect;
    requires dev.jrdma.examples;
    requires dev.jrdma.bench;
    requires info.picocli;

    opens dev.jrdma.cli to
            info.picocli;
}
