package dev.jrdma.soft;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reads the control messages a {@code recvmmsg} hands back with each datagram ({@code struct cmsghdr} on LP64 Linux:
 * length 8 bytes, level 4, type 4, then the data, padded to 8): the ECN field ({@code IP_TOS}, {@code IPV6_TCLASS})
 * and the segment size of a coalesced datagram ({@code UDP_GRO}, {@link GroBatch}), in one pass over them (every
 * received datagram carries its TOS, so this runs per datagram on the latency path). The lengths are the kernel's,
 * but every one is checked against the area before it is followed: what lies after a malformed one is not read.
 */
final class ControlMessages {
    private ControlMessages() {}

    private static final int IPPROTO_IP = 0, IP_TOS = 1, IPPROTO_IPV6 = 41, IPV6_TCLASS = 67;
    /** sizeof(struct cmsghdr) on LP64: where a control message's data starts. */
    private static final int HEADER = 16;

    /**
     * The segment size ({@code UDP_GRO}; 0 when there is none: one datagram) and the ECN field ({@code IP_TOS}, else
     * {@code IPV6_TCLASS}; Not-ECT when there is neither) among the {@code controlLen} bytes of control messages at
     * {@code at}, as {@code segment << 8 | ecn} (read them with {@link #segment} and {@link #ecn(long)}).
     */
    static long scan(MemorySegment controls, long at, long controlLen) {
        int segment = 0, tos = -1, tclass = -1;
        for (long off = 0; off + HEADER <= controlLen; ) {
            long len = controls.get(ValueLayout.JAVA_LONG, at + off);
            if (len < HEADER || off + len > controlLen) break; // malformed: nothing after it is trusted
            int level = controls.get(ValueLayout.JAVA_INT, at + off + 8);
            int type = controls.get(ValueLayout.JAVA_INT, at + off + 12);
            long data = at + off + HEADER;
            if (level == IPPROTO_IP && type == IP_TOS && len >= HEADER + 1) {
                tos = controls.get(ValueLayout.JAVA_BYTE, data) & Ecn.MASK;
            } else if (level == IPPROTO_IPV6 && type == IPV6_TCLASS && len >= HEADER + 4) {
                tclass = controls.get(ValueLayout.JAVA_INT, data) & Ecn.MASK;
            } else if (level == GroBatch.SOL_UDP && type == GroBatch.UDP_GRO && len >= HEADER + 4) {
                segment = Math.max(0, controls.get(ValueLayout.JAVA_INT, data));
            }
            off += (len + 7) & ~7L;
        }
        int ecn = tos >= 0 ? tos : tclass >= 0 ? tclass : Ecn.NOT_ECT;
        return (long) segment << 8 | ecn;
    }

    /** The segment size in what {@link #scan} found (0: one datagram). */
    static int segment(long scanned) {
        return (int) (scanned >>> 8);
    }

    /** The ECN field in what {@link #scan} found. */
    static int ecn(long scanned) {
        return (int) scanned & 0xFF;
    }
}
