package dev.jrdma.bench;

import java.lang.management.ManagementFactory;

/** Process CPU time over wall time: how much of one core this process used during a measured phase. */
public final class CpuMeter {
    private long cpu0, wall0, cpuNs, wallNs;

    /** A meter that has measured nothing yet: call {@link #start()}. */
    public CpuMeter() {}

    /**
     * {@return the CPU time this process used so far (all threads, user and system), in nanoseconds; 0 when the
     * platform does not tell}
     */
    public static long processCpuNanos() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                long t = os.getProcessCpuTime();
                if (t >= 0) return t;
            }
        } catch (RuntimeException | LinkageError ignored) {
        }
        return ProcessHandle.current()
                .info()
                .totalCpuDuration()
                .map(java.time.Duration::toNanos)
                .orElse(0L);
    }

    /**
     * Starts (or restarts) the measured phase.
     *
     * @return this
     */
    public CpuMeter start() {
        cpu0 = processCpuNanos();
        wall0 = System.nanoTime();
        return this;
    }

    /**
     * Ends the measured phase: {@link #cpuNs()} and {@link #wallNs()} hold its figures from now.
     *
     * @return this
     */
    public CpuMeter stop() {
        cpuNs = processCpuNanos() - cpu0;
        wallNs = System.nanoTime() - wall0;
        return this;
    }

    /** {@return the process CPU time of the phase, in nanoseconds} */
    public long cpuNs() {
        return cpuNs;
    }

    /** {@return the wall-clock time of the phase, in nanoseconds} */
    public long wallNs() {
        return wallNs;
    }

    /** {@return the CPU use in percent of one core (100: one core busy all the time; more with several threads)} */
    public double percent() {
        return wallNs <= 0 ? 0 : 100.0 * cpuNs / wallNs;
    }
}
