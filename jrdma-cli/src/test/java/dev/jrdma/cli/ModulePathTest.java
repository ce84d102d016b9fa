package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.FindException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The jars on the module path: the module descriptors resolve (no split packages, every {@code requires} met), both
 * providers are found as services, and native access is granted by module name. The rest of the suite runs on the
 * class path (see the parent pom), so this is the test that would fail on a broken module-info.
 */
class ModulePathTest {
    /** The two providers: bound as services, since nothing requires them. */
    static final List<String> PROVIDERS = List.of("dev.jrdma.soft", "dev.jrdma.nativeverbs");

    static String modulePath;

    /**
     * This JVM's class path as a user's module path: every runtime jar (gRPC's are automatic modules, which declare no
     * requires, so all of them go), without the test classes and JUnit.
     */
    @BeforeAll
    static void modulePathFromTheClassPath() {
        List<String> entries = new ArrayList<>();
        Set<String> ours = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (p.endsWith("test-classes")) continue;
            ModuleDescriptor d;
            try {
                List<ModuleReference> refs = new ArrayList<>(ModuleFinder.of(p).findAll());
                if (refs.size() != 1) continue;
                d = refs.getFirst().descriptor();
            } catch (FindException notAModule) {
                continue; // --validate-modules below would report it if it mattered
            }
            if (d.name().startsWith("org.junit")
                    || d.name().startsWith("org.opentest4j")
                    || d.name().startsWith("org.apiguardian")) continue;
            if (d.name().startsWith("dev.jrdma.")) {
                assertFalse(d.isAutomatic(), d.name() + " has no module-info: " + p);
                ours.add(d.name());
            }
            entries.add(entry);
        }
        assertTrue(
                ours.contains("dev.jrdma.cli") && ours.containsAll(PROVIDERS),
                "jrdma modules on the class path: " + ours);
        modulePath = String.join(File.pathSeparator, entries);
    }

    record Result(int exit, String out) {}

    static Result java(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "-Djrdma.soft.address=127.0.0.1",
                "-Djrdma.soft.port=0",
                "--module-path",
                modulePath));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(150, TimeUnit.SECONDS), "timed out: " + cmd);
        return new Result(p.exitValue(), out);
    }

    static Result jrdma(String... args) throws Exception {
        return jrdma(List.of(), args);
    }

    static Result jrdma(List<String> jvmArgs, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(jvmArgs);
        cmd.addAll(List.of(
                "--enable-native-access=" + dev.jrdma.bench.JavaCommand.NATIVE_MODULES,
                "-m",
                "dev.jrdma.cli/dev.jrdma.cli.Jrdma"));
        cmd.addAll(List.of(args));
        Result r = java(cmd.toArray(String[]::new));
        // jrdma's own modules must need no warning; a dependency's (Netty loading its epoll library) is not ours to
        // grant
        assertFalse(
                r.out.lines()
                        .anyMatch(
                                l -> l.contains("has been called by dev.jrdma.") || l.contains("in an unnamed module")),
                "native access must be granted by module name: " + r.out);
        return r;
    }

    @Test
    void theModulesResolveWithoutSplitPackages() throws Exception {
        Result r = java("--validate-modules");
        assertEquals(0, r.exit, r.out);
        assertEquals("", r.out.strip(), "--validate-modules reports problems");
    }

    @Test
    void bothProvidersAreFoundAsServicesOnTheModulePath() throws Exception {
        Result r = jrdma("devices", "--provider");
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.matches("(?s).*soft_lo\\s+[0-9a-f]{16}\\s+soft\\b.*"), "soft provider: " + r.out);
        // native: its devices (rxe0 in the guest), or the line saying why it lists none (no RDMA device here)
        assertTrue(r.out.matches("(?s).*(\\tnative\\b|\\(native provider: ).*"), "native provider: " + r.out);
    }

    @Test
    @Timeout(300)
    void theDemoAndTheGrpcExampleRunOnTheModulePath() throws Exception {
        Result demo = jrdma("demo", "--timeout", "120");
        assertEquals(0, demo.exit, demo.out);
        assertEquals(2, demo.out.split("all steps done", -1).length - 1, "both sides finish: " + demo.out);
        // gRPC's jars are automatic modules: they declare no requires, so Netty's HTTP/2 codec modules they use are
        // resolved only when added (what any gRPC application on the module path does).
        Result grpc = jrdma(List.of("--add-modules", "ALL-MODULE-PATH"), "example", "grpc", "-n", "5");
        assertEquals(0, grpc.exit, grpc.out);
        assertTrue(grpc.out.contains("5 unary calls ok"), grpc.out);
    }
}
