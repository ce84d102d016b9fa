package dev.jrdma.connect;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A group's CQ grows with its endpoints (up to the device's max_cqe) instead of refusing one past cqSize. */
class CqGrowthTest {
    static {
        TestSupport.init();
    }

    @Test
    void aServerTakesMoreConnectionsThanItsInitialCqHolds() throws Exception {
        // each endpoint reserves sendQueueDepth (16) + recvQueueDepth (8) + 4 control slots = 28 entries:
        // a CQ of 64 holds two of them, and the third was refused before
        EndpointConfig cfg = TestSupport.config().cqSize(64).build();
        int perEndpoint = cfg.sendQueueDepth() + cfg.recvQueueDepth() + Endpoint.CTRL_EXTRA;
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg)) {
            int initial = server.group().cq().capacity();
            int connections = initial / perEndpoint + 2;
            List<Endpoint[]> pairs = new ArrayList<>();
            try {
                for (int i = 0; i < connections; i++) pairs.add(TestSupport.connectAndAccept(server, cfg));
                assertTrue(server.group().cq().capacity() >= connections * perEndpoint,
                        "CQ of " + server.group().cq().capacity() + " entries for " + connections + " endpoints of " + perEndpoint);
                for (int i = 0; i < pairs.size(); i++) { // every connection still carries messages both ways
                    byte[] hello = ("to server " + i).getBytes(StandardCharsets.UTF_8);
                    pairs.get(i)[0].send(hello).join();
                    assertEquals("to server " + i, pairs.get(i)[1].receive(Duration.ofSeconds(10)).text());
                    pairs.get(i)[1].send(("to client " + i).getBytes(StandardCharsets.UTF_8)).join();
                    assertEquals("to client " + i, pairs.get(i)[0].receive(Duration.ofSeconds(10)).text());
                }
            } finally {
                for (Endpoint[] pair : pairs) {
                    pair[0].close();
                    pair[1].close();
                }
            }
        }
    }
}
