package dev.jrdma.bench;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The scheduler's line of a timed loop names the threads that ran in it, with their time on a CPU. */
class ThreadSchedTest {
    @Test
    void aThreadThatSpunIsShownWithAtLeastItsCpuTime() throws Exception {
        assumeTrue(Files.isReadable(Path.of("/proc/self/task")), "Linux only");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        AtomicReference<String> line = new AtomicReference<>();
        Thread spinner = new Thread(
                () -> {
                    ThreadSched before = ThreadSched.now();
                    long cpuStart = mx.getCurrentThreadCpuTime();
                    // CPU time, not wall time: the thread's own on-CPU clock must move 5 ms, however busy the machine
                    while (mx.getCurrentThreadCpuTime() - cpuStart < 5_000_000) Thread.onSpinWait();
                    line.set(ThreadSched.now().describeSince(before));
                },
                "sched-probe");
        spinner.start();
        spinner.join();
        Matcher m = Pattern.compile("sched-probe (\\d+)/(\\d+)").matcher(line.get());
        assertTrue(m.find(), line.get());
        assertTrue(Integer.parseInt(m.group(1)) >= 4, line.get()); // whole ms, read a moment apart from the MXBean
        assertFalse(line.get().contains("main 0/0"), "threads that did nothing are left out: " + line.get());
    }

    @Test
    void aReadingWithNothingToReadSaysSo() {
        ThreadSched none = ThreadSched.now();
        String line = none.describeSince(none);
        assertTrue(line.startsWith("threads"), line);
        assertFalse(line.matches(".*\\d+/\\d+.*"), "nothing moved between a reading and itself: " + line);
    }
}
