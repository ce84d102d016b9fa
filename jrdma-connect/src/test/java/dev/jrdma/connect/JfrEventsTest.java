package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.WcStatus;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/** The flight-recorder events: set-ups (good and failed), an endpoint ended by an error, sampled operations. */
class JfrEventsTest {
    static {
        TestSupport.init();
    }

    @Test
    void setUpsErrorsAndOperationsAreRecordedWithWhatHappened() throws Exception {
        JfrEvents.operationSampling(1);
        Path file = Files.createTempFile("jrdma-jfr", ".jfr");
        int clientQpn, serverQpn;
        try (Recording rec = new Recording()) {
            rec.enable("dev.jrdma.ConnectionSetup");
            rec.enable("dev.jrdma.ConnectionError");
            rec.enable("dev.jrdma.Operation");
            rec.start();
            try (TestSupport.Pair p =
                    TestSupport.pair(TestSupport.configWithRights().build())) {
                clientQpn = p.clientSide().qpNum();
                serverQpn = p.serverSide().qpNum();
                for (int i = 0; i < 3; i++) {
                    p.clientSide().sendSync(new byte[100 + i]);
                    assertEquals(
                            100 + i,
                            p.serverSide().receive(Duration.ofSeconds(10)).length());
                }
                RegisteredBuffer local = p.clientSide().pool().allocate(64);
                RemoteBuffer forged = new RemoteBuffer(local.address(), local.rkey() ^ 0x5A5A00, 64);
                RdmaException e =
                        assertThrows(RdmaException.class, () -> p.clientSide().writeSync(local, 0, forged, 0, 8));
                assertEquals(WcStatus.REM_ACCESS_ERR, e.status());
            }
            // a set-up that fails: nobody listens on that port
            int closedPort;
            try (ServerSocket s = new ServerSocket(0)) {
                closedPort = s.getLocalPort();
            }
            assertThrows(
                    RdmaConnectException.class,
                    () -> Endpoint.connect(
                                    TestSupport.HOST,
                                    closedPort,
                                    TestSupport.config()
                                            .timeout(Duration.ofSeconds(2))
                                            .build())
                            .close());
            rec.stop();
            rec.dump(file);
        } finally {
            JfrEvents.operationSampling(1024);
        }
        List<RecordedEvent> events = read(file);

        List<RecordedEvent> setUps = of(events, "dev.jrdma.ConnectionSetup");
        RecordedEvent client = only(
                setUps, e -> e.getBoolean("succeeded") && e.getString("role").equals("client"));
        RecordedEvent server = only(
                setUps, e -> e.getBoolean("succeeded") && e.getString("role").equals("server"));
        assertEquals("tcp", client.getString("method"));
        assertEquals(clientQpn, client.getInt("localQpn"));
        assertEquals(serverQpn, client.getInt("remoteQpn"));
        assertEquals(serverQpn, server.getInt("localQpn"));
        assertEquals(clientQpn, server.getInt("remoteQpn"));
        assertFalse(client.getString("device").isEmpty());
        assertTrue(client.getDuration().toNanos() > 0, "a set-up takes time");
        RecordedEvent failed = only(setUps, e -> !e.getBoolean("succeeded"));
        assertTrue(failed.getString("failure").startsWith("NOTHING_LISTENING: "), failed.getString("failure"));
        assertEquals("client", failed.getString("role"));

        RecordedEvent error = only(of(events, "dev.jrdma.ConnectionError"), e -> e.getInt("localQpn") == clientQpn);
        assertEquals("COMPLETION_ERROR", error.getString("kind"));
        assertEquals("REM_ACCESS_ERR", error.getString("status"));

        List<RecordedEvent> ops = of(events, "dev.jrdma.Operation");
        List<RecordedEvent> sends = ops.stream()
                .filter(e -> e.getString("operation").equals("SEND") && e.getInt("localQpn") == clientQpn)
                .toList();
        assertEquals(
                List.of(100L, 101L, 102L),
                sends.stream().map(e -> e.getLong("bytes")).sorted().toList());
        assertTrue(sends.stream().allMatch(e -> e.getBoolean("succeeded")));
        RecordedEvent write = only(ops, e -> e.getString("operation").equals("WRITE"));
        assertFalse(write.getBoolean("succeeded"));
        assertEquals(8, write.getLong("bytes"));
        assertTrue(write.getString("failure").contains("REM_ACCESS_ERR"), write.getString("failure"));
    }

    @Test
    void samplingRecordsOneOperationInN() throws Exception {
        JfrEvents.operationSampling(4);
        Path file = Files.createTempFile("jrdma-jfr", ".jfr");
        int clientQpn;
        try (Recording rec = new Recording()) {
            rec.enable("dev.jrdma.Operation");
            rec.start();
            try (TestSupport.Pair p = TestSupport.pair(TestSupport.config().build())) {
                clientQpn = p.clientSide().qpNum();
                for (int i = 0; i < 40; i++) {
                    p.clientSide().sendSync(new byte[8]);
                    p.serverSide().receive(Duration.ofSeconds(10));
                }
            }
            rec.stop();
            rec.dump(file);
        } finally {
            JfrEvents.operationSampling(1024);
        }
        long sends = of(read(file), "dev.jrdma.Operation").stream()
                .filter(e -> e.getString("operation").equals("SEND") && e.getInt("localQpn") == clientQpn)
                .count();
        assertEquals(10, sends, "sends recorded of 40 at one in 4");
    }

    private static List<RecordedEvent> read(Path file) throws IOException {
        try {
            return RecordingFile.readAllEvents(file);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static List<RecordedEvent> of(List<RecordedEvent> events, String name) {
        return events.stream()
                .filter(e -> e.getEventType().getName().equals(name))
                .toList();
    }

    private static RecordedEvent only(List<RecordedEvent> events, java.util.function.Predicate<RecordedEvent> p) {
        List<RecordedEvent> m = events.stream().filter(p).toList();
        assertEquals(1, m.size(), "matching events: " + m);
        return m.get(0);
    }
}
