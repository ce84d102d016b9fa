package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A client process that dies and is started again at the same address, ten times, against one running server (with
 * the software device's same-host rings on, the default): each run connects and gets its first echo within a second
 * (measured in the child from the connect call; where a fresh JVM's first connect alone takes longer — class loading
 * on a loaded machine — within three times the first run's, which restarted nothing: a fresh JVM's class loading
 * varies by 2x from run to run at load 10, and the failure this guards against is a restarted client that never gets
 * an answer at all, or one that waits out the dead ring's retry timeouts).
 * Before the rings were restart-safe, a client that ended through its shutdown hooks left the server sending into its
 * dead ring, and the next run never got an answer.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RestartTest {
    static {
        TestSupport.init();
    }

    @Test
    void aClientRestartedTenTimesAtTheSameAddressConnectsEachTimeWithinASecond() throws Exception {
        EndpointConfig cfg = TestSupport.config().build();
        long bound = 1_000_000;
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            for (int run = 0; run <= 10; run++) { // run 0 starts the client; runs 1-10 restart it
                Process child = ChildMain.start("echo", TestSupport.HOST, Integer.toString(server.port()), "127.0.0.7");
                try (Endpoint ep = server.accept(Duration.ofSeconds(30))) {
                    assertEquals("hello", ep.receive(Duration.ofSeconds(20)).text(), "run " + run);
                    ep.sendSync("hello".getBytes());
                    BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()));
                    String line;
                    while ((line = out.readLine()) != null && !line.startsWith("ECHO ")) {
                        System.out.println("child: " + line);
                    }
                    assertNotNull(line, "run " + run + ": the child ended without its echo");
                    long micros = Long.parseLong(line.split(" ")[1]);
                    System.out.println("run " + run + ": connected and echoed in " + micros + " us");
                    if (run == 0) bound = Math.max(bound, 3 * micros);
                    else
                        assertTrue(
                                micros < bound,
                                "run " + run + ": the restarted client needed " + micros + " us (bound " + bound + ")");
                } finally {
                    if (run % 2 == 0) child.destroy();
                    else child.destroyForcibly(); // SIGTERM (shutdown hooks run), SIGKILL
                    assertTrue(child.waitFor(30, TimeUnit.SECONDS), "the child did not end");
                }
            }
        }
    }
}
