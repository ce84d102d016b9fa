package dev.jrdma.cli;

import dev.jrdma.bench.Perf;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/**
 * {@code jrdma perf TEST [flags] [HOST]}: perftest's tests (wire-compatible with ib_send_lat and friends), the TCP
 * baseline, the raw UDP floor and the side-by-side comparison. The flags are perftest's; {@code jrdma perf --help} lists them.
 */
@Command(
        name = "perf",
        description = {
            "Benchmarks: send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw atomic_bw (perftest-compatible),",
            "tcp_lat tcp_bw (socket baseline; tcp_lat --busy-poll spins), udp_lat udp_bw (the floor: raw UDP datagrams, busy-polled),",
            "compare (UDP floor, TCP and RDMA side by side, ratios to the floor, table + HTML report). Server without HOST, client with HOST.",
            "'jrdma perf --help' lists the flags (perftest's: -d -i -x -s -a -n -D -p -t -q --report_gbits)."
        })
public final class PerfCommand implements Callable<Integer> {
    /** The {@code jrdma perf} subcommand; picocli creates it and sets its options from the command line. */
    public PerfCommand() {}

    @Unmatched
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() {
        return Perf.run(args.toArray(String[]::new), System.out, System.err);
    }
}
