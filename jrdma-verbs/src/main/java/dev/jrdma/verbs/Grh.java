package dev.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 40 bytes a UD receive gets in front of the payload ({@code struct ibv_grh}). On RoCEv2 over IPv4 the first
 * 20 bytes are undefined and the last 20 hold the packet's IPv4 header (as rxe and mlx5 write it); otherwise it is
 * an IPv6-style GRH. {@link #sourceGid} reads the sender's GID either way.
 */
public final class Grh {
    /** The size of the GRH area in front of a UD receive's payload: 40 bytes. */
    public static final int BYTES = 40;

    private Grh() {}

    /**
     * Whether the 40 bytes at {@code offset} carry an IPv4 header (RoCEv2 over IPv4) rather than a GRH.
     *
     * @param grh    the receive buffer
     * @param offset where the 40 bytes start in it
     * @return true for an IPv4 header in bytes 20..39
     */
    public static boolean isIpv4(MemorySegment grh, long offset) {
        // an IPv6 GRH starts with IP version 6; the IPv4 header's version nibble sits at byte 20
        return (grh.get(ValueLayout.JAVA_BYTE, offset) & 0xF0) != 0x60
                && (grh.get(ValueLayout.JAVA_BYTE, offset + 20) & 0xF0) == 0x40;
    }

    /**
     * The sender's GID: its IPv4-mapped address for RoCEv2 over IPv4, else the GRH's SGID.
     *
     * @param grh    the receive buffer
     * @param offset where the 40 bytes start in it
     * @return the sender's GID
     */
    public static Gid sourceGid(MemorySegment grh, long offset) {
        byte[] b = new byte[16];
        if (isIpv4(grh, offset)) {
            b[10] = (byte) 0xFF;
            b[11] = (byte) 0xFF;
            MemorySegment.copy(grh, ValueLayout.JAVA_BYTE, offset + 20 + 12, b, 12, 4);
        } else {
            MemorySegment.copy(grh, ValueLayout.JAVA_BYTE, offset + 8, b, 0, 16);
        }
        return Gid.of(b);
    }
}
