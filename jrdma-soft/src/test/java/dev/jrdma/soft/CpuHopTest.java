package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@link CpuHop} and {@link CurrentCpu} on this machine, for real: the thread leaves its CPU and keeps its own CPU set
 * (the kernel's list of the CPUs it may run on is the same after the move as before).
 */
class CpuHopTest {
    @Test
    void aMovedThreadKeepsItsOwnCpuSet() throws IOException {
        int cpu = CurrentCpu.get();
        assertTrue(cpu >= 0, "sched_getcpu answers on Linux with glibc");
        String before = allowedCpus();
        assumeTrue(!before.matches("\\d+"), "this thread may run on one CPU only: " + before);
        assertTrue(new CpuHop().moveOff(cpu), "moved off CPU " + cpu + " (allowed: " + before + ")");
        assertEquals(before, allowedCpus(), "its own CPU set again");
    }

    @Test
    void anUnknownCpuMovesNothing() throws IOException {
        String before = allowedCpus();
        assertFalse(new CpuHop().moveOff(CurrentCpu.UNKNOWN));
        assertFalse(new CpuHop().moveOff(1 << 20), "beyond cpu_set_t");
        assertEquals(before, allowedCpus());
    }

    /** The calling thread's {@code Cpus_allowed_list} (e.g. "0-1"). */
    private static String allowedCpus() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/thread-self/status")))
            if (line.startsWith("Cpus_allowed_list:"))
                return line.substring(line.indexOf(':') + 1).strip();
        throw new AssertionError("no Cpus_allowed_list in /proc/thread-self/status");
    }
}
