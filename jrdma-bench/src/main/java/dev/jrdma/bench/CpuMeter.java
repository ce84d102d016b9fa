package dev.jrdma.bench;

import java.lang.management.ManagementFactory;

/** Process CPU time over wall time: how much of one core this process used during a measured phase. */
public final class CpuMeter {
    private long cpu0, wall0, cpuNs, wallNs;

    public static long processCpuNanos() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                long t = os.getProcessCpuTime();
                if (t >= 0) return t;
            }
        } catch (RuntimeException | LinkageError ignored) {
        }
        return ProcessHandle.current().info().totalCpuDuration().map(java.time.Duration::toNanos).orElse(0L);
    }

    public CpuMeter start() {
        cpu0 = processCpuNanos();
        wall0 = System.nanoTime();
        return this;
    }

    public CpuMeter stop() {
        cpuNs = processCpuNanos() - cpu0;
        wallNs = System.nanoTime() - wall0;
        return this;
    }

    public long cpuNs() { return cpuNs; }

    public long wallNs() { return wallNs; }

    /** Percent of one core (100 = one core busy all the time). */
    public double percent() {
        return wallNs <= 0 ? 0 : 100.0 * cpuNs / wallNs;
    }
}
