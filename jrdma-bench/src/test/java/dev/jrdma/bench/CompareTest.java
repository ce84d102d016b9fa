package dev.jrdma.bench;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

class CompareTest {
    @BeforeAll
    static void ownUdpPort() {
        System.setProperty("jrdma.soft.port", Integer.toString(Loopback.freeUdpPort("127.0.0.31", "127.0.0.32")));
    }

    @Test
    @Timeout(180)
    void compareWritesTableAndHtmlWithBothSeries(@TempDir Path dir) throws Exception {
        int port = Loopback.freePort();
        Path html = dir.resolve("cmp.html");
        PerfOptions so = PerfOptions.parse("compare", "-d", SoftRdmaBenchTest.SERVER_DEV, "-p", "" + port, "--timeout", "10");
        PerfOptions co = PerfOptions.parse("compare", "-d", SoftRdmaBenchTest.CLIENT_DEV, "-p", "" + port, "--timeout", "10",
                "--sizes", "64,4096", "-n", "100", "--html", html.toString(), "127.0.0.1");
        var o = Loopback.run(out -> Compare.server(so, out), out -> {
            try {
                Compare.clientAndReport(co, out);
                return 0;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, 170);
        assertEquals(0, o.server());
        String text = o.clientOut();
        assertTrue(text.contains("latency t_typical [usec], 64 B"), text);
        assertTrue(text.contains("message rate [Mpps], 64 B"), text);
        assertTrue(text.contains("throughput BW average [MB/sec], 4096 B"), text);
        assertTrue(text.contains("RDMA gain"), text);
        String page = Files.readString(html);
        assertTrue(page.startsWith("<!DOCTYPE html>"));
        for (String series : List.of("tcp_lat", "send_lat", "write_lat", "tcp_bw", "send_bw", "write_bw"))
            assertTrue(page.contains("data-name=\"" + series + "\""), series + " missing");
        assertTrue(page.contains("<svg"));
        assertFalse(page.contains("<script"), "self-contained, no scripts");
        assertFalse(page.contains("http://") && page.replace("http://www.w3.org/2000/svg", "").contains("http://"), "no external links");
    }

    @Test
    void rowsUseOnlyWhatWasMeasured() {
        var lat = new LatencyResult(64, 100, 1, 9, 2, 2, 0.1, 5, 8);
        var tcpLat = new LatencyResult(64, 100, 10, 90, 20, 20, 1, 50, 80);
        var p1 = new Compare.Point(PerfTest.TCP_LAT, 64, tcpLat, null, 50, 40);
        var p2 = new Compare.Point(PerfTest.SEND_LAT, 64, lat, null, 60, 30);
        var r = new Compare.Result("soft@x", "h", 100, List.of(64), Map.of(PerfTest.TCP_LAT, List.of(p1), PerfTest.SEND_LAT, List.of(p2)));
        var rows = Compare.rows(r);
        assertEquals(10.0, rows.getFirst().gain(), 1e-9);          // 20 us TCP vs 2 us RDMA
        assertEquals(10.0, rows.get(1).gain(), 1e-9);              // 99%: 50 vs 5
        assertTrue(Double.isNaN(rows.get(2).gain()));              // no bandwidth measured
        assertEquals(Double.POSITIVE_INFINITY, new Compare.Row("cpu", 50, 0, Double.NaN, true).gain());   // a passive server at 0%
        assertEquals("inf", Compare.num(Double.POSITIVE_INFINITY));
        String t = Compare.table(r);
        assertTrue(t.contains("10.00"), t);
        String page = HtmlReport.render(r);
        assertTrue(page.contains("data-name=\"tcp_lat\"") && page.contains("data-name=\"send_lat\""));
        assertTrue(page.contains("no data measured"));             // the bandwidth chart
    }
}
