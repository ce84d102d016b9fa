package dev.jrdma.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * perftest's --out_json: the run's settings ("test_info") and the last report line's figures ("results") in the file
 * --out_json_file names (perftest_out.json by default), rewritten at each report line, with perftest's keys and
 * formats (its text is JSON-like: the keys are not quoted, and every value ends with a comma).
 */
final class JsonReport {
    /** perftest's DEFAULT_JSON_FILE_NAME. */
    static final String DEFAULT_FILE = "perftest_out.json";

    private JsonReport() {}

    private static String testInfo(BenchResources r) {
        PerfOptions o = r.options;
        PerfTest t = r.test;
        StringBuilder sb = new StringBuilder("test_info: {\n");
        String verb = switch (t.verb) {
            case SEND -> "Send";
            case WRITE -> "RDMA_Write";
            case READ -> "RDMA_Read";
            default -> "Atomic";
        };
        sb.append("test: ").append(verb).append('_');
        if (t.verb == PerfTest.Verb.ATOMIC) sb.append(o.atomicType.name()).append('_');
        if (!t.latency) {
            if (o.bidirectional) sb.append("Bidirectional_");
            if (o.postList > 1) sb.append("Post_List_");
            sb.append("BW_");
        } else {
            sb.append("Latency_");
        }
        sb.append("Test,\n");
        if (o.events) sb.append("Test with events: Using_").append(r.deviceName).append("_comp0,\n");
        sb.append("Dual_port: OFF,\nDevice: \"").append(r.deviceName).append("\",\n");
        sb.append("Number_of_qps: ").append(o.numQp).append(",\nTransport_type: IB,\n");
        sb.append("Connection_type: ")
                .append(o.connection)
                .append(",\nUsing_SRQ: ")
                .append(r.srq != null ? "ON" : "OFF")
                .append(",\n");
        sb.append(" PCIe_relax_order: Unsupported,\n");
        sb.append("ibv_wr_API: OFF,\n"); // jrdma posts with ibv_post_send, perftest's old post send
        if (o.bandwidthSender() || o.test.latency)
            sb.append("TX_depth : ").append(o.effectiveTxDepth()).append(",\n");
        if (o.postList > 1) sb.append("Post_List: ").append(o.postList).append(",\n");
        if (o.recvPostList > 1)
            sb.append("Recv_Post_List: ").append(o.recvPostList).append(",\n");
        if (t.verb == PerfTest.Verb.SEND && (!o.bandwidthSender() || o.bidirectional))
            sb.append("RX_depth: ")
                    .append(o.rxDepth > 0 ? o.rxDepth : BenchResources.RX_DEPTH)
                    .append(",\n");
        if (!t.latency)
            sb.append("CQ_Moderation: ")
                    .append(o.cqMod > 0 ? o.cqMod : o.postList > 1 ? o.postList : BenchResources.CQ_MOD)
                    .append(",\n");
        sb.append("Mtu: ")
                .append(r.mtu.bytes)
                .append(",\nLink_type: ")
                .append(r.port.linkLayer().ibvName().equals("InfiniBand") ? "IB" : "Ethernet")
                .append(",\n");
        if (o.gidIndex >= 0) sb.append("GID_index: ").append(o.gidIndex).append(",\n");
        if (t.verb != PerfTest.Verb.READ && t.verb != PerfTest.Verb.ATOMIC)
            sb.append("Max_inline_data: ").append(r.inline).append(",\n");
        else sb.append("Outstand_reads: ").append(r.outReads).append(",\n");
        sb.append("rdma_cm_QPs: ").append(o.rdmaCm ? "ON" : "OFF").append(",\n");
        sb.append("Data_ex_method: ")
                .append(o.rdmaCm || o.rdmaCmExchange ? "rdma_cm" : "Ethernet")
                .append(",\n");
        if (o.rdmaCm && o.tos >= 0) sb.append("TOS: ").append(o.tos).append(",\n");
        return sb.append("},\n").toString();
    }

    /** The file after a bandwidth report line: REPORT_FMT_JSON (REPORT_FMT_EXT_JSON below 0.1 Gb/s), or the one --output figure. */
    static void bandwidth(BenchResources r, BwResult b, double cpuUtil) {
        PerfOptions o = r.options;
        String results;
        if (o.output == PerfOptions.Output.BANDWIDTH)
            results = String.format(Locale.ROOT, "bw_avg: %f,\n", b.bwAvg(o.reportGbits));
        else if (o.output == PerfOptions.Output.MESSAGE_RATE)
            results = String.format(Locale.ROOT, "msgRate_avg: %f,\n", b.msgRateMpps());
        else {
            boolean ext = o.reportGbits && b.bwAvg(true) < 0.1;
            results = String.format(
                    Locale.ROOT,
                    ext
                            ? "MsgSize: %d,\nn_iterations: %d,\nBW_peak: %.6f,\nBW_average: %.6f,\nMsgRate: %.6f,\n"
                            : "MsgSize: %d,\nn_iterations: %d,\nBW_peak: %.2f,\nBW_average: %.2f,\nMsgRate: %.6f,\n",
                    b.size(),
                    b.iters(),
                    b.bwPeak(o.reportGbits),
                    b.bwAvg(o.reportGbits),
                    b.msgRateMpps());
            if (o.cpuUtil) results += String.format(Locale.ROOT, "CPU_util: %.2f,\n", cpuUtil);
        }
        write(r, results);
    }

    /** The file after a latency report line: REPORT_FMT_LAT_JSON (or the duration form), or --output latency's figure. */
    static void latency(BenchResources r, LatencyResult l, double durationAvg, double tps, double cpuUtil) {
        PerfOptions o = r.options;
        String results;
        if (o.durationSec > 0) {
            results = o.output == PerfOptions.Output.LATENCY
                    ? String.format(Locale.ROOT, "t_avg: %f\n", durationAvg)
                    : String.format(
                            Locale.ROOT,
                            "MsgSize: %d,\nn_iterations: %d,\nt_avg: %.2f,\ntps_average: %.2f,\n",
                            l.size(),
                            l.iters(),
                            durationAvg,
                            tps);
        } else if (o.output == PerfOptions.Output.LATENCY) {
            results = String.format(Locale.ROOT, "avg_lat: %f,\n", l.tAvg());
        } else {
            results = String.format(
                    Locale.ROOT,
                    "MsgSize: %d,\nn_iterations: %d,\nt_min: %.2f,\nt_max: %.2f,\nt_typical: %.2f,\nt_avg: %.2f,\n"
                            + "t_stdev: %.2f,\npercentile_99: %.2f,\npercentile_99.9: %.2f,\n",
                    l.size(),
                    l.iters(),
                    l.tMin(),
                    l.tMax(),
                    l.tTypical(),
                    l.tAvg(),
                    l.tStdev(),
                    l.p99(),
                    l.p999());
        }
        if (o.cpuUtil && o.output == null) results += String.format(Locale.ROOT, "CPU_util: %.2f,\n", cpuUtil);
        write(r, results);
    }

    private static void write(BenchResources r, String results) {
        Path file = Path.of(r.options.outJsonFile != null ? r.options.outJsonFile : DEFAULT_FILE);
        try {
            Files.writeString(file, "{\n" + testInfo(r) + "results: {\n" + results + "},\n}\n");
        } catch (IOException e) {
            throw new BenchException("--out_json: cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}
