package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class SmokeTest {
    @Test
    void sendAndReceive() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
            p.clientSide().sendSync("hello".getBytes(StandardCharsets.UTF_8));
            assertEquals("hello", p.serverSide().receive(Duration.ofSeconds(3)).text());
            p.serverSide().sendSync("world".getBytes(StandardCharsets.UTF_8));
            assertEquals("world", p.clientSide().receive(Duration.ofSeconds(3)).text());
        }
    }
}
