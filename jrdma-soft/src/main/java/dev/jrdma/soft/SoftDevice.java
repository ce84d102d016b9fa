package dev.jrdma.soft;

import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.NodeType;
import dev.jrdma.verbs.TransportType;

import java.net.Inet4Address;

/** A software RoCEv2 device: one local IPv4 address and UDP port. Opening it binds (or shares) its socket. */
public final class SoftDevice implements Device {
    private final String name;
    private final Inet4Address address;
    private final int port;
    private final long guid;
    /** What the device's link damages (tests, {@code jrdma.soft.faults}), or null. */
    private final Faults faults;

    SoftDevice(String name, Inet4Address address, int port) {
        this(name, address, port, Faults.fromSystemProperty());
    }

    private SoftDevice(String name, Inet4Address address, int port, Faults faults) {
        this.faults = faults;
        this.name = name;
        this.address = address;
        this.port = port;
        int ip = address.hashCode(); // Inet4Address.hashCode() is the address as an int
        this.guid = 0x0200_0000_0000_0000L | ((long) port << 32) | (ip & 0xFFFF_FFFFL);
    }

    @Override public String name() { return name; }
    @Override public String provider() { return SoftProvider.NAME; }
    @Override public long nodeGuid() { return guid; }
    @Override public NodeType nodeType() { return NodeType.CA; }
    @Override public TransportType transportType() { return TransportType.IB; }

    /** The local IPv4 address the device's socket binds. */
    public Inet4Address address() { return address; }

    /** The UDP port of the device's socket (and of its peers). */
    public int port() { return port; }

    /** GID index 0 of port 1: the IPv4-mapped IPv6 address {@code ::ffff:a.b.c.d}. */
    public Gid gid() { return Gid.fromInetAddress(address); }

    @Override
    public Context open() {
        return new SoftContext(this, faults == null ? Transport.acquire(address, port)
                : Transport.acquire(address, port, l -> new FaultyLink(l, faults, address.getHostAddress() + ":" + port)));
    }

    /**
     * A device on {@code address:port} whose link damages what it sends as {@code faults} say (tests). Its port must
     * not be open already without these faults: give each faulty device pair its own port.
     */
    static SoftDevice withFaults(Inet4Address address, int port, Faults faults) {
        return new SoftDevice("soft@" + address.getHostAddress() + ":" + port + "+faults", address, port, faults);
    }

    @Override
    public String toString() {
        return name + " (" + address.getHostAddress() + ":" + port + ")";
    }
}
