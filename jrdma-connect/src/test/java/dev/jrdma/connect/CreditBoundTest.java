package dev.jrdma.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The inbox is bounded by the credits granted (issue 8, section 4): a raw-verbs peer that does the handshake and then
 * posts SENDs without regard for credits, up to {@code jrdma.test.creditFlood} of them (10^6 by default), while the
 * server's application takes nothing. The server holds at most recvQueueDepth messages and ends the connection
 * with a PROTOCOL_ERROR that says the peer ignores flow control.
 */
@Timeout(300)
class CreditBoundTest {
    static {
        TestSupport.init();
    }

    private static final int FLOOD = Integer.getInteger("jrdma.test.creditFlood", 1_000_000);

    @Test
    void aPeerThatIgnoresCreditsBreaksItsOwnEndpoint() throws Exception {
        EndpointConfig cfg = TestSupport.config().recvQueueDepth(8).build();
        try (ServerEndpoint server = ServerEndpoint.bind(TestSupport.server(), cfg);
                Context ctx = Devices.forLocalAddress(InetAddress.getByName(TestSupport.HOST), TestSupport.DEVICE)
                        .open();
                Arena arena = Arena.ofShared()) {
            CompletableFuture<Endpoint> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(10));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(1024, null);
            QueuePair qp = pd.createQueuePair(
                    QpInitAttr.builder(cq).maxSendWr(256).maxRecvWr(1).build());
            MemoryRegion mr = pd.registerMemory(arena.allocate(4096), Access.LOCAL_WRITE);
            int gidIndex = EndpointGroup.pickGidIndex(ctx);
            PortAttr port = ctx.queryPort(1);
            ConnParams mine =
                    new ConnParams(0, 0, qp.qpNum(), port.lid(), ctx.queryGid(1, gidIndex), 0x1234, port.activeMtu());
            Endpoint served;
            try (Socket s = new Socket(TestSupport.HOST, server.port())) {
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                DataInputStream in = new DataInputStream(s.getInputStream());
                Handshake.writeHello(out, mine, 8, 4096, 0, new byte[0]);
                Handshake.Reply reply = Handshake.readReply(in, "server");
                ConnParams theirs = reply.params();
                AhAttr ah = new AhAttr().dlid(theirs.lid()).portNum(1);
                if (!theirs.gid().isZero()) ah.global(theirs.gid(), gidIndex).hopLimit(64);
                // the flood ends only when the server ends the connection (its QP in error answers nothing:
                // RETRY_EXC_ERR here): an RNR NAK (the server's completion thread behind in reposting) is waited out,
                // and the ACK timeout (67 ms, 6 tries: about 3 s on the soft device, which backs off to 1 s) outlasts
                // a loaded machine's pauses. With 1 ms x 2 tries and no RNR retry, 3 runs in 20 under 3 CPU hogs
                // ended the flood (RETRY_EXC_ERR or RNR_RETRY_EXC_ERR at the first messages) before the server had
                // seen a message without a credit.
                new RcWalk()
                        .access(java.util.Set.of())
                        .ah(ah)
                        .pathMtu(mine.mtu().min(theirs.mtu()))
                        .to(theirs.qpNum(), theirs.psn())
                        .maxDestRdAtomic(1)
                        .minRnrTimer(1)
                        .retryCnt(5)
                        .sqPsn(mine.psn())
                        .maxRdAtomic(1)
                        .walk(qp);
                out.writeByte(Endpoint.READY);
                out.flush();
                served = accepted.get(10, TimeUnit.SECONDS);

                // the flood: data messages (type 0, no credits returned), never waiting for a credit
                SendWorkRequest wr = new SendWorkRequest()
                        .opcode(WrOpcode.SEND_WITH_IMM)
                        .buffer(mr, 0, 64)
                        .immData(Endpoint.TYPE_DATA << 24);
                WorkCompletion[] wcs = WorkCompletion.array(64);
                int posted = 0, completed = 0, failedAt = -1, inFlight = 0;
                WcStatus failure = null;
                long t0 = System.nanoTime();
                while (posted < FLOOD && failedAt < 0) {
                    while (inFlight < 128 && posted < FLOOD) {
                        wr.wrId(posted).signaled(posted % 16 == 15);
                        qp.postSend(wr);
                        posted++;
                        inFlight++;
                    }
                    int n = cq.poll(wcs);
                    for (int i = 0; i < n; i++) {
                        if (!wcs[i].isSuccess()) {
                            failedAt = (int) wcs[i].wrId;
                            failure = wcs[i].status;
                            break;
                        }
                        completed = (int) wcs[i].wrId + 1;
                        inFlight -= 16;
                    }
                    if (n == 0) Thread.onSpinWait();
                    if (System.nanoTime() - t0 > 120_000_000_000L) break;
                }
                System.out.println("credit flood: posted " + posted + ", acknowledged " + completed
                        + ", first failure at " + failedAt + " (" + failure + ")" + " after "
                        + (System.nanoTime() - t0) / 1_000_000 + " ms");
                assertTrue(
                        failedAt >= 0,
                        "the server took " + completed + " messages without credits and never ended the connection");
                // the server holds no more than the credits it granted
                assertTrue(served.inboxSize() <= cfg.recvQueueDepth(), "inbox " + served.inboxSize());
                assertFalse(served.isConnected());
                int queued = 0;
                RdmaException e;
                while (true) {
                    try {
                        served.receive(Duration.ofSeconds(3));
                        queued++;
                    } catch (RdmaException x) {
                        e = x;
                        break;
                    }
                }
                assertTrue(queued <= cfg.recvQueueDepth(), queued + " messages were held");
                assertEquals(RdmaException.Kind.PROTOCOL_ERROR, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("without a credit"), e.getMessage());
                served.close();
            } finally {
                qp.close();
                mr.close();
            }
        }
    }
}
