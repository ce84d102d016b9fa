package dev.jrdma.verbs;

import dev.jrdma.verbs.spi.VerbsProvider;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Where a program starts: the devices of every provider ({@code ibv_get_device_list}) and the default one.
 * <pre>{@code
 * try (Context ctx = Verbs.defaultDevice().open()) { ... }
 * }</pre>
 * The default is the device named by the system property {@code jrdma.device} (or env {@code JRDMA_DEVICE}),
 * else the first device of the highest-priority provider: real RDMA hardware when there is some, the software
 * device otherwise.
 */
public final class Verbs {
    private Verbs() {}

    private static volatile List<VerbsProvider> providers;

    /**
     * {@return every provider on the class or module path, highest priority first, including those that list no device
     * here; found once, with {@link java.util.ServiceLoader}}
     */
    public static List<VerbsProvider> providers() {
        List<VerbsProvider> p = providers;
        if (p == null) {
            synchronized (Verbs.class) {
                if ((p = providers) == null) {
                    List<VerbsProvider> found = new ArrayList<>();
                    for (VerbsProvider vp : ServiceLoader.load(VerbsProvider.class, Verbs.class.getClassLoader()))
                        found.add(vp);
                    found.sort(Comparator.comparingInt(VerbsProvider::priority).reversed());
                    providers = p = List.copyOf(found);
                }
            }
        }
        return p;
    }

    /**
     * A provider by name.
     *
     * @param name {@code native} or {@code soft} (or another provider's {@link VerbsProvider#name()})
     * @return the provider, or empty when none by that name is on the path
     */
    public static Optional<VerbsProvider> provider(String name) {
        return providers().stream().filter(p -> p.name().equals(name)).findFirst();
    }

    /** {@return every device of every provider, hardware first ({@code ibv_get_device_list} over all providers)} */
    public static List<Device> devices() {
        List<Device> all = new ArrayList<>();
        for (VerbsProvider p : providers()) all.addAll(p.devices());
        return all;
    }

    /**
     * A device by name, from any provider: {@code mlx5_0}, {@code rxe0}, {@code soft_lo}, or a software device on
     * any local IPv4 address {@code soft@127.0.0.2} (optionally {@code soft@127.0.0.2:4791} for another UDP port).
     * The software device's defaults come from the system properties {@code jrdma.soft.address},
     * {@code jrdma.soft.port} and {@code jrdma.soft.mtu}.
     *
     * @param name the device's name
     * @return the device
     * @throws VerbsException (ENODEV) when no provider knows the name; the message lists the devices there are
     */
    public static Device device(String name) {
        for (VerbsProvider p : providers()) {
            Optional<Device> d = p.lookup(name);
            if (d.isPresent()) return d.get();
        }
        StringBuilder known = new StringBuilder();
        for (Device d : devices()) known.append(known.isEmpty() ? "" : ", ").append(d.name());
        throw new VerbsException(
                "ibv_get_device_list",
                VerbsException.ENODEV,
                "no device named '" + name + "'; devices here: " + (known.isEmpty() ? "none" : known)
                        + " (run 'jrdma devices')");
    }

    /**
     * The device a program uses when it names none: {@code jrdma.device} / {@code JRDMA_DEVICE} when set, else the first
     * device of the highest-priority provider that has one.
     *
     * @return the device
     * @throws VerbsException (ENODEV) when there is no device; the message says why each provider has none
     */
    public static Device defaultDevice() {
        String named = System.getProperty("jrdma.device", System.getenv("JRDMA_DEVICE"));
        if (named != null && !named.isBlank()) return device(named.trim());
        for (VerbsProvider p : providers()) {
            List<Device> d = p.devices();
            if (!d.isEmpty()) return d.getFirst();
        }
        StringBuilder why = new StringBuilder();
        for (VerbsProvider p : providers())
            why.append("; ")
                    .append(p.name())
                    .append(": ")
                    .append(p.unavailableReason().orElse("no devices"));
        throw new VerbsException(
                "ibv_get_device_list",
                VerbsException.ENODEV,
                "no RDMA device" + (providers().isEmpty() ? " and no provider on the class path (add jrdma-soft)" : why)
                        + " (run 'jrdma doctor')");
    }
}
