package dev.jrdma.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the scheduler did with each thread of this JVM between two readings ({@code /proc/self/task/TID/schedstat}:
 * nanoseconds on a CPU, nanoseconds runnable but waiting for one): whether a timed loop's poller had its CPU, and which
 * of this process's threads (the receive thread, the JIT's compilers, GC) ran beside it. Linux only; elsewhere it reads
 * nothing and {@link #describeSince} says so.
 */
final class ThreadSched {
    /** A thread that ran or waited less than this in the interval is left out of the line. */
    private static final long SHOWN_NS = 1_000_000;

    private static final Path TASKS = Path.of("/proc/self/task");

    /** Per thread id: its name, time on a CPU, time waiting for one. */
    private final Map<String, Times> threads;

    private record Times(String name, long runNs, long waitNs) {}

    private ThreadSched(Map<String, Times> threads) {
        this.threads = threads;
    }

    /** {@return this JVM's threads now (empty where /proc cannot be read)} */
    static ThreadSched now() {
        Map<String, Times> m = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path t : tasks) {
                try {
                    String[] s = Files.readString(t.resolve("schedstat")).trim().split("\\s+");
                    String name = Files.readString(t.resolve("comm")).trim();
                    m.put(t.getFileName().toString(), new Times(name, Long.parseLong(s[0]), Long.parseLong(s[1])));
                } catch (IOException | RuntimeException gone) {
                    // the thread ended between the listing and the read
                }
            }
        } catch (IOException | RuntimeException noProc) {
            // not Linux: nothing to say
        }
        return new ThreadSched(m);
    }

    /**
     * {@return one line: each thread that ran or waited for a CPU at least a millisecond since {@code before}, busiest
     * first, as {@code name run/wait ms}}
     */
    String describeSince(ThreadSched before) {
        if (threads.isEmpty()) return "threads: not readable";
        List<Times> moved = new ArrayList<>();
        threads.forEach((tid, t) -> {
            Times b = before.threads.getOrDefault(tid, new Times(t.name, 0, 0));
            Times d = new Times(t.name, t.runNs - b.runNs, t.waitNs - b.waitNs);
            if (d.runNs >= SHOWN_NS || d.waitNs >= SHOWN_NS) moved.add(d);
        });
        moved.sort((a, b) -> Long.compare(b.runNs + b.waitNs, a.runNs + a.waitNs));
        StringBuilder sb = new StringBuilder("threads (ms on a CPU/waiting for one):");
        for (Times t : moved)
            sb.append(' ')
                    .append(t.name.replace(' ', '_'))
                    .append(' ')
                    .append(t.runNs / 1_000_000)
                    .append('/')
                    .append(t.waitNs / 1_000_000);
        return sb.toString();
    }
}
