package dev.jrdma.soft;

/**
 * The time source of a software device's transport (retransmission timeouts, RNR waits): {@link #SYSTEM} in
 * production; tests pass a clock they advance by hand, so timeout and retry paths run without sleeping.
 */
@FunctionalInterface
interface Clock {
    /** Monotonic time in nanoseconds, like {@link System#nanoTime()} (only differences mean anything). */
    long nanoTime();

    Clock SYSTEM = System::nanoTime;
}
