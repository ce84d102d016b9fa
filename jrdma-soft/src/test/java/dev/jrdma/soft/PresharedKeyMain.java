package dev.jrdma.soft;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WrOpcode;

/**
 * A child JVM of {@link AuthenticatedModeTest}, started with {@code -Djrdma.soft.packetAuthKey}: two devices connected
 * without a key in any modify, a SEND and a READ; prints the two devices' counters that say whether the QPs ran in the
 * authenticated mode, then "OK".
 */
public final class PresharedKeyMain {
    private PresharedKeyMain() {}

    public static void main(String[] args) {
        try (RcPair p = ShmLinkTest.pairOn("127.0.0.63", "127.0.0.64", "off", "off")) {
            MemoryRegion a = p.a.mrAll(8192), b = p.b.mrAll(8192);
            RcPair.fill(a.segment(), 2000, 3);
            p.b.qp.postRecv(new RecvWorkRequest().wrId(1).buffer(b, 0, 4096));
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(a, 0, 2000));
            check(SoftDevices.poll(p.a.cq).status);
            check(SoftDevices.poll(p.b.cq).status);
            p.a.qp.postSend(new SendWorkRequest()
                    .wrId(3)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(a, 4096, 2000)
                    .remote(b.address(), b.rkey()));
            check(SoftDevices.poll(p.a.cq).status);
            RcPair.assertFilled(a.segment(), 4096, 2000, 3);
            System.out.println("qps_packet_auth="
                    + (p.a.ctx.counters().get("qps_packet_auth")
                            + p.b.ctx.counters().get("qps_packet_auth")) + " rx_bad_mac="
                    + (p.a.ctx.counters().get("rx_bad_mac") + p.b.ctx.counters().get("rx_bad_mac")) + " OK");
        }
    }

    private static void check(WcStatus s) {
        if (s != WcStatus.SUCCESS) throw new AssertionError(s);
    }
}
