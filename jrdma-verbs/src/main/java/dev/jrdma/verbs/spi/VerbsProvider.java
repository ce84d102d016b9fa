package dev.jrdma.verbs.spi;

import dev.jrdma.verbs.Device;
import java.util.List;
import java.util.Optional;

/**
 * A source of RDMA devices, found with {@link java.util.ServiceLoader}. jrdma ships two: {@code native}
 * (libibverbs through FFM) and {@code soft} (the pure-Java RoCEv2 device). A provider that cannot work here
 * (no library, no device) lists nothing and says why in {@link #unavailableReason()}; it must never throw from
 * its constructor or from {@link #devices()}.
 */
public interface VerbsProvider {
    /** {@return the provider's short name: {@code native}, {@code soft}} */
    String name();

    /**
     * {@return the rank when picking the default device, higher first: hardware (native) before the software device}
     */
    int priority();

    /** {@return the devices this provider serves now; empty when it cannot work here} */
    List<Device> devices();

    /** {@return why {@link #devices()} is empty, or empty when it is not} */
    Optional<String> unavailableReason();

    /**
     * Finds a device by name. The default looks through {@link #devices()}; a provider may also accept names
     * that stand for devices created on demand (the soft provider takes {@code soft@127.0.0.2}).
     *
     * @param name the device's name
     * @return the device, or empty when this provider does not know the name
     */
    default Optional<Device> lookup(String name) {
        for (Device d : devices()) if (d.name().equals(name)) return Optional.of(d);
        return Optional.empty();
    }
}
