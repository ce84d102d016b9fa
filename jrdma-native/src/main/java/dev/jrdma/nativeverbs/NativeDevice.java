package dev.jrdma.nativeverbs;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.NodeType;
import dev.jrdma.verbs.TransportType;
import dev.jrdma.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** A libibverbs device ({@code struct ibv_device*} from a device list that is never freed). */
@SuppressWarnings("restricted") // FFM: this binding is what --enable-native-access is for
final class NativeDevice implements Device {
    private final MemorySegment dev;
    private final String name;
    private final long guid;
    private final NodeType nodeType;
    private final TransportType transportType;

    NativeDevice(MemorySegment dev) throws Throwable {
        this.dev = dev;
        this.name = Ibv.cString(dev, Layouts.offset(Layouts.DEVICE, "name"), 64);
        this.nodeType = NodeType.of(dev.get(ValueLayout.JAVA_INT, Layouts.offset(Layouts.DEVICE, "node_type")));
        this.transportType =
                TransportType.of(dev.get(ValueLayout.JAVA_INT, Layouts.offset(Layouts.DEVICE, "transport_type")));
        this.guid = Long.reverseBytes((long) Ibv.Fn.GET_DEVICE_GUID.invokeExact(dev));
    }

    /**
     * A device with no {@code struct ibv_device} behind it, for contexts the tests' null provider builds around its
     * own {@code struct ibv_context} (it is never opened, and has no sysfs directory).
     */
    NativeDevice(String name) {
        this.dev = MemorySegment.NULL;
        this.name = name;
        this.nodeType = NodeType.of(1);
        this.transportType = TransportType.of(0);
        this.guid = 0;
    }

    MemorySegment handle() {
        return dev;
    }

    /** The sysfs directory of the device ({@code /sys/class/infiniband/NAME}). */
    String ibdevPath() {
        return Ibv.cString(dev, Layouts.offset(Layouts.DEVICE, "ibdev_path"), 256);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String provider() {
        return "native";
    }

    @Override
    public long nodeGuid() {
        return guid;
    }

    @Override
    public NodeType nodeType() {
        return nodeType;
    }

    @Override
    public TransportType transportType() {
        return transportType;
    }

    @Override
    public Context open() {
        MemorySegment ctx;
        int errno;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = Ibv.callState(a);
            ctx = (MemorySegment) Ibv.Fn.OPEN_DEVICE.invokeExact(st, dev);
            errno = Ibv.errno(st);
        } catch (Throwable t) {
            throw Ibv.rethrow(t);
        }
        if (ctx.equals(MemorySegment.NULL)) {
            throw new VerbsException(
                    "ibv_open_device",
                    errno,
                    "cannot open " + name + ": "
                            + (errno == VerbsException.EACCES || errno == VerbsException.EPERM
                                    ? "no permission on /dev/infiniband/uverbs*: run as a user in the 'rdma' group or fix the device permissions"
                                    : "check the device exists (ibv_devices) and its driver is loaded (dmesg)"));
        }
        return new NativeContext(this, ctx.reinterpret(Layouts.CONTEXT.byteSize()));
    }

    @Override
    public String toString() {
        return "native device " + name + " (" + nodeGuidString() + ")";
    }
}
