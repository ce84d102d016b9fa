package dev.jrdma.soft;

import static dev.jrdma.soft.EngineRig.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.soft.wire.Opcode;
import dev.jrdma.soft.wire.RocePacket;
import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The requester: segmentation, the window, READ/atomic limits, fences and retransmission on a clock the test owns. */
class RequesterTest {

    @Test
    void retransmitsOnTimeoutOnlyWhenTheTimeoutHasPassed() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.timeout = 14; // 67.1 ms
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion src = rig.mrBindable(4096);
            RcPair.fill(src.segment(), 2000, 7);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(src, 0, 2000));
            List<RocePacket> first = rig.drain();
            assertEquals(2, first.size());
            assertEquals(Opcode.SEND_FIRST.code(), first.get(0).opcode());
            assertEquals(Opcode.SEND_LAST.code(), first.get(1).opcode());
            assertTrue(first.get(1).ackReq(), "the last packet asks for an ACK");
            rig.clock.advanceMillis(60);
            rig.tick();
            assertTrue(rig.drain().isEmpty(), "not yet");
            rig.feed(ack(MY_PSN)); // the first packet arrived: the timer restarts from now
            rig.clock.advanceMillis(60);
            rig.tick();
            assertTrue(rig.drain().isEmpty(), "the ACK restarted the timer");
            rig.clock.advanceMillis(8);
            rig.tick();
            RocePacket again = rig.one();
            assertEquals(MY_PSN + 1, again.psn(), "go-back-N from the oldest unacknowledged PSN");
            assertEquals(Opcode.SEND_LAST.code(), again.opcode());
            RcPair.assertFilled(
                    java.lang.foreign.MemorySegment.ofBuffer(again.buffer()),
                    again.payloadOffset(),
                    2000 - 1024,
                    7 + 31 * 1024);
            rig.feed(ack(MY_PSN + 1));
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
            assertEquals(1, rig.count(Counter.RETRANSMITS));
        }
    }

    @Test
    void windowLimitsPacketsInFlight() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.mtu = Mtu.MTU_4096; // window = 256 KiB / 4 KiB = 64 packets
        try (EngineRig rig = new EngineRig(o)) {
            int size = 100 * 4096;
            MemoryRegion src = rig.mrBindable(size);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_WRITE)
                    .signaled(true)
                    .buffer(src, 0, size)
                    .remote(0x1000, 0x55));
            assertEquals(64, rig.drain().size());
            assertEquals(Requester.State.WAIT_WINDOW, rig.qp.requester.stoppedAt);
            rig.feed(ack(MY_PSN + 9)); // ten acknowledged: ten more may go
            List<RocePacket> more = rig.drain();
            assertEquals(10, more.size());
            assertEquals(MY_PSN + 64, more.getFirst().psn());
            rig.feed(ack(MY_PSN + 73));
            assertEquals(26, rig.drain().size());
            assertEquals(Requester.State.QUEUE_EMPTY, rig.qp.requester.stoppedAt);
            rig.feed(ack(MY_PSN + 99));
            assertEquals(WcStatus.SUCCESS, rig.poll().status);
        }
    }

    @Test
    void readsAreLimitedByMaxRdAtomicAndFenceWaitsForThem() {
        EngineRig.Opts o = new EngineRig.Opts();
        o.maxRdAtomic = 1;
        try (EngineRig rig = new EngineRig(o)) {
            MemoryRegion local = rig.mrBindable(4096);
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 0, 8)
                    .remote(0x3000, 0x99));
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(local, 8, 8)
                    .remote(0x3000, 0x99));
            assertEquals(Opcode.RDMA_READ_REQUEST.code(), rig.one().opcode());
            assertEquals(Requester.State.WAIT_RD_ATOMIC, rig.qp.requester.stoppedAt);
            rig.feed(new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), MY_PSN, false, 8)
                    .aeth(0x1F, 1)
                    .payload(8, 1));
            assertEquals(1, rig.poll().wrId);
            RocePacket second = rig.one();
            assertEquals(MY_PSN + 1, second.psn());
            rig.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .flag(SendFlag.FENCE, true)
                    .buffer(local, 0, 8));
            assertTrue(rig.drain().isEmpty(), "the fenced SEND waits for the READ");
            assertEquals(Requester.State.WAIT_FENCE, rig.qp.requester.stoppedAt);
            rig.feed(new EngineRig.Pkt(Opcode.RDMA_READ_RESPONSE_ONLY.code(), MY_PSN + 1, false, 8)
                    .aeth(0x1F, 2)
                    .payload(8, 2));
            assertEquals(2, rig.poll().wrId);
            assertEquals(Opcode.SEND_ONLY.code(), rig.one().opcode());
        }
    }
}
