package dev.jrdma.soft;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reads the control messages a {@code recvmmsg} hands back with each datagram ({@code struct cmsghdr} on LP64 Linux:
 * length 8 bytes, level 4, type 4, then the data, padded to 8): the ECN field ({@code IP_TOS}, {@code IPV6_TCLASS})
 * and the segment size of a coalesced datagram ({@code UDP_GRO}, {@link GroBatch}). The lengths are the kernel's, but
 * every one is checked against the area before it is followed.
 */
final class ControlMessages {
    private ControlMessages() {}

    private static final int IPPROTO_IP = 0, IP_TOS = 1, IPPROTO_IPV6 = 41, IPV6_TCLASS = 67;

    /**
     * The ECN field in the IP_TOS (a byte) or IPV6_TCLASS (an int) control message among the {@code controlLen} bytes of
     * control messages at {@code at}; Not-ECT without one.
     */
    static int ecn(MemorySegment controls, long at, long controlLen) {
        long data = find(controls, at, controlLen, IPPROTO_IP, IP_TOS, 1);
        if (data >= 0) return controls.get(ValueLayout.JAVA_BYTE, data) & Ecn.MASK;
        data = find(controls, at, controlLen, IPPROTO_IPV6, IPV6_TCLASS, 4);
        return data >= 0 ? controls.get(ValueLayout.JAVA_INT, data) & Ecn.MASK : Ecn.NOT_ECT;
    }

    /**
     * Where the data of the control message of {@code level} and {@code type} (at least {@code size} bytes) lies among
     * the {@code controlLen} bytes of control messages at {@code at}; -1 when there is none, or the messages are
     * malformed.
     */
    static long find(MemorySegment controls, long at, long controlLen, int level, int type, int size) {
        for (long off = 0; off + 16 <= controlLen; ) {
            long len = controls.get(ValueLayout.JAVA_LONG, at + off);
            if (len < 16 || off + len > controlLen) return -1;
            if (controls.get(ValueLayout.JAVA_INT, at + off + 8) == level
                    && controls.get(ValueLayout.JAVA_INT, at + off + 12) == type
                    && len >= 16 + size) return at + off + 16;
            off += (len + 7) & ~7L;
        }
        return -1;
    }
}
