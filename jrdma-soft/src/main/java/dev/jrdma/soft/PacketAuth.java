package dev.jrdma.soft;

import dev.jrdma.soft.wire.Bth;
import dev.jrdma.soft.wire.Icrc;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * jrdma's authenticated mode on one RC QP ({@code QpAttr.packetAuthKey}; after sRDMA, Taranov et al., USENIX ATC
 * 2020): every packet carries a 64-bit SipHash-2-4 tag under the connection's 128-bit key, between its payload (pad
 * included) and its ICRC, so the UDP length covers it and the ICRC covers it too:
 * <pre>  BTH | extension headers | payload | pad | tag (8 bytes) | ICRC</pre>
 * Nothing in the packet says a tag is there (the BTH has no spare bit both ends could trust): both ends know it
 * because they agreed the key (jrdma-connect's handshake). The tag covers the whole packet before it (opcode, QPN,
 * PSN, extension headers, payload), prefixed by the sender's QPN and address, so a packet cannot be reflected to its
 * sender nor moved to another QP or connection; a replay is an old PSN, a duplicate to the transport. Stateless
 * after construction: any thread signs or verifies with it at once, allocating nothing.
 */
final class PacketAuth {
    /** The tag's length on the wire. */
    static final int TAG_BYTES = 8;

    /** The tag's byte order on the wire, whatever the order of the buffer it is in. */
    private static final VarHandle BE_LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private final long k0, k1;

    /**
     * {@code -Djrdma.soft.packetAuthKey=<32 hex digits>}: a key every RC QP of this process takes in INIT->RTR when its
     * modify brings none, so that programs that never negotiate (e.g. {@code jrdma perf} between two jrdma processes)
     * run in the authenticated mode; both ends must be given the same key. Null when unset.
     */
    static final byte[] PRESHARED = preshared(System.getProperty("jrdma.soft.packetAuthKey"));

    private static byte[] preshared(String hex) {
        if (hex == null || hex.isEmpty()) return null;
        byte[] key = java.util.HexFormat.of().parseHex(hex);
        if (key.length != 16)
            throw new IllegalArgumentException(
                    "-Djrdma.soft.packetAuthKey takes 16 bytes (32 hex digits), not " + key.length);
        return key;
    }

    PacketAuth(byte[] key16) {
        ByteBuffer k = ByteBuffer.wrap(key16).order(ByteOrder.LITTLE_ENDIAN);
        this.k0 = k.getLong(0);
        this.k1 = k.getLong(8);
    }

    /**
     * Adds the tag to the packet of {@code len} bytes at the start of {@code b} (its last 4 the ICRC's place, not yet
     * written), sent by QP {@code srcQpn} of the device at {@code src}; the buffer must hold {@link #TAG_BYTES} more.
     *
     * @return the packet's new length
     */
    int sign(ByteBuffer b, int len, int srcQpn, IpAddress src) {
        int body = len - Icrc.BYTES;
        BE_LONG.set(b, body, tag(b, body, srcQpn, src));
        return len + TAG_BYTES;
    }

    /**
     * Whether the packet of {@code len} bytes (tag and ICRC included) at the start of {@code b} carries the right tag
     * for a packet of QP {@code srcQpn} at {@code src}.
     */
    boolean verify(ByteBuffer b, int len, int srcQpn, IpAddress src) {
        int body = len - TAG_BYTES - Icrc.BYTES;
        if (body < Bth.BYTES) return false;
        return (long) BE_LONG.get(b, body)
                == tag(b, body, srcQpn, src); // 64 bits compared at once: no byte-wise early exit to time
    }

    private long tag(ByteBuffer b, int body, int srcQpn, IpAddress src) {
        return SipHash.hash(k0, k1, srcQpn & 0xFFFFFFL, src.hi, src.lo, b, 0, body);
    }
}
