package dev.jrdma.connect;

/**
 * The time source of this module's deadlines and timeouts (operation timeouts, handshakes, close, the owner's
 * busy-poll budget): {@link #SYSTEM} in production; a test gives its group a clock it moves by hand
 * ({@link EndpointGroup#clock()}), so timeout paths run without sleeping. Blocking waits still sleep for what is
 * left on this clock.
 */
@FunctionalInterface
interface Clock {
    /**
     * {@return monotonic time in nanoseconds, like {@link System#nanoTime()} (only differences mean anything)}
     */
    long nanoTime();

    /** The system's monotonic clock. */
    Clock SYSTEM = System::nanoTime;

    /**
     * {@return the clock of {@code group}, or the system's when there is no group yet (a connect that opens its own)}
     *
     * @param group the group, or null
     */
    static Clock of(EndpointGroup group) {
        return group == null ? SYSTEM : group.clock();
    }
}
