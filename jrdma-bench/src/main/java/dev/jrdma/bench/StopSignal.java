package dev.jrdma.bench;

/**
 * Asks a running test to stop at its next check: how a {@code --run_infinitely} run ends (perftest's SIGINT). The
 * command line requests it from a shutdown hook; a test requests it directly.
 */
final class StopSignal {
    private volatile boolean requested;

    /** Asks the run to stop; it finishes its requests in flight and closes the exchange with its peer. */
    void request() {
        requested = true;
    }

    /** {@return whether a stop was asked for} */
    boolean requested() {
        return requested;
    }
}
