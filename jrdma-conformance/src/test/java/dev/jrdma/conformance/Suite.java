package dev.jrdma.conformance;

import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.testkit.Backends;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WorkCompletion;
import java.time.Duration;

/**
 * Where the suite runs. Pairs ({@link #pair}) run on the backend the properties choose ({@link Backends#fromProperties}):
 * {@code -Djrdma.test.device=NAME} (rxe0 in the Soft-RoCE guest), else {@code -Djrdma.test.backend=} {@code
 * deterministic} (the default here: the software device on a network and clock the test owns), {@code threaded} or
 * {@code native}. Tests that open contexts themselves, or need the device's own threads (a blocking wait for an event
 * another thread raises), use {@link #device} and {@link #threadedPair}: the named device, else the default one.
 */
final class Suite {
    private Suite() {}

    /** {@return the suite's pair settings on the properties' backend: no channel, min RNR timer 12, every QP right} */
    static RcPair.Builder pair() {
        return settings(RcPair.on(Backends.fromProperties("deterministic")));
    }

    /** {@return the suite's pair settings on the named device, else the default device with its own threads} */
    static RcPair.Builder threadedPair() {
        return settings(RcPair.on(Backends.device(device())));
    }

    private static RcPair.Builder settings(RcPair.Builder b) {
        return b.channel(false)
                .timeout(12)
                .minRnrTimer(12)
                .psns(0x200, 0x100)
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
    }

    /** The port the suite uses. */
    static final int PORT = RcPair.PORT;

    /** Waits (20 s at most) for one completion of a device with its own threads (tests without a pair). */
    static WorkCompletion one(CompletionQueue cq) {
        WorkCompletion[] wcs = WorkCompletion.array(1);
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (cq.poll(wcs) == 1) return wcs[0];
            Thread.onSpinWait();
        }
        return fail("no completion within 20 s");
    }

    /** Asserts that no completion arrives on {@code cq} within {@code ms} (a device with its own threads). */
    static void none(CompletionQueue cq, long ms) {
        WorkCompletion[] wcs = WorkCompletion.array(1);
        long deadline = System.nanoTime() + ms * 1_000_000;
        while (System.nanoTime() < deadline) {
            if (cq.poll(wcs) > 0) fail("unexpected completion " + wcs[0]);
            Thread.onSpinWait();
        }
    }

    /** {@return {@code -Djrdma.test.device=NAME}, else the default device} */
    static Device device() {
        String name = System.getProperty("jrdma.test.device");
        return name == null || name.isBlank() ? Verbs.defaultDevice() : Verbs.device(name);
    }
}
