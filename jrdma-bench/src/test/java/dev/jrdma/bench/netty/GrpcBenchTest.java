package dev.jrdma.bench.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A short run of the gRPC benchmark: a server process per transport, every figure measured, the table says them. */
class GrpcBenchTest {
    @Test // addresses of its own: the server process binds its software device there, beside this JVM's others
    void oneRunMeasuresBothTransportsAgainstAServerProcess() throws Exception {
        GrpcBench.Options o =
                new GrpcBench.Options(64, 100, 50, 4, 0.3, "127.0.0.3", "127.0.0.4", List.of("epoll", "jrdma"), true);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<GrpcBench.Row> rows = new GrpcBench(o, new PrintStream(log, true)).run();
        assertEquals(2, rows.size());
        for (GrpcBench.Row r : rows) {
            if (r.transport().contains("epoll") && !r.note().isEmpty()) continue; // no native epoll on this machine
            assertTrue(r.p50Us() > 0 && r.p99Us() >= r.p50Us(), r.toString());
            assertTrue(r.callsPerSec() > 0 && r.cpuUsPerCall() > 0, r.toString());
        }
        // --verbose: the p50 of each 1,000 timed calls, here one block of 100 per transport (the transports take turns)
        assertTrue(
                log.toString().matches("(?s).*jrdma timed calls, p50 of each 1000 \\[us\\]: [1-9][0-9]*\n.*"),
                log.toString());
        String table = GrpcBench.table(rows, o);
        assertTrue(table.contains("gRPC over jrdma-netty"), table);
    }
}
