package dev.jrdma.bench;

import dev.jrdma.verbs.CompletionQueue;
import java.time.Duration;

/**
 * One wait of a test loop on completions or on the peer's data: spins (or with -e blocks on the completion channel;
 * with --poll-budget spins that long after the last progress, then blocks) and ends the run with a {@link
 * BenchException} when nothing has progressed for --timeout seconds (2 s at most in the warm-up, where the peer waits
 * for us).
 */
final class Stall {
    /** The longest a warm-up waits without progress: the peer waits for us meanwhile. */
    private static final long WARMUP_STALL_NS = 2_000_000_000L;

    private final BenchResources resources;
    private final String what;
    private final long limitNs;
    /** --poll-budget in nanoseconds (0: no spin before blocking, or no blocking at all without a channel). */
    private final long spinNs;

    private long lastProgress = System.nanoTime();
    /** Progress since {@link #spin}'s last clock read (a spinning wait dates it there: no clock read per message). */
    private boolean progressed;

    private int spins;
    private boolean armed;

    /**
     * @param resources the run's CQs and completion channel
     * @param what      what is awaited, for the message when it stalls
     */
    Stall(BenchResources resources, String what) {
        this.resources = resources;
        this.what = what;
        this.limitNs = resources.warmingUp ? Math.min(resources.stallNs, WARMUP_STALL_NS) : resources.stallNs;
        this.spinNs = resources.options == null ? 0 : resources.options.pollBudgetMicros * 1_000L;
    }

    void progress() {
        // a spinning wait reads the clock once in 1024 spins, not per message (a read costs ~25 ns in a VM, on the
        // latency tests' critical path); a wait that blocks (-e, --poll-budget) times itself from the progress
        if (resources.channel == null) progressed = true;
        else lastProgress = System.nanoTime();
    }

    /**
     * Nothing was in the CQ(s): spin (the default), or with -e wait on the completion channel. The first call
     * arms both CQs and returns, so the caller polls once more before blocking (a completion that came between
     * its poll and the arming raises no event); the next one blocks until an event (acknowledged at once) or the
     * stall limit.
     */
    void idle() {
        if (resources.channel == null || (spinNs > 0 && System.nanoTime() - lastProgress < spinNs)) {
            spin();
            return;
        }
        if (!armed) {
            resources.sendCq.requestNotify(false);
            if (resources.recvCq != resources.sendCq) resources.recvCq.requestNotify(false);
            armed = true;
            return;
        }
        long left = limitNs - (System.nanoTime() - lastProgress);
        if (left > 0) {
            resources.channelWaits++;
            CompletionQueue cq = resources.channel.awaitEvent(Duration.ofNanos(left));
            if (cq != null) cq.ackEvents(1);
        }
        armed = false;
        if (System.nanoTime() - lastProgress > limitNs) stalled();
    }

    void spin() {
        // spin as perftest does (its loops call ibv_poll_cq back to back, no pause; so does udp_lat's), on every
        // device: a software device makes progress on the polling thread itself
        if ((++spins & 0x3ff) == 0) {
            long now = System.nanoTime();
            if (progressed) {
                progressed = false;
                lastProgress = now; // late by at most 1024 spins: the limit is seconds
            } else if (now - lastProgress > limitNs) {
                stalled();
            }
        }
    }

    private void stalled() {
        throw new BenchException("no progress for " + limitNs / 1_000_000_000L + " s while waiting for " + what
                + ": the peer stopped, or its packets do not arrive (same -x/GID type on both sides? UDP 4791 open?"
                + (resources.ud ? " UD drops a message that finds no receive posted" : "") + ")");
    }
}
