package dev.jrdma.bench;

import dev.jrdma.verbs.Context;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code -Djrdma.perf.counters=true}: what the device's counters did during a bandwidth test's timed loop alone (not
 * its warm-up; for a warmed-in ping-pong point, its last loop: the rewarm iterations and the timed ones), and where the loop waited longest for a completion, printed to standard error. A slow run then says
 * which counter moved (retransmits, takeovers, doorbells, ring-full) and whether it was one long stall or slow all
 * along.
 */
final class TimedCounters {
    /** A wait for a completion longer than this is a stall (a descheduled peer, a timeout), not the loop's pace. */
    private static final long LONG_WAIT_NS = 1_000_000;

    private final Context ctx;
    private final Map<String, Long> before;
    /** Where this JVM's threads stood at the start: whether the loop's poller kept its CPU, and what ran beside it. */
    private final ThreadSched threadsBefore;

    private TimedCounters(Context ctx) {
        this.ctx = ctx;
        this.before = ctx.counters();
        this.threadsBefore = ThreadSched.now();
    }

    /** {@return a reading of {@code ctx}'s counters now, or null when -Djrdma.perf.counters is not set} */
    static TimedCounters start(Context ctx) {
        return ctx != null && Boolean.getBoolean("jrdma.perf.counters") ? new TimedCounters(ctx) : null;
    }

    /**
     * Prints the loop's figures and each counter's change since {@link #start}.
     *
     * @param what      the test and size
     * @param messages  messages completed in the loop
     * @param elapsedNs the loop's time (its first post to its last completion)
     * @param start     when the loop began ({@link System#nanoTime})
     * @param completed each message's completion time, or null when not recorded
     */
    void print(String what, long messages, long elapsedNs, long start, long[] completed) {
        ThreadSched threads = ThreadSched.now();
        StringBuilder sb = new StringBuilder("timed ").append(what).append(": ").append(messages);
        sb.append(" messages in ").append(elapsedNs / 1000).append(" us");
        if (completed != null && messages > 0) {
            long gap = completed[0] - start, prev = completed[0];
            int at = 0, longWaits = gap > LONG_WAIT_NS ? 1 : 0;
            long longWaitNs = gap > LONG_WAIT_NS ? gap : 0;
            for (int i = 1; i < messages; i++) {
                long d = completed[i] - prev;
                if (d > gap) {
                    gap = d;
                    at = i;
                }
                if (d > LONG_WAIT_NS) {
                    longWaits++;
                    longWaitNs += d;
                }
                prev = completed[i];
            }
            sb.append(", longest wait for a completion ")
                    .append(gap / 1000)
                    .append(" us (before message ")
                    .append(at)
                    .append("), waits over 1 ms ")
                    .append(longWaits)
                    .append(" (")
                    .append(longWaitNs / 1000)
                    .append(" us in all)");
        }
        Map<String, Long> after = new TreeMap<>(ctx.counters());
        sb.append(';');
        after.forEach((k, v) -> {
            long d = v - before.getOrDefault(k, 0L);
            if (d != 0 && !k.startsWith("dcqcn_rate"))
                sb.append(' ').append(k).append('=').append(d);
        });
        sb.append("; ").append(threads.describeSince(threadsBefore));
        System.err.println(sb);
    }
}
