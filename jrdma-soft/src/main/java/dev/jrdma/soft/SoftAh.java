package dev.jrdma.soft;

import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.spi.Resource;
import java.net.InetSocketAddress;

/** An address handle of the software device: the peer's IP address (from its GID: IPv4-mapped or IPv6) and UDP port. */
final class SoftAh extends Resource implements AddressHandle {
    final SoftPd pd;
    private final AhAttr attr;
    /** Where UD sends through this handle go (with the handle's IP header fields), and the destination address the ICRC covers. */
    final InetSocketAddress remote;

    final IpAddress remoteAddr;

    SoftAh(SoftPd pd, AhAttr attr, String verb) {
        super(pd, "address handle");
        this.pd = pd;
        IpAddress peer;
        try {
            SoftContext.checkPort(verb, attr.portNum);
            peer = pd.context().route(attr, verb);
        } catch (RuntimeException e) {
            close(); // a half-made handle must not stay among the PD's children
            throw e;
        }
        this.attr = attr.copy();
        this.remoteAddr = peer;
        this.remote = new Destination(peer.inet, pd.transport().port, attr);
    }

    @Override
    public SoftPd pd() {
        return pd;
    }

    @Override
    public AhAttr attr() {
        return attr.copy();
    }

    @Override
    protected void destroy() {}

    @Override
    public String toString() {
        return "SoftAh[" + remote + "]";
    }
}
