package dev.jrdma.examples;

import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.WorkCompletion;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Waits for completions the way a verbs program that does not want to spin does: poll; when empty, arm the CQ,
 * poll once more (a completion may have slipped in before the arm), then block on the channel.
 */
public final class Completions {
    private final CompletionQueue cq;
    private final CompletionChannel channel;
    private final WorkCompletion[] wcs = WorkCompletion.array(16);
    private int next, count;

    /**
     * Waits on {@code cq}: by blocking on its channel when it has one, else by spinning.
     *
     * @param cq the completion queue to take completions from
     */
    public Completions(CompletionQueue cq) {
        this.cq = cq;
        this.channel = cq.channel();
    }

    /**
     * The next completion, waiting at most {@code timeout}; the returned object is reused by the next call.
     *
     * @param timeout how long to wait
     * @return the oldest completion not returned yet
     * @throws TimeoutException when none came within {@code timeout}
     */
    public WorkCompletion next(Duration timeout) throws TimeoutException {
        if (next < count) return wcs[next++];
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            count = cq.poll(wcs);
            if (count > 0) {
                next = 1;
                return wcs[0];
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) throw new TimeoutException("no completion within " + timeout.toMillis() + " ms");
            if (channel == null) {
                Thread.onSpinWait();
                continue;
            }
            cq.requestNotify(false);
            count = cq.poll(wcs);
            if (count > 0) {
                next = 1;
                return wcs[0];
            }
            CompletionQueue ready = channel.awaitEvent(Duration.ofNanos(left));
            if (ready != null) ready.ackEvents(1);
        }
    }
}
