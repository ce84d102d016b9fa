package dev.jrdma.testkit;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * The backends a test can run its pairs on, chosen by name: {@code deterministic} (the software device on a network
 * and clock the test owns: jrdma-soft's test-jar), {@code threaded} (the default device: the software device with
 * its threads where there is no RDMA hardware), {@code native} (the native provider's device), or the device
 * {@code -Djrdma.test.device=NAME} names (rxe0 in the Soft-RoCE guest), which wins over the others.
 */
public final class Backends {
    /** The deterministic network's backend factory in jrdma-soft's test-jar (reached by name: the kit needs no soft). */
    static final String DETERMINISTIC = "dev.jrdma.soft.DeterministicNetwork";

    private Backends() {}

    /**
     * The backend the system properties choose: {@code jrdma.test.device} when set, else {@code jrdma.test.backend},
     * else {@code fallback}.
     *
     * @param fallback the backend's name when no property names one
     * @return the backend
     */
    public static RcPair.Backend fromProperties(String fallback) {
        String device = System.getProperty("jrdma.test.device");
        if (device != null && !device.isBlank()) return device(Verbs.device(device));
        return named(System.getProperty("jrdma.test.backend", fallback));
    }

    /**
     * The backend of this name.
     *
     * @param name {@code deterministic}, {@code threaded} or {@code native}
     * @return the backend
     */
    public static RcPair.Backend named(String name) {
        return switch (name) {
            case "deterministic" -> deterministic();
            case "threaded" -> device(Verbs.defaultDevice());
            case "native" -> device(nativeDevice());
            default ->
                throw new IllegalArgumentException(
                        "jrdma.test.backend=" + name + ": deterministic, threaded or native");
        };
    }

    /**
     * Both sides on one context of {@code device}: its two QPs talk through it (loopback).
     *
     * @param device the device
     * @return the backend
     */
    public static RcPair.Backend device(Device device) {
        return RcPair.threaded(device.name(), () -> {
            Context c = device.open();
            return new Context[] {c, c};
        });
    }

    /** {@return the software device on a deterministic network with no faults, one context for both sides} */
    public static RcPair.Backend deterministic() {
        try {
            return (RcPair.Backend)
                    Class.forName(DETERMINISTIC).getMethod("oneDevice").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "the deterministic backend needs jrdma-soft's test-jar on the class path", e);
        }
    }

    /**
     * The native provider's device: {@code -Djrdma.native.device=NAME} (which must exist), else the first; the test
     * is skipped where the native provider lists none.
     *
     * @return the device
     */
    public static Device nativeDevice() {
        VerbsProvider p = Verbs.provider("native").orElseThrow();
        String named = System.getProperty("jrdma.native.device");
        if (named != null && !named.isBlank()) {
            return p.lookup(named)
                    .orElseThrow(() -> new AssertionError("jrdma.native.device=" + named
                            + " but the native provider lists " + p.devices()
                            + p.unavailableReason().map(r -> " (" + r + ")").orElse("")));
        }
        List<Device> d = p.devices();
        Assumptions.assumeFalse(
                d.isEmpty(),
                () -> "no native RDMA device here: " + p.unavailableReason().orElse("?"));
        return d.getFirst();
    }
}
