package dev.jrdma.soft.wire;

import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/**
 * The RoCEv2 invariant CRC (ICRC), computed the way Linux {@code rdma_rxe} computes it, for IPv4 and IPv6.
 *
 * <p>The CRC is CRC-32 (the Ethernet/zlib polynomial, reflected) over, in order:
 * <ol>
 *   <li>8 bytes of {@code 0xFF} standing for the masked LRH (the kernel starts from the pre-computed state
 *       {@code 0xdebb20e3}, which is exactly this);</li>
 *   <li>a 20-byte IPv4 header with TOS, TTL and header checksum masked to all ones;</li>
 *   <li>the 8-byte UDP header with its checksum masked to all ones;</li>
 *   <li>the BTH with {@code resv8a} (byte 4) masked to all ones;</li>
 *   <li>the rest of the packet: extension headers, payload and pad bytes.</li>
 * </ol>
 * The result is inverted and stored in the last 4 bytes of the packet least significant byte first (the
 * kernel stores the CPU-order {@code u32}; on the little-endian machines rxe runs on that is this order).
 *
 * <p><b>The IPv4 header is reconstructed</b>, not observed: a user-space UDP sender never sees the header
 * the kernel builds, and a receiver does not get it either. Both sides therefore build it from what they
 * know: version 4, IHL 5, total length = 28 + UDP payload, flags DF (0x4000), fragment offset 0, protocol 17,
 * source and destination address, and the masked fields as above; the UDP header is source port, destination
 * port, length = 8 + UDP payload. Only the <b>identification</b> is unknowable: the kernel picks it (Linux rxe
 * and, on recent kernels, an unconnected UDP socket draw it from a hashed counter even with DF set).
 *
 * <p><b>Recovering the identification.</b> The CRC is linear over GF(2): flipping the 16 identification bits
 * changes the ICRC by a fixed 16-dimensional subspace of 32-bit values that depends only on the packet's length.
 * {@link #recoverId} finds the one identification (if any) under which the stored ICRC is right, by reducing the
 * difference between the stored value and the value for identification 0 against that subspace's basis (built
 * once per length, 17 CRC passes over zeros). A packet is then accepted with 16 of the ICRC's 32 check bits left
 * (its UDP checksum, when the sender set one, is checked by the kernel as well). {@link #idDelta} is the same
 * basis used forwards: a sender that writes its own identification (a raw socket) patches the ICRC by it.
 *
 * <p><b>IPv6</b> ({@link #computeIpv6}): the pseudo header is the 40-byte IPv6 header with traffic class, flow
 * label and hop limit masked to all ones (so its first four bytes are {@code 6f ff ff ff}), payload length = the UDP
 * length, next header 17, and the two addresses; then the UDP header and the BTH masked as for IPv4. Nothing in it is
 * chosen by the kernel, so both ends compute the whole ICRC from what a UDP socket knows.
 *
 * <p>An instance keeps a scratch pseudo header and a {@link CRC32}: it is not thread-safe; use one per
 * thread. No allocation per packet (the identification basis of a packet length is built on its first use and
 * kept, shared by every instance).
 */
public final class Icrc {
    /** Length of the ICRC trailer at the end of every RoCEv2 packet. */
    public static final int BYTES = 4;

    private static final int PSEUDO = 8 + 20 + 8 + Bth.BYTES;
    private static final int PSEUDO6 = 8 + 40 + 8 + Bth.BYTES;

    private final CRC32 crc = new CRC32();
    private final byte[] pseudo = new byte[PSEUDO];
    private final byte[] pseudo6 = new byte[PSEUDO6];

    /** A calculator with its scratch pseudo headers' constant bytes filled in (one per thread). */
    public Icrc() {
        for (int i = 0; i < 8; i++) pseudo[i] = (byte) 0xFF;
        pseudo[8] = 0x45; // version 4, IHL 5
        pseudo[9] = (byte) 0xFF; // TOS (masked)
        pseudo[8 + 6] = 0x40; // flags: DF; fragment offset 0; id (bytes 4-5) = 0
        pseudo[8 + 8] = (byte) 0xFF; // TTL (masked)
        pseudo[8 + 9] = 17; // protocol UDP
        pseudo[8 + 10] = (byte) 0xFF; // header checksum (masked)
        pseudo[8 + 11] = (byte) 0xFF;
        pseudo[28 + 6] = (byte) 0xFF; // UDP checksum (masked)
        pseudo[28 + 7] = (byte) 0xFF;
        for (int i = 0; i < 8; i++) pseudo6[i] = (byte) 0xFF;
        pseudo6[8] = 0x6F; // version 6, traffic class (masked)
        pseudo6[9] = (byte) 0xFF; // traffic class and flow label (masked)
        pseudo6[10] = (byte) 0xFF;
        pseudo6[11] = (byte) 0xFF;
        pseudo6[8 + 6] = 17; // next header UDP
        pseudo6[8 + 7] = (byte) 0xFF; // hop limit (masked)
        pseudo6[48 + 6] = (byte) 0xFF; // UDP checksum (masked)
        pseudo6[48 + 7] = (byte) 0xFF;
    }

    /**
     * Computes the ICRC value of a packet.
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcIp   IPv4 source address (big-endian int)
     * @param dstIp   IPv4 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @return the ICRC as an int (its value, before the byte order of the wire)
     */
    public int compute(ByteBuffer b, int off, int len, int srcIp, int dstIp, int srcPort, int dstPort) {
        return compute(b, off, len, srcIp, dstIp, srcPort, dstPort, 0);
    }

    /**
     * As {@link #compute(ByteBuffer, int, int, int, int, int, int)} with an explicit IPv4 identification
     * field (for packets captured from other implementations; jrdma itself always uses 0).
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcIp   IPv4 source address (big-endian int)
     * @param dstIp   IPv4 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @param ipId    the IPv4 header's identification field (16 bits)
     * @return the ICRC as an int (its value, before the byte order of the wire)
     */
    public int compute(ByteBuffer b, int off, int len, int srcIp, int dstIp, int srcPort, int dstPort, int ipId) {
        byte[] p = pseudo;
        p[8 + 4] = (byte) (ipId >>> 8);
        p[8 + 5] = (byte) ipId;
        int ipLen = 20 + 8 + len;
        p[8 + 2] = (byte) (ipLen >>> 8);
        p[8 + 3] = (byte) ipLen;
        putInt(p, 8 + 12, srcIp);
        putInt(p, 8 + 16, dstIp);
        p[28] = (byte) (srcPort >>> 8);
        p[29] = (byte) srcPort;
        p[30] = (byte) (dstPort >>> 8);
        p[31] = (byte) dstPort;
        int udpLen = 8 + len;
        p[32] = (byte) (udpLen >>> 8);
        p[33] = (byte) udpLen;
        return crcOf(p, 36, b, off, len);
    }

    /**
     * Computes the ICRC value of a packet sent over IPv6.
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcHi   bytes 0..7 of the IPv6 source address, big-endian
     * @param srcLo   bytes 8..15 of the source address
     * @param dstHi   bytes 0..7 of the destination address
     * @param dstLo   bytes 8..15 of the destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @return the ICRC as an int (its value, before the byte order of the wire)
     */
    public int computeIpv6(
            ByteBuffer b, int off, int len, long srcHi, long srcLo, long dstHi, long dstLo, int srcPort, int dstPort) {
        byte[] p = pseudo6;
        int udpLen = 8 + len;
        p[8 + 4] = (byte) (udpLen >>> 8); // payload length: the UDP datagram
        p[8 + 5] = (byte) udpLen;
        putLong(p, 8 + 8, srcHi);
        putLong(p, 8 + 16, srcLo);
        putLong(p, 8 + 24, dstHi);
        putLong(p, 8 + 32, dstLo);
        p[48] = (byte) (srcPort >>> 8);
        p[49] = (byte) srcPort;
        p[50] = (byte) (dstPort >>> 8);
        p[51] = (byte) dstPort;
        p[52] = (byte) (udpLen >>> 8);
        p[53] = (byte) udpLen;
        return crcOf(p, 56, b, off, len);
    }

    /**
     * Computes the IPv6 ICRC ({@link #computeIpv6}) and writes it into the last 4 bytes of the packet.
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcHi   bytes 0..7 of the IPv6 source address, big-endian
     * @param srcLo   bytes 8..15 of the source address
     * @param dstHi   bytes 0..7 of the destination address
     * @param dstLo   bytes 8..15 of the destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     */
    public void generateIpv6(
            ByteBuffer b, int off, int len, long srcHi, long srcLo, long dstHi, long dstLo, int srcPort, int dstPort) {
        putLe(b, off + len - BYTES, computeIpv6(b, off, len, srcHi, srcLo, dstHi, dstLo, srcPort, dstPort));
    }

    /**
     * Whether the ICRC of a packet received over IPv6 matches its contents.
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcHi   bytes 0..7 of the IPv6 source address, big-endian
     * @param srcLo   bytes 8..15 of the source address
     * @param dstHi   bytes 0..7 of the destination address
     * @param dstLo   bytes 8..15 of the destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @return true when the stored ICRC is right; false for a packet too short to hold a BTH and an ICRC
     */
    public boolean verifyIpv6(
            ByteBuffer b, int off, int len, long srcHi, long srcLo, long dstHi, long dstLo, int srcPort, int dstPort) {
        if (len < Bth.BYTES + BYTES) return false;
        return computeIpv6(b, off, len, srcHi, srcLo, dstHi, dstLo, srcPort, dstPort) == stored(b, off, len);
    }

    /** The CRC over the pseudo header {@code p} (whose BTH copy starts at {@code bthAt}), then the packet after its BTH. */
    private int crcOf(byte[] p, int bthAt, ByteBuffer b, int off, int len) {
        for (int i = 0; i < Bth.BYTES; i++) p[bthAt + i] = b.get(off + i);
        p[bthAt + 4] = (byte) 0xFF; // resv8a masked
        CRC32 c = crc;
        c.reset();
        c.update(p, 0, bthAt + Bth.BYTES);
        int start = off + Bth.BYTES;
        int n = len - Bth.BYTES - BYTES;
        if (n > 0) {
            if (b.hasArray()) {
                c.update(b.array(), b.arrayOffset() + start, n);
            } else {
                int pos = b.position(), lim = b.limit();
                b.limit(b.capacity());
                b.position(start);
                b.limit(start + n);
                c.update(b);
                b.limit(lim);
                b.position(pos);
            }
        }
        return (int) c.getValue();
    }

    /**
     * Computes the ICRC (identification 0) and writes it into the last 4 bytes of the packet.
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcIp   IPv4 source address (big-endian int)
     * @param dstIp   IPv4 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     */
    public void generate(ByteBuffer b, int off, int len, int srcIp, int dstIp, int srcPort, int dstPort) {
        int v = compute(b, off, len, srcIp, dstIp, srcPort, dstPort);
        putLe(b, off + len - BYTES, v);
    }

    /**
     * Whether the packet's ICRC matches its contents under identification 0 ({@link #recoverId} accepts any).
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcIp   IPv4 source address (big-endian int)
     * @param dstIp   IPv4 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @return true when the stored ICRC is right; false for a packet too short to hold a BTH and an ICRC
     */
    public boolean verify(ByteBuffer b, int off, int len, int srcIp, int dstIp, int srcPort, int dstPort) {
        if (len < Bth.BYTES + BYTES) return false;
        int v = compute(b, off, len, srcIp, dstIp, srcPort, dstPort);
        return v == stored(b, off, len);
    }

    /** {@link #recoverId}'s answer when no identification makes the ICRC right. */
    public static final int NO_ID = -1;

    /**
     * The IPv4 identification under which the packet's stored ICRC is right ({@link #verify} with the sender's
     * identification), 0 included; {@link #NO_ID} when there is none (a corrupt or forged packet).
     *
     * @param b       the buffer holding the UDP payload (BTH .. ICRC)
     * @param off     where the BTH starts
     * @param len     UDP payload length, including the 4 ICRC bytes
     * @param srcIp   IPv4 source address (big-endian int)
     * @param dstIp   IPv4 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @return the identification (0..65535), or {@link #NO_ID}
     */
    public int recoverId(ByteBuffer b, int off, int len, int srcIp, int dstIp, int srcPort, int dstPort) {
        if (len < Bth.BYTES + BYTES) return NO_ID;
        int diff = compute(b, off, len, srcIp, dstIp, srcPort, dstPort) ^ stored(b, off, len);
        if (diff == 0) return 0;
        IdBasis basis = IdBasis.of(len);
        int id = 0;
        for (int k = 0; k < 16; k++) {
            if ((diff & basis.pivot[k]) != 0) {
                diff ^= basis.vector[k];
                id ^= basis.ids[k];
            }
        }
        return diff == 0 ? id : NO_ID;
    }

    /**
     * How the ICRC of a packet of UDP payload length {@code len} changes when its IPv4 identification goes from 0 to
     * {@code ipId}: {@code compute(.., ipId) == compute(..) ^ idDelta(len, ipId)}.
     *
     * @param len  UDP payload length, including the 4 ICRC bytes
     * @param ipId the identification the packet is sent with (16 bits)
     * @return the value to XOR into the ICRC computed for identification 0
     */
    public static int idDelta(int len, int ipId) {
        int[] unit = IdBasis.of(len).unit;
        int d = 0;
        for (int i = 0; i < 16; i++) if ((ipId >>> i & 1) != 0) d ^= unit[i];
        return d;
    }

    /**
     * The 16 ICRC differences that the identification bits cause at one packet length, and the same span in reduced
     * echelon form (each vector owns a pivot bit no other vector has), so that reducing a difference is one pass.
     */
    private static final class IdBasis {
        private static final IdBasis[] BY_LEN = new IdBasis[1 << 16];

        final int[] unit = new int[16];
        final int[] vector = new int[16], pivot = new int[16], ids = new int[16];

        static IdBasis of(int len) {
            IdBasis b = BY_LEN[len & 0xFFFF];
            if (b == null) {
                b = new IdBasis(len); // racing threads build equal values; whichever is stored last stays
                BY_LEN[len & 0xFFFF] = b;
            }
            return b;
        }

        private IdBasis(int len) {
            // the CRC's input is 8 + 20 + 8 + len - 4 bytes; the identification is its bytes 12 and 13 (big-endian)
            byte[] zeros = new byte[PSEUDO - Bth.BYTES + len - BYTES];
            CRC32 c = new CRC32();
            c.update(zeros);
            int base = (int) c.getValue();
            for (int i = 0; i < 16; i++) {
                int at = i < 8 ? 8 + 5 : 8 + 4;
                zeros[at] = (byte) (1 << (i & 7));
                c.reset();
                c.update(zeros);
                zeros[at] = 0;
                unit[i] = (int) c.getValue() ^ base;
            }
            // reduced echelon form over GF(2) (CRC-32 detects every error within 32 bits, so the 16 are independent)
            int rows = 0;
            int[] v = unit.clone(), id = new int[16];
            for (int i = 0; i < 16; i++) id[i] = 1 << i;
            for (int bit = 31; bit >= 0 && rows < 16; bit--) {
                int m = 1 << bit, r = -1;
                for (int k = rows; k < 16; k++)
                    if ((v[k] & m) != 0) {
                        r = k;
                        break;
                    }
                if (r < 0) continue;
                int tv = v[r], ti = id[r];
                v[r] = v[rows];
                id[r] = id[rows];
                v[rows] = tv;
                id[rows] = ti;
                for (int k = 0; k < 16; k++) {
                    if (k != rows && (v[k] & m) != 0) {
                        v[k] ^= tv;
                        id[k] ^= ti;
                    }
                }
                pivot[rows] = m;
                rows++;
            }
            if (rows != 16)
                throw new IllegalStateException("identification basis of rank " + rows + " at length " + len);
            System.arraycopy(v, 0, vector, 0, 16);
            System.arraycopy(id, 0, ids, 0, 16);
        }
    }

    /**
     * The ICRC value stored in the last 4 bytes of a packet.
     *
     * @param b   the buffer holding the UDP payload (BTH .. ICRC)
     * @param off where the BTH starts
     * @param len UDP payload length, including the 4 ICRC bytes
     * @return the stored ICRC (read least significant byte first, as it is written)
     */
    public static int stored(ByteBuffer b, int off, int len) {
        return getLe(b, off + len - BYTES);
    }

    private static void putInt(byte[] p, int i, int v) {
        p[i] = (byte) (v >>> 24);
        p[i + 1] = (byte) (v >>> 16);
        p[i + 2] = (byte) (v >>> 8);
        p[i + 3] = (byte) v;
    }

    private static void putLong(byte[] p, int i, long v) {
        putInt(p, i, (int) (v >>> 32));
        putInt(p, i + 4, (int) v);
    }

    private static void putLe(ByteBuffer b, int i, int v) {
        b.put(i, (byte) v);
        b.put(i + 1, (byte) (v >>> 8));
        b.put(i + 2, (byte) (v >>> 16));
        b.put(i + 3, (byte) (v >>> 24));
    }

    private static int getLe(ByteBuffer b, int i) {
        return (b.get(i) & 0xFF)
                | (b.get(i + 1) & 0xFF) << 8
                | (b.get(i + 2) & 0xFF) << 16
                | (b.get(i + 3) & 0xFF) << 24;
    }
}
