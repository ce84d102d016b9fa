package dev.jrdma.verbs;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/** A 128-bit global identifier ({@code union ibv_gid}), in network byte order. On RoCE it is an IPv6 or IPv4-mapped address. */
public final class Gid {
    /** The all-zero GID: an unused table entry, and {@link AhAttr#dgid}'s default. */
    public static final Gid ZERO = new Gid(new byte[16]);

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /**
     * A GID from its 16 bytes.
     *
     * @param raw the bytes in network order (copied)
     * @return the GID
     * @throws IllegalArgumentException when {@code raw} is not 16 bytes long
     */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        return new Gid(raw.clone());
    }

    /**
     * The GID RoCEv2 uses for an IP address: {@code ::ffff:a.b.c.d} for IPv4, the address itself for IPv6.
     *
     * @param address an IPv4 or IPv6 address
     * @return its GID
     */
    public static Gid fromInetAddress(InetAddress address) {
        byte[] g = new byte[16];
        byte[] a = address.getAddress();
        if (a.length == 4) {
            g[10] = (byte) 0xff;
            g[11] = (byte) 0xff;
            System.arraycopy(a, 0, g, 12, 4);
        } else {
            System.arraycopy(a, 0, g, 0, 16);
        }
        return new Gid(g);
    }

    /**
     * Parses ibv_devinfo's form ({@code fe80:0000:...}, eight groups) or any IPv6/IPv4 literal.
     *
     * @param text the GID or address; surrounding blanks are ignored
     * @return the GID
     * @throws IllegalArgumentException when it is neither form
     */
    public static Gid parse(String text) {
        String t = text.trim();
        if (t.matches("[0-9a-fA-F]{4}(:[0-9a-fA-F]{4}){7}")) {
            return new Gid(HexFormat.of().parseHex(t.replace(":", "")));
        }
        try {
            return fromInetAddress(InetAddress.ofLiteral(t));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a GID: '" + text
                    + "' (expected e.g. 0000:0000:0000:0000:0000:ffff:7f00:0001 or ::ffff:127.0.0.1)");
        }
    }

    /** {@return a copy of the 16 bytes, in network order} */
    public byte[] toByteArray() {
        return raw.clone();
    }

    /**
     * One byte of the GID, without copying.
     *
     * @param i 0..15, in network order
     * @return the byte
     * @throws ArrayIndexOutOfBoundsException when {@code i} is outside 0..15
     */
    public byte get(int i) {
        return raw[i];
    }

    /** {@return whether all 16 bytes are 0 (an unused table entry)} */
    public boolean isZero() {
        for (byte b : raw) if (b != 0) return false;
        return true;
    }

    /** {@return whether it is an IPv4-mapped address {@code ::ffff:a.b.c.d} (RoCEv2 over IPv4)} */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) if (raw[i] != 0) return false;
        return raw[10] == (byte) 0xff && raw[11] == (byte) 0xff;
    }

    /** {@return the IP address this GID stands for on RoCE (an Inet4Address when IPv4-mapped)} */
    public InetAddress toInetAddress() {
        try {
            if (isIpv4Mapped()) return Inet4Address.getByAddress(Arrays.copyOfRange(raw, 12, 16));
            return Inet6Address.getByAddress(null, raw.clone(), null);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The form ibv_devinfo -v prints: eight groups of four hex digits. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(39);
        String hex = HexFormat.of().formatHex(raw);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) sb.append(':');
            sb.append(hex, i, i + 4);
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }
}
