package dev.jrdma.soft;

/** A clock that moves only when the test says so. */
final class ManualClock implements Clock {
    private long now = 1_000_000_000L;
    /** How many times the time was read (tests that count a path's clock reads). */
    long reads;

    @Override
    public long nanoTime() {
        reads++;
        return now;
    }

    void advanceMillis(double ms) {
        now += (long) (ms * 1_000_000);
    }

    void advanceNanos(long nanos) {
        now += nanos;
    }
}
