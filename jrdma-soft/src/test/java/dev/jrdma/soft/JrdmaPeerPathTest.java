package dev.jrdma.soft;

import static dev.jrdma.soft.DeterministicNetwork.soft;
import static org.junit.jupiter.api.Assertions.*;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.MemoryRegion;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Issue 23 §1: a QP's batches take the UDP socket with segmentation only to a peer known to be a jrdma device (agreed
 * in band with the selective-repeat mode); rxe and NICs, which never mark, keep the raw path's packets, whose ICRC
 * covers the identification they carry.
 */
class JrdmaPeerPathTest {
    @Test
    void onlyAPeerThatAgreedToTheModeIsAJrdmaPeer() {
        DeterministicNetwork net = DeterministicNetwork.faultless();
        try (RcPair pair = net.pair()) {
            SoftQp qa = soft(pair.a.qp), qb = soft(pair.b.qp);
            assertFalse(qa.out.toJrdmaPeer() || qb.out.toJrdmaPeer(), "nothing known before a request");
            MemoryRegion src = pair.a.mrAll(4096), dst = pair.b.mrAll(4096);
            SelectiveRepeatTest.offerTheMode(net, pair, src, dst);
            assertTrue(qa.out.toJrdmaPeer(), "A: its peer marked an ACK");
            assertTrue(qb.out.toJrdmaPeer(), "B: its requester's offer was executed in sequence");
        }
        DeterministicNetwork other = DeterministicNetwork.faultless();
        try (RcPair pair = other.pair()) {
            SoftQp qa = soft(pair.a.qp), qb = soft(pair.b.qp);
            qb.selectiveRepeat = false; // B plays rxe: it never marks
            MemoryRegion src = pair.a.mrAll(4096), dst = pair.b.mrAll(4096);
            pair.a.qp.postSend(new dev.jrdma.verbs.SendWorkRequest()
                    .opcode(dev.jrdma.verbs.WrOpcode.RDMA_WRITE)
                    .buffer(src, 0, 64)
                    .remote(dst.address(), dst.rkey())
                    .signaled(true));
            other.deliver();
            assertNotNull(pair.awaitOk(pair.a.cq));
            assertFalse(qa.out.toJrdmaPeer(), "A: its peer never marked");
            assertFalse(qb.out.toJrdmaPeer(), "B: not in the mode");
        }
    }

    /** The raw link sends a jrdma peer's batch through its UDP socket (the receive side), anything else itself. */
    @Test
    void theRawLinkHandsAJrdmaPeersBatchToItsUdpSocket() throws Exception {
        FaultyLinkTest.Recording udp = new FaultyLinkTest.Recording();
        RawIpv4Link raw = RawIpv4Link.open((Inet4Address) InetAddress.getByName("127.0.0.1"), 47917, udp);
        Assumptions.assumeTrue(raw != null, "no raw socket here (needs CAP_NET_RAW)");
        try (raw) {
            InetSocketAddress to = new InetSocketAddress("127.0.0.1", 47919); // nobody listens: the raw copies are lost
            TxBatch batch = new TxBatch();
            for (int i = 0; i < 3; i++) {
                batch.slot(i).clear();
                batch.lengths[i] = 64;
            }
            batch.jrdmaPeer = true;
            assertEquals(3, raw.send(batch, 0, 3, to));
            assertEquals(3, udp.datagrams, "through the UDP socket");
            batch.jrdmaPeer = false;
            assertEquals(3, raw.send(batch, 0, 3, to));
            assertEquals(3, udp.datagrams, "through the raw socket, not the UDP one");
        }
    }

    /** A datagram that is not a RoCEv2 packet (a ring's proof) leaves through the UDP socket as it is: no ICRC patched. */
    @Test
    void theRawLinkSendsAVerbatimDatagramUnchangedThroughItsUdpSocket() throws Exception {
        FaultyLinkTest.Recording udp = new FaultyLinkTest.Recording();
        RawIpv4Link raw = RawIpv4Link.open((Inet4Address) InetAddress.getByName("127.0.0.1"), 47917, udp);
        Assumptions.assumeTrue(raw != null, "no raw socket here (needs CAP_NET_RAW)");
        try (raw) {
            java.nio.ByteBuffer proof = ShmProof.encode(ShmProof.HELLO, 3, 0x1234_5678_9abc_def0L, 77);
            java.nio.ByteBuffer expected = proof.duplicate();
            assertTrue(raw.sendVerbatim(proof, new InetSocketAddress("127.0.0.1", 47919)));
            assertEquals(1, udp.datagrams);
            assertEquals(expected, udp.order.getFirst(), "the bytes as given");
        }
    }
}
