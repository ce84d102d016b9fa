package dev.jrdma.bench;

import java.util.ArrayList;
import java.util.List;

/** The command line of a child JVM that runs a jrdma main class the way this JVM runs jrdma. */
public final class JavaCommand {
    /** Modules that call native code (FFM): the native provider and rdma_cm. */
    public static final String NATIVE_MODULES = "dev.jrdma.nativeverbs,dev.jrdma.connect";

    private JavaCommand() {}

    /**
     * A JVM running {@code main} on the module path when jrdma runs there, else on this JVM's class path, with
     * native access for the modules that need it.
     *
     * @param main the class whose {@code main} the child runs
     * @return the command, to which the caller appends the program's arguments (a mutable list)
     */
    public static List<String> of(Class<?> main) {
        String java = ProcessHandle.current().info().command().orElse("java");
        Module module = main.getModule();
        if (module.isNamed()) {
            return new ArrayList<>(List.of(
                    java,
                    "--enable-native-access=" + NATIVE_MODULES,
                    "--module-path",
                    System.getProperty("jdk.module.path"),
                    "-m",
                    module.getName() + "/" + main.getName()));
        }
        return new ArrayList<>(List.of(
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                main.getName()));
    }

    /**
     * The same, with this JVM's {@code jrdma.*} system properties passed on (e.g. {@code -Djrdma.soft.shm=off}), so
     * that a child measures under the settings its parent was given.
     *
     * @param main the class whose {@code main} the child runs
     * @return the command, to which the caller appends the program's arguments (a mutable list)
     */
    public static List<String> withJrdmaProperties(Class<?> main) {
        List<String> cmd = of(main);
        List<String> props = new ArrayList<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("jrdma.")) props.add("-D" + name + "=" + System.getProperty(name));
        }
        props.sort(null);
        cmd.addAll(1, props);
        return cmd;
    }
}
