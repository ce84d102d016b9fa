package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.spi.VerbsProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The {@code native} provider: RDMA devices through libibverbs, bound with the FFM API (no JNI, no C shim).
 * When libibverbs or a device is missing it lists nothing and {@link #unavailableReason()} says why; neither
 * loading this class nor calling it ever throws.
 */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
public final class NativeVerbsProvider implements VerbsProvider {
    private volatile List<Device> devices;
    private volatile String reason;

    /** The provider; {@link java.util.ServiceLoader} creates it. It loads nothing until first asked for devices. */
    public NativeVerbsProvider() {}

    @Override
    public String name() {
        return "native";
    }

    @Override
    public int priority() {
        return 100;
    }

    @Override
    public List<Device> devices() {
        List<Device> d = devices;
        if (d == null || d.isEmpty()) d = scan();
        return d;
    }

    @Override
    public Optional<String> unavailableReason() {
        devices();
        return Optional.ofNullable(reason);
    }

    private synchronized List<Device> scan() {
        if (devices != null && !devices.isEmpty()) return devices;
        List<Device> found = List.of();
        String why;
        try {
            if (!Ibv.Lib.available()) {
                why = Ibv.Lib.ERROR
                        + ": install the RDMA user-space libraries (Debian/Ubuntu: apt-get install libibverbs1 ibverbs-providers; "
                        + "Fedora/RHEL: dnf install libibverbs rdma-core)";
            } else {
                found = list();
                why = found.isEmpty() ? noDeviceReason() : null;
            }
        } catch (Throwable t) {
            why = "libibverbs could not be used: " + t;
        }
        devices = found;
        reason = why;
        return found;
    }

    /** Calls ibv_get_device_list once; the list is never freed, so the ibv_device pointers stay valid. */
    private static List<Device> list() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            MemorySegment num = a.allocate(ValueLayout.JAVA_INT);
            MemorySegment listPtr = (MemorySegment) Ibv.Fn.GET_DEVICE_LIST.invokeExact(st, num);
            if (listPtr.equals(MemorySegment.NULL)) return List.of();
            int n = num.get(ValueLayout.JAVA_INT, 0);
            if (n <= 0) {
                Ibv.Fn.FREE_DEVICE_LIST.invokeExact(listPtr);
                return List.of();
            }
            MemorySegment arr = listPtr.reinterpret(8L * (n + 1));
            List<Device> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                MemorySegment dev = arr.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(Layouts.DEVICE.byteSize());
                out.add(new NativeDevice(dev));
            }
            return List.copyOf(out);
        }
    }

    private static String noDeviceReason() {
        Path sys = Path.of("/sys/class/infiniband");
        List<String> kernelDevs = List.of();
        if (Files.isDirectory(sys)) {
            try (Stream<Path> s = Files.list(sys)) {
                kernelDevs = s.map(p -> p.getFileName().toString()).sorted().toList();
            } catch (Exception ignored) {
                // fall through
            }
        }
        if (!kernelDevs.isEmpty()) {
            return "the kernel has RDMA devices " + kernelDevs
                    + " but libibverbs lists none: install the user-space provider "
                    + "drivers (Debian/Ubuntu: apt-get install ibverbs-providers) and check /dev/infiniband/uverbs* is readable";
        }
        return "no RDMA devices"
                + (Files.isDirectory(sys)
                        ? ""
                        : " (the kernel has no InfiniBand support loaded: /sys/class/infiniband is missing)")
                + ": load the driver of your RDMA NIC, or create a Soft-RoCE device with 'modprobe rdma_rxe; "
                + "rdma link add rxe0 type rxe netdev IFACE' (the software device 'soft' works without any)";
    }

    @Override
    public String toString() {
        return "NativeVerbsProvider[" + devices() + "]";
    }
}
