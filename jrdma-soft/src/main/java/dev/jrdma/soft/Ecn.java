package dev.jrdma.soft;

/**
 * The ECN field of the IP header (RFC 3168: the low two bits of the IPv4 TOS and the IPv6 traffic class). RoCEv2 NICs
 * send ECT(0); a congested switch marks CE; the receiver of a CE-marked packet is DCQCN's notification point.
 */
final class Ecn {
    private Ecn() {}

    /** Not ECN-capable transport. */
    static final int NOT_ECT = 0b00;
    /** ECN-capable transport, codepoint 1 (RFC 3168; RFC 9331 gives it to L4S). */
    static final int ECT_1 = 0b01;
    /** ECN-capable transport, codepoint 0: what the device sends. */
    static final int ECT_0 = 0b10;
    /** Congestion experienced: a switch marked the packet. */
    static final int CE = 0b11;
    /** The bits of the ECN field in the TOS byte / traffic class. */
    static final int MASK = 0b11;
    /** {@code -Djrdma.soft.ecn=off}: packets leave Not-ECT (switches then drop instead of marking). On by default. */
    static final boolean SEND_ECT = !"off".equals(System.getProperty("jrdma.soft.ecn"));

    /**
     * {@return the TOS byte / traffic class a packet leaves with: the address vector's DSCP and ECT(0)}
     *
     * @param trafficClass the address vector's traffic class (its ECN bits are the device's to set)
     */
    static int outgoing(int trafficClass) {
        return SEND_ECT ? (trafficClass & ~MASK) | ECT_0 : trafficClass & ~MASK;
    }
}
