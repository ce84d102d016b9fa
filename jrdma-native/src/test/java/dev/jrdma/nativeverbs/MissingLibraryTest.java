package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Without libibverbs the provider loads, lists nothing and says what to install (checked in a child JVM). */
class MissingLibraryTest {
    /** Run in the child JVM. */
    public static void main(String[] args) {
        VerbsProvider p = Verbs.provider("native").orElseThrow();
        System.out.println("devices=" + p.devices().size());
        System.out.println("reason=" + p.unavailableReason().orElse("none"));
    }

    @Test
    void missingLibraryIsExplained() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process proc = new ProcessBuilder(List.of(
                        java,
                        "--enable-native-access=ALL-UNNAMED",
                        "-Djrdma.native.library=libibverbs-that-is-not-there.so.1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        MissingLibraryTest.class.getName()))
                .redirectErrorStream(true)
                .start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        System.out.println(out);
        assertEquals(0, proc.exitValue(), out);
        assertTrue(out.contains("devices=0"), out);
        assertTrue(out.contains("libibverbs1 ibverbs-providers"), out);
    }
}
