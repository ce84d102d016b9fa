package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** A warning that repeats on every packet reaches the log once per interval, with the count of those held back. */
class LogLimiterTest {

    /** Records what would have been logged. */
    private static final class Recorder implements System.Logger {
        final List<String> lines = new ArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(level + " " + msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(level + " " + format);
        }

        @Override
        public void log(Level level, Supplier<String> msgSupplier) {
            lines.add(level + " " + msgSupplier.get());
        }
    }

    @Test
    void onePerIntervalAndTheCountOfTheRest() {
        ManualClock clock = new ManualClock();
        Recorder log = new Recorder();
        LogLimiter limiter = new LogLimiter(log, clock, 1_000_000_000L);
        for (int i = 0; i < 2000; i++) {
            limiter.warn("ring failed");
            clock.advanceNanos(100_000); // 2,000 failures over 0.2 s
        }
        assertEquals(List.of("WARNING ring failed"), log.lines);
        assertEquals(1999, limiter.held());
        clock.advanceMillis(1000);
        limiter.warn("ring failed");
        assertEquals(List.of("WARNING ring failed", "WARNING ring failed (1999 more like it held back)"), log.lines);
        assertEquals(0, limiter.held());
    }
}
