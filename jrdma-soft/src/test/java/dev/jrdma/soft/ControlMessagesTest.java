package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The one pass over a datagram's control messages ({@link ControlMessages#scan}): the segment size of a coalesced
 * datagram and the ECN field, in either order, IPv4 or IPv6; nothing read past a malformed length or the end of what
 * the kernel said it wrote (the lengths are the kernel's, but a bug or a cut area must not make this read foreign bytes).
 */
class ControlMessagesTest {
    private static final int IP = 0, IP_TOS = 1, IPV6 = 41, IPV6_TCLASS = 67;

    private final MemorySegment area = Arena.ofAuto().allocate(128, 8);

    /** Writes a control message (header and data) at {@code off}; returns where the next one goes (padded to 8). */
    private long put(long off, long len, int level, int type, int value, int dataBytes) {
        area.set(ValueLayout.JAVA_LONG, off, len);
        area.set(ValueLayout.JAVA_INT, off + 8, level);
        area.set(ValueLayout.JAVA_INT, off + 12, type);
        if (dataBytes == 1) area.set(ValueLayout.JAVA_BYTE, off + 16, (byte) value);
        else area.set(ValueLayout.JAVA_INT, off + 16, value);
        return off + ((len + 7) & ~7L);
    }

    private static int segment(long found) {
        return ControlMessages.segment(found);
    }

    private static int ecn(long found) {
        return ControlMessages.ecn(found);
    }

    @Test
    void aSingleDatagramCarriesItsTosOnly() {
        long end = put(0, 17, IP, IP_TOS, 0x2a << 2 | Ecn.CE, 1); // DSCP bits above the ECN field
        long found = ControlMessages.scan(area, 0, end);
        assertEquals(0, segment(found), "no UDP_GRO: one datagram");
        assertEquals(Ecn.CE, ecn(found));
    }

    @Test
    void aCoalescedDatagramCarriesItsSegmentSizeBeforeOrAfterItsTos() {
        long end = put(0, 20, GroBatch.SOL_UDP, GroBatch.UDP_GRO, 1100, 4);
        end = put(end, 17, IP, IP_TOS, Ecn.ECT_0, 1);
        long found = ControlMessages.scan(area, 0, end);
        assertEquals(1100, segment(found));
        assertEquals(Ecn.ECT_0, ecn(found));

        end = put(0, 17, IP, IP_TOS, Ecn.ECT_1, 1);
        end = put(end, 20, GroBatch.SOL_UDP, GroBatch.UDP_GRO, 64, 4);
        found = ControlMessages.scan(area, 0, end);
        assertEquals(64, segment(found));
        assertEquals(Ecn.ECT_1, ecn(found));
    }

    @Test
    void ipv6GivesItsTrafficClass() {
        long end = put(0, 20, IPV6, IPV6_TCLASS, 0xb8 | Ecn.CE, 4);
        assertEquals(Ecn.CE, ecn(ControlMessages.scan(area, 0, end)));
    }

    @Test
    void nothingIsReadPastAMalformedLengthOrTheEnd() {
        assertEquals(Ecn.NOT_ECT, ecn(ControlMessages.scan(area, 0, 0)), "no control messages");
        long end = put(0, 17, IP, IP_TOS, Ecn.CE, 1);
        assertEquals(Ecn.NOT_ECT, ecn(ControlMessages.scan(area, 0, 12)), "a header cut short");
        assertEquals(Ecn.NOT_ECT, ecn(ControlMessages.scan(area, 0, 16)), "a length beyond what was written");

        put(0, 8, IP, IP_TOS, Ecn.CE, 1); // shorter than a header: the walk stops
        assertEquals(Ecn.NOT_ECT, ecn(ControlMessages.scan(area, 0, 64)));

        put(0, 16, IP, IP_TOS, Ecn.CE, 1); // a TOS message without its byte: not taken
        assertEquals(Ecn.NOT_ECT, ecn(ControlMessages.scan(area, 0, 16)));

        end = put(0, 17, IP, IP_TOS, Ecn.CE, 1);
        put(end, 1 << 20, GroBatch.SOL_UDP, GroBatch.UDP_GRO, 1100, 4); // claims more than the area holds
        long found = ControlMessages.scan(area, 0, 64);
        assertEquals(Ecn.CE, ecn(found), "what came before the malformed one stands");
        assertEquals(0, segment(found), "the malformed one is not read");

        put(0, 20, GroBatch.SOL_UDP, GroBatch.UDP_GRO, -5, 4); // a negative size is no segment size
        assertEquals(0, segment(ControlMessages.scan(area, 0, 24)));
    }

    @Test
    void controlMessagesAtAnOffsetAreReadThere() {
        area.fill((byte) 0x7f); // whatever lies before them is not read
        long end = put(64, 20, GroBatch.SOL_UDP, GroBatch.UDP_GRO, 900, 4);
        end = put(end, 17, IP, IP_TOS, Ecn.ECT_0, 1);
        long found = ControlMessages.scan(area, 64, end - 64);
        assertEquals(900, segment(found));
        assertEquals(Ecn.ECT_0, ecn(found));
    }
}
