package dev.jrdma.soft;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.NodeType;
import dev.jrdma.verbs.TransportType;
import java.net.InetAddress;

/** A software RoCEv2 device: one local IP address (IPv4 or IPv6) and UDP port. Opening it binds (or shares) its socket. */
public final class SoftDevice implements Device {
    private final String name;
    private final IpAddress address;
    private final int port;
    private final long guid;
    /** What the device's link damages (tests, {@code jrdma.soft.faults}), or null. */
    private final Faults faults;

    SoftDevice(String name, InetAddress address, int port) {
        this(name, address, port, Faults.fromSystemProperty());
    }

    private SoftDevice(String name, InetAddress address, int port, Faults faults) {
        this.faults = faults;
        this.name = name;
        this.address = IpAddress.of(address);
        this.port = port;
        this.guid = 0x0200_0000_0000_0000L
                | ((long) port << 32)
                | (this.address.lo & 0xFFFF_FFFFL); // the IPv4 address, or the IPv6 one's last 32 bits
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String provider() {
        return SoftProvider.NAME;
    }

    @Override
    public long nodeGuid() {
        return guid;
    }

    @Override
    public NodeType nodeType() {
        return NodeType.CA;
    }

    @Override
    public TransportType transportType() {
        return TransportType.IB;
    }

    /**
     * The local address the device's socket binds.
     *
     * @return an {@code Inet4Address}, or an {@code Inet6Address} (link-local ones with their scope)
     */
    public InetAddress address() {
        return address.inet;
    }

    /**
     * The UDP port of the device's socket (and of its peers).
     *
     * @return the port, 1..65535
     */
    public int port() {
        return port;
    }

    /**
     * The GID of the device's address, the one it sends from: {@code ::ffff:a.b.c.d} for IPv4, the address for IPv6.
     * Its index in port 1's GID table is {@code Context.defaultGidIndex(1)} (the table is the interface's, as rxe's).
     *
     * @return the device's own GID
     */
    public Gid gid() {
        return address.gid();
    }

    @Override
    public Context open() {
        return new SoftContext(
                this,
                faults == null
                        ? Transport.acquire(address.inet, port)
                        : Transport.acquire(
                                address.inet,
                                port,
                                l -> new FaultyLink(l, faults, address.literal() + ":" + port, Clock.SYSTEM)));
    }

    /**
     * A device on {@code address:port} whose link damages what it sends as {@code faults} say (tests). Its port must
     * not be open already without these faults: give each faulty device pair its own port.
     */
    static SoftDevice withFaults(InetAddress address, int port, Faults faults) {
        return new SoftDevice(
                "soft@" + IpAddress.of(address).literal() + ":" + port + "+faults", address, port, faults);
    }

    @Override
    public String toString() {
        return name + " (" + address.literal() + ":" + port + ")";
    }
}
