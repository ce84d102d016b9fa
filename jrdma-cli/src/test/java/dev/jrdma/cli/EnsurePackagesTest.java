package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * bin/ensure-packages, the set-up step of ./jrdma and bin/test: what it decides when packages are missing. Nothing is
 * installed here: the override variables pretend packages are missing, pretend a user id or no apt-get, and make
 * the install a dry run that prints the commands.
 */
class EnsurePackagesTest {
    record Result(int exit, String err) {}

    static final Path SCRIPT =
            Path.of("..", "bin", "ensure-packages").toAbsolutePath().normalize();

    static Result run(Map<String, String> env, String... args) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(new java.util.ArrayList<>(List.of(SCRIPT.toString())));
        pb.command().addAll(List.of(args));
        pb.environment().keySet().removeIf(k -> k.startsWith("JRDMA_SETUP_"));
        pb.environment().putAll(env);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "bin/ensure-packages did not finish");
        return new Result(p.exitValue(), out);
    }

    @Test
    void theListIsTheOneCiAndTheTestsNeed() throws Exception {
        assertTrue(Files.isExecutable(SCRIPT), SCRIPT.toString());
        Result r = run(Map.of(), "--list");
        assertEquals(0, r.exit, r.err);
        assertEquals(
                List.of("maven", "gcc", "libc6-dev", "libibverbs-dev", "librdmacm-dev", "ibverbs-providers", "tcpdump"),
                r.err.lines().toList());
    }

    @Test
    void nothingMissingDoesNothing() throws Exception {
        // The build runs after bin/test's own set-up, so everything is installed here.
        Result r = run(Map.of("JRDMA_SETUP_DRY_RUN", "1"));
        assertEquals(0, r.exit, r.err);
        assertEquals("", r.err);
    }

    @Test
    void asRootWithAptItInstallsExactlyWhatIsMissing() throws Exception {
        Result r = run(Map.of(
                "JRDMA_SETUP_MISSING",
                "libibverbs-dev librdmacm-dev",
                "JRDMA_SETUP_UID",
                "0",
                "JRDMA_SETUP_DRY_RUN",
                "1"));
        assertEquals(0, r.exit, r.err);
        assertTrue(r.err.contains("dry run: apt-get update"), r.err);
        assertTrue(
                r.err.contains("apt-get install -y -qq --no-install-recommends libibverbs-dev librdmacm-dev\n"), r.err);
    }

    @Test
    void onlyTheNamedPackagesAreConsidered() throws Exception {
        Result r = run(Map.of("JRDMA_SETUP_MISSING", "libibverbs-dev", "JRDMA_SETUP_DRY_RUN", "1"), "maven");
        assertEquals(0, r.exit, r.err);
        assertEquals("", r.err);
    }

    @Test
    void notRootItSaysExactlyWhatToRunAndFails() throws Exception {
        Result r = run(
                Map.of("JRDMA_SETUP_MISSING", "libibverbs-dev", "JRDMA_SETUP_UID", "1000", "JRDMA_SETUP_DRY_RUN", "1"));
        assertEquals(1, r.exit, r.err);
        assertTrue(
                r.err.contains(
                        "sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends libibverbs-dev'"),
                r.err);
        assertFalse(r.err.contains("dry run"), "must not try to install: " + r.err);
    }

    @Test
    void withoutAptItNamesWhatIsMissingAndFails() throws Exception {
        Result r = run(Map.of("JRDMA_SETUP_MISSING", "gcc", "JRDMA_SETUP_NO_APT", "1", "JRDMA_SETUP_DRY_RUN", "1"));
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.contains("missing on this machine: gcc"), r.err);
        assertTrue(r.err.contains("no apt-get"), r.err);
        assertFalse(r.err.contains("dry run"), "must not try to install: " + r.err);
    }

    @Test
    void anUnknownPackageIsAnError() throws Exception {
        Result r = run(Map.of(), "libfoo");
        assertEquals(2, r.exit, r.err);
        assertTrue(r.err.contains("unknown package 'libfoo'"), r.err);
    }
}
