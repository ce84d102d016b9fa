package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static dev.jrdma.testkit.RcPair.fill;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The software device's inline lookup: INLINE data needs no lkey (ibverbs ignores it), so the device finds the PD's
 * region by address, and refuses memory outside every one at post time. Every opcode end to end is the conformance
 * suite's ({@code dev.jrdma.conformance.DataPathTest}), run on this device there.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class InlineRegionLookupTest {
    /** INLINE data needs no lkey (ibverbs ignores it): the device finds the PD's region by address, and refuses memory outside every one. */
    @Test
    void inlineDataWithoutAnLkeyIsFoundByItsAddress() {
        try (RcPair p = pair(o -> o.qpA(q -> q.maxInlineData(64)))) {
            MemoryRegion other = p.a.mrAll(4096), src = p.a.mrAll(64), dst = p.b.mrAll(64);
            fill(src.segment(), 64, 6);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(dst, 0, 64));
            SendWorkRequest s = new SendWorkRequest()
                    .wrId(7)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .flag(SendFlag.INLINE, true)
                    .buffer(src, 8, 40);
            s.sge(0).lkey = 0;
            p.a.qp.postSend(s);
            assertEquals(WcStatus.SUCCESS, poll(p.a.cq).status);
            assertEquals(40, poll(p.b.cq).byteLen);
            for (int i = 0; i < 40; i++)
                assertEquals(
                        src.segment().get(ValueLayout.JAVA_BYTE, 8 + i),
                        dst.segment().get(ValueLayout.JAVA_BYTE, i));
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                java.lang.foreign.MemorySegment unregistered = arena.allocate(64);
                SendWorkRequest outside = new SendWorkRequest()
                        .wrId(8)
                        .opcode(WrOpcode.SEND)
                        .signaled(true)
                        .flag(SendFlag.INLINE, true);
                outside.sge(0).set(unregistered.address(), 40, other.lkey());
                assertThrows(
                        dev.jrdma.verbs.PostException.class,
                        () -> p.a.qp.postSend(outside),
                        "memory in no region of the PD");
            }
        }
    }
}
