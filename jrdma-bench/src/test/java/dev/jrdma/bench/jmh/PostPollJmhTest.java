package dev.jrdma.bench.jmh;

import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Collection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link PostPollBench} under JMH: {@code mvn -pl jrdma-bench test -Dtest=PostPollJmhTest -Djrdma.jmh=true}
 * (off by default: a benchmark is not a unit test). In-process (no fork) so it runs from the test class path.
 */
@EnabledIfSystemProperty(named = "jrdma.jmh", matches = "true")
class PostPollJmhTest {
    @Test
    void postPoll() throws Exception {
        Options opt = new OptionsBuilder()
                .include(PostPollBench.class.getName())
                .forks(0)
                .warmupIterations(2)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(3)
                .measurementTime(TimeValue.seconds(1))
                .build();
        Collection<RunResult> results = new Runner(opt).run();
        assertFalse(results.isEmpty());
        for (RunResult r : results)
            System.out.printf(
                    "%s: %.1f ns/op%n",
                    r.getParams().getBenchmark(), r.getPrimaryResult().getScore());
    }
}
