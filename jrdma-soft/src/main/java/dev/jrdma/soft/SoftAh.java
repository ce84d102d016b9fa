package dev.jrdma.soft;

import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.spi.Resource;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/** An address handle of the software device: the peer's IPv4 address (from its IPv4-mapped GID) and UDP port. */
final class SoftAh extends Resource implements AddressHandle {
    final SoftPd pd;
    private final AhAttr attr;
    /** Where UD sends through this handle go, and the destination address the ICRC covers. */
    final InetSocketAddress remote;
    final int remoteIp;

    SoftAh(SoftPd pd, AhAttr attr, String verb) {
        super(pd, "address handle");
        this.pd = pd;
        try {
            SoftContext.checkPort(verb, attr.portNum);
            if (!attr.isGlobal || attr.dgid == null || !attr.dgid.isIpv4Mapped()) throw new VerbsException(verb, VerbsException.EINVAL,
                    "the soft device routes by GID: set ah.global(peerGid, 0) with the peer's IPv4-mapped GID (::ffff:a.b.c.d)");
            if (attr.sgidIndex != 0) throw new VerbsException(verb, VerbsException.EINVAL,
                    "the soft device has one GID (index 0); got sgid_index " + attr.sgidIndex);
        } catch (RuntimeException e) {
            close(); // a half-made handle must not stay among the PD's children
            throw e;
        }
        this.attr = attr.copy();
        InetAddress ia = attr.dgid.toInetAddress();
        this.remoteIp = ia.hashCode();
        this.remote = new InetSocketAddress((Inet4Address) ia, pd.transport().port);
    }

    @Override public SoftPd pd() { return pd; }
    @Override public AhAttr attr() { return attr.copy(); }

    @Override
    protected void destroy() {}

    @Override
    public String toString() {
        return "SoftAh[" + remote + "]";
    }
}
