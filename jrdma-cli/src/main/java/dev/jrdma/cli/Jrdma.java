package dev.jrdma.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code jrdma} command: one entry point for diagnostics, the first RDMA application and benchmarks. */
@Command(
        name = "jrdma",
        mixinStandardHelpOptions = true,
        version = "jrdma 0.1.0",
        description = "RDMA for Java: devices, diagnostics, the first RDMA application, benchmarks.",
        subcommands = {
            DevicesCommand.class,
            DevinfoCommand.class,
            DemoCommand.class,
            DoctorCommand.class,
            PerfCommand.class,
            ExampleCommand.class,
            RpingCommand.class,
            NettyBenchCommand.class,
            GrpcBenchCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Jrdma implements Runnable {
    /** The top-level command; picocli creates it ({@link #commandLine()}). */
    public Jrdma() {}

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Without a subcommand: prints the usage (the subcommands and the standard options). */
    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /**
     * Runs {@code jrdma} and exits with the subcommand's status: 0 on success, 1 when it failed (its message is
     * printed; {@code -Djrdma.debug=true} adds the stack trace), 2 for a bad command line (picocli's usage error).
     *
     * @param args the subcommand and its options, e.g. {@code perf send_lat -s 64}
     */
    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /**
     * {@return the command line with every subcommand, shared by main and the tests: an exception from a subcommand
     * is printed as {@code jrdma NAME: message} and gives exit status 1}
     */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Jrdma());
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            cmd.getErr().println("jrdma " + cmd.getCommandName() + ": " + ex.getMessage());
            if (Boolean.getBoolean("jrdma.debug")) ex.printStackTrace(cmd.getErr());
            return 1;
        });
        return cl;
    }
}
