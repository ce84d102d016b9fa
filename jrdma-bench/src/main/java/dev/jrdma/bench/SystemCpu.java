package dev.jrdma.bench;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * perftest's --cpu_util: the share of the machine's CPU time that was not idle between two readings of the "cpu"
 * line of /proc/stat (user, nice, system, irq, softirq... against idle and iowait), in percent; 0 where it cannot be read.
 */
final class SystemCpu {
    private final long busy, idle;

    private SystemCpu(long busy, long idle) {
        this.busy = busy;
        this.idle = idle;
    }

    static SystemCpu sample() {
        try {
            String[] f =
                    Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
            long busy = 0, idle = 0;
            for (int i = 1; i < f.length && i <= 8; i++) {
                long v = Long.parseLong(f[i]);
                if (i == 4 || i == 5) idle += v;
                else busy += v; // idle, iowait
            }
            return new SystemCpu(busy, idle);
        } catch (Exception e) {
            return new SystemCpu(0, 0);
        }
    }

    /** {@return the percent of CPU time busy from {@code before} to this reading} */
    double utilSince(SystemCpu before) {
        long b = busy - before.busy, i = idle - before.idle;
        return b + i > 0 ? 100.0 * b / (b + i) : 0;
    }
}
