package dev.jrdma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.spi.VerbsProvider;
import org.junit.jupiter.api.Test;

/** Runs everywhere: the provider loads, never throws, and either lists devices or says why it lists none. */
class ProviderTest {
    @Test
    void registeredAndNeverThrows() {
        VerbsProvider p = Verbs.provider("native")
                .orElseThrow(() -> new AssertionError("native provider not found by ServiceLoader"));
        assertEquals(100, p.priority());
        var devices = p.devices();
        if (devices.isEmpty()) {
            String why = p.unavailableReason().orElseThrow(() -> new AssertionError("no devices and no reason"));
            System.out.println("native provider lists nothing here: " + why);
            assertTrue(
                    why.contains("libibverbs1") || why.contains("rdma link add") || why.contains("ibverbs-providers"),
                    why);
        } else {
            assertFalse(p.unavailableReason().isPresent());
            devices.forEach(d -> {
                assertEquals("native", d.provider());
                assertFalse(d.name().isEmpty());
                System.out.println("native device: " + d.name() + " " + d.nodeGuidString() + " " + d.nodeType() + " "
                        + d.transportType());
            });
        }
    }

    @Test
    void layoutsAreConsistent() {
        assertEquals(128, Layouts.SEND_WR.byteSize());
        assertEquals(36, Layouts.offset(Layouts.SEND_WR, "imm_data"));
        assertEquals(36, Layouts.offset(Layouts.SEND_WR, "invalidate_rkey"));
        assertEquals(64, Layouts.offset(Layouts.SEND_WR, "wr.atomic.rkey"));
        assertEquals(96, Layouts.offset(Layouts.SEND_WR, "bind_mw.bind_info.mr"));
        assertEquals(208, 8 + Layouts.offset(Layouts.CONTEXT_OPS, "post_send"));
        assertEquals(208, Layouts.offset(Layouts.CONTEXT, "ops.post_send"));
        assertEquals(96, Layouts.offset(Layouts.CONTEXT, "ops.poll_cq"));
        assertEquals(129, Layouts.offset(Layouts.QP_ATTR, "port_num"));
        assertEquals(56 + 20, Layouts.offset(Layouts.QP_ATTR, "ah_attr.grh.sgid_index"));
    }
}
