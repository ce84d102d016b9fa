package dev.jrdma.soft;

import static dev.jrdma.soft.SoftDevices.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Errors only the software device can be made to meet, so the conformance suite cannot provoke them: memory whose
 * arena was closed under a registration, and every packet dropped by the transport's test hook. Every other error
 * case is the conformance suite's ({@code dev.jrdma.conformance.ErrorsTest}), run on this device there.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SoftOnlyErrorsTest {
    @Test
    void closedArenaGivesAnErrorCompletionNotACrash() {
        try (RcPair p = pair()) {
            MemoryRegion src;
            try (Arena arena = Arena.ofShared()) { // closed while the region is still registered
                src = p.a.pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE);
            }
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 64));
            assertEquals(WcStatus.LOC_PROT_ERR, poll(p.a.cq).status);
        }
        try (RcPair p = pair()) { // the target's arena goes away
            MemoryRegion dst;
            try (Arena arena = Arena.ofShared()) {
                dst = p.b.pd.registerMemory(arena.allocate(64), Access.LOCAL_WRITE, Access.REMOTE_WRITE);
            }
            MemoryRegion src = p.a.mrAll(64);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey()));
            WorkCompletion c = poll(p.a.cq);
            assertNotEquals(WcStatus.SUCCESS, c.status);
        }
    }

    @Test
    void retryExhaustedWhenEveryPacketIsLost() {
        try (RcPair p = pair(o -> {
            o.timeout(11); // 8.4 ms
            o.retryCnt(1);
        })) {
            Transport ta = ((SoftContext) p.a.ctx).transport;
            MemoryRegion src = p.a.mrAll(64), dst = p.b.mrAll(64);
            ta.testDropOneIn = 1;
            try {
                p.a.qp.postSend(new SendWorkRequest()
                        .wrId(1)
                        .opcode(WrOpcode.RDMA_WRITE)
                        .signaled(true)
                        .buffer(src, 0, 8)
                        .remote(dst.address(), dst.rkey()));
                assertEquals(WcStatus.RETRY_EXC_ERR, poll(p.a.cq, 5000).status);
            } finally {
                ta.testDropOneIn = 0;
            }
        }
    }
}
