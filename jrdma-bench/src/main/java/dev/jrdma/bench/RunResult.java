package dev.jrdma.bench;

import java.util.List;

/**
 * What one run measured: latency lines or bandwidth lines (one per size), the peer's bandwidth report when the
 * peer measured (passive servers print it), and this process's CPU use during the measured phase.
 */
public record RunResult(PerfTest test, String device, List<LatencyResult> latency, List<BwResult> bandwidth, BwResult remote,
                        long cpuNs, long wallNs) {
    public RunResult {
        latency = List.copyOf(latency);
        bandwidth = List.copyOf(bandwidth);
    }

    /** Percent of one core during the measured phase. */
    public double cpuPercent() {
        return wallNs <= 0 ? 0 : 100.0 * cpuNs / wallNs;
    }
}
