package dev.jrdma.soft;

import dev.jrdma.verbs.Gid;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * An IP address of the software device or of a peer, IPv4 or IPv6: the 16 bytes of its RoCEv2 GID (IPv4 as
 * {@code ::ffff:a.b.c.d}) as two longs, so that the packet path compares and checksums addresses without touching an
 * {@link InetAddress}, and the {@link InetAddress} a socket binds or sends to (an IPv6 link-local one with its scope,
 * the interface). Immutable; equal when the 16 bytes are (the scope does not count).
 */
final class IpAddress {
    private static final long IPV4_MAPPED = 0xFFFFL << 32;

    /** The GID's bytes 0..7 and 8..15, big-endian. */
    final long hi, lo;
    /** What a socket binds or sends to. */
    final InetAddress inet;

    private IpAddress(long hi, long lo, InetAddress inet) {
        this.hi = hi;
        this.lo = lo;
        this.inet = inet;
    }

    /** The address of {@code a}; an IPv4-mapped IPv6 address is taken as the IPv4 address it maps. */
    static IpAddress of(InetAddress a) {
        if (a instanceof Inet4Address v4)
            return new IpAddress(
                    0, IPV4_MAPPED | (v4.hashCode() & 0xFFFF_FFFFL), v4); // hashCode(): the address as an int
        byte[] b = a.getAddress();
        long hi = getLong(b, 0), lo = getLong(b, 8);
        if (hi == 0 && (lo >>> 32) == 0xFFFFL) return of(toInet4((int) lo));
        return new IpAddress(hi, lo, a);
    }

    /**
     * The address a GID stands for; an IPv6 link-local one gets the scope of {@code local} (a link-local peer is
     * reached through the interface of the device's own link-local address).
     */
    static IpAddress ofGid(Gid gid, IpAddress local) {
        byte[] raw = gid.toByteArray();
        return of(getLong(raw, 0), getLong(raw, 8), local);
    }

    /** The address of the GID bytes {@code hi} and {@code lo}, with the scope of {@code local} when link-local (as {@link #ofGid}). */
    static IpAddress of(long hi, long lo, IpAddress local) {
        if (hi == 0 && (lo >>> 32) == 0xFFFFL) return of(toInet4((int) lo));
        byte[] raw = new byte[16];
        for (int i = 0; i < 8; i++) {
            raw[i] = (byte) (hi >>> (56 - 8 * i));
            raw[8 + i] = (byte) (lo >>> (56 - 8 * i));
        }
        try {
            int scope = isLinkLocal(hi) && local.inet instanceof Inet6Address l6 ? l6.getScopeId() : 0;
            return new IpAddress(hi, lo, Inet6Address.getByAddress(null, raw, scope));
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // 16 bytes are always an IPv6 address
        }
    }

    boolean isIpv4() {
        return hi == 0 && (lo >>> 32) == 0xFFFFL;
    }

    /** The IPv4 address as a big-endian int (for an IPv4 address only). */
    int ipv4() {
        return (int) lo;
    }

    /** An IPv6 link-local address (fe80::/10): it needs a scope (an interface) to be sent to. */
    boolean isLinkLocal() {
        return isLinkLocal(hi);
    }

    private static boolean isLinkLocal(long hi) {
        return (hi >>> 54) == (0xFE80L >>> 6);
    }

    /** The GID of this address: {@code ::ffff:a.b.c.d} for IPv4, the address itself for IPv6. */
    Gid gid() {
        byte[] g = new byte[16];
        for (int i = 0; i < 8; i++) {
            g[i] = (byte) (hi >>> (56 - 8 * i));
            g[8 + i] = (byte) (lo >>> (56 - 8 * i));
        }
        return Gid.of(g);
    }

    /** How device names write it: {@code 10.0.0.1}, {@code [fd00::1]}, {@code [fe80::1%eth0]}. */
    String literal() {
        if (isIpv4()) return inet.getHostAddress();
        String s = inet.getHostAddress(); // fe80:0:0:0:0:0:0:1%eth0: shortened below, the scope kept
        int pct = s.indexOf('%');
        String scope = pct < 0 ? "" : s.substring(pct);
        String bare = InetAddress.ofLiteral(pct < 0 ? s : s.substring(0, pct)).getHostAddress();
        return "[" + shorten(bare) + scope + "]";
    }

    /** RFC 5952's short form of a full IPv6 literal (the longest run of two or more zero groups becomes ::). */
    private static String shorten(String full) {
        String[] g = full.split(":");
        int best = -1, bestLen = 1;
        for (int i = 0; i < g.length; ) {
            int j = i;
            while (j < g.length && Integer.parseInt(g[j], 16) == 0) j++;
            if (j - i > bestLen) {
                best = i;
                bestLen = j - i;
            }
            i = Math.max(j, i + 1);
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < g.length; i++) {
            if (i == best) {
                sb.append(i == 0 ? "::" : ":");
                i += bestLen - 1;
                continue;
            }
            sb.append(Integer.toHexString(Integer.parseInt(g[i], 16)));
            if (i < g.length - 1) sb.append(':');
        }
        return sb.toString();
    }

    private static Inet4Address toInet4(int v4) {
        try {
            return (Inet4Address) InetAddress.getByAddress(
                    new byte[] {(byte) (v4 >>> 24), (byte) (v4 >>> 16), (byte) (v4 >>> 8), (byte) v4});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private static long getLong(byte[] b, int at) {
        long v = 0;
        for (int i = 0; i < 8; i++) v = v << 8 | (b[at + i] & 0xFF);
        return v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpAddress a && a.hi == hi && a.lo == lo;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(hi * 31 + lo);
    }

    @Override
    public String toString() {
        return literal();
    }
}
