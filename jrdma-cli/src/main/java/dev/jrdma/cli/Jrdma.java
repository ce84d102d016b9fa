package dev.jrdma.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code jrdma} command: one entry point for diagnostics, the first RDMA application and benchmarks. */
@Command(name = "jrdma", mixinStandardHelpOptions = true, version = "jrdma 0.1.0",
        description = "RDMA for Java: devices, diagnostics, the first RDMA application, benchmarks.",
        subcommands = {DevicesCommand.class, DevinfoCommand.class, DemoCommand.class, DoctorCommand.class, PerfCommand.class, ExampleCommand.class, RpingCommand.class, NettyBenchCommand.class, CommandLine.HelpCommand.class})
public final class Jrdma implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The command line with every subcommand, shared by main and the tests. */
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
