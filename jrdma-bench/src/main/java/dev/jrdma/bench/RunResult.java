package dev.jrdma.bench;

import java.util.List;

/**
 * What one run measured: latency lines or bandwidth lines (one per size), the peer's bandwidth report when the
 * peer measured (passive servers print it), and this process's CPU use during the measured phase.
 *
 * @param test      the benchmark
 * @param device    the RDMA device it ran on; {@code tcp}, {@code tcp busy-poll} or {@code udp} for the socket tests
 * @param latency   the latency lines, one per size (empty for a bandwidth test)
 * @param bandwidth the bandwidth lines, one per size (empty for a latency test)
 * @param remote    the peer's bandwidth report, or null
 * @param cpuNs     CPU time this process used during the measured phase, in nanoseconds
 * @param wallNs    the measured phase's wall-clock time, in nanoseconds
 * @param warmInNote how compare's send_bw warm-in of the point went, when the report says so (it stopped at its
 *                   bound, or -Djrdma.perf.counters=true), else null
 */
public record RunResult(
        PerfTest test,
        String device,
        List<LatencyResult> latency,
        List<BwResult> bandwidth,
        BwResult remote,
        long cpuNs,
        long wallNs,
        String warmInNote) {
    /** Copies the lists. */
    public RunResult {
        latency = List.copyOf(latency);
        bandwidth = List.copyOf(bandwidth);
    }

    /** {@return the CPU use during the measured phase, in percent of one core (may exceed 100 with several threads)} */
    public double cpuPercent() {
        return wallNs <= 0 ? 0 : 100.0 * cpuNs / wallNs;
    }
}
