package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** FirstRdmaApp's {@code --gid-index}: a GID outside the port's table, or an empty entry, is refused before anything is connected. */
class FirstRdmaAppGidTest {

    @Test
    void aGidIndexOutsideTheTableOrOfAnEmptyEntryIsRefused() throws Exception {
        String empty = refusal(999);
        assertTrue(empty.startsWith("--gid-index 999 is not a GID of soft@127.0.0.1 (its table has "), empty);
        assertTrue(
                empty.endsWith(" entries, this one empty); jrdma devinfo -v -d soft@127.0.0.1 lists the GIDs"), empty);
        assertTrue(refusal(-2).contains("this one outside it"));
        assertTrue(refusal(1 << 20).contains("this one outside it"));
    }

    private static String refusal(int gidIndex) throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try (FirstRdmaApp app = new FirstRdmaApp(true, new PrintStream(printed, true, StandardCharsets.UTF_8))) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> app.run("soft@127.0.0.1", null, 0, gidIndex));
            String steps = printed.toString(StandardCharsets.UTF_8);
            assertTrue(steps.startsWith("[ 1] open the device") && !steps.contains(" ok ("), steps);
            return e.getMessage();
        }
    }
}
