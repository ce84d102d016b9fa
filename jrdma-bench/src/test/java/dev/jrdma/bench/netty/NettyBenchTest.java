package dev.jrdma.bench.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A short run of the Netty transport benchmark: every transport measures, the table carries every figure. */
class NettyBenchTest {
    @Test
    void oneRunMeasuresEveryTransport() throws Exception {
        NettyBench.Options o = new NettyBench.Options(
                64,
                200,
                50,
                2,
                4,
                0.5,
                "127.0.0.1",
                "127.0.0.2",
                List.of("udp", "nio", "epoll", "jrdma", "endpoint", "send_lat"));
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        List<NettyBench.Row> rows = new NettyBench(o, new PrintStream(log, true)).run();
        assertEquals(6, rows.size());
        for (NettyBench.Row r : rows) {
            if (r.transport().contains("epoll") && !r.note().isEmpty()) continue; // no native epoll on this machine
            assertTrue(r.p50Us() > 0 && r.p99Us() >= r.p50Us(), r.toString());
            if (!r.note().equals("latency only")) { // the UDP floor and bare jrdma-connect measure latency only
                assertTrue(r.rate() > 0 && r.cpuPercent() > 0 && r.cpuUsPerRequest() > 0, r.toString());
            }
        }
        String table = NettyBench.table(rows, o);
        assertTrue(
                table.contains("Netty NIO")
                        && table.contains("Netty jrdma")
                        && table.contains("jrdma-connect Endpoint")
                        && table.contains("send_lat"),
                table);
        assertTrue(
                table.lines()
                        .filter(l -> l.startsWith("Netty NIO"))
                        .findFirst()
                        .orElseThrow()
                        .contains("1.00"),
                table);
    }
}
