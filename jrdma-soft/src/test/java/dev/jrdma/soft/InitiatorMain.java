package dev.jrdma.soft;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.Mtu;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;

/**
 * The initiating process of {@link NetnsTest} (the other side is {@link PeerMain}): READs the peer's pattern,
 * SENDs 100 bytes and expects them back by RDMA WRITE_WITH_IMM. Prints OK or ERROR.
 */
public final class InitiatorMain {
    public static void main(String[] args) {
        int port = Integer.parseInt(args[0]);
        String address = args[1];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (Arena arena = Arena.ofShared();
                Context c = Verbs.device("soft@" + address + ":" + port).open()) {
            ProtectionDomain pd = c.allocPd();
            CompletionQueue cq = c.createCq(16, null);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
            MemoryRegion mr = pd.registerMemory(
                    arena.allocate(4096, 8), Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            String[] f = in.readLine().split(" ");
            if (!f[0].equals("READY")) throw new IllegalStateException("expected READY: " + String.join(" ", f));
            Gid peerGid = Gid.parse(f[4]);
            new RcWalk()
                    .pkeyIndex(0)
                    .port(1)
                    .access(Access.REMOTE_WRITE, Access.REMOTE_READ)
                    .ah(PeerMain.headerFields(new AhAttr().global(peerGid, c.defaultGidIndex(1)), args))
                    .pathMtu(Mtu.MTU_1024)
                    .to(Integer.parseInt(f[1]), 2000)
                    .maxDestRdAtomic(4)
                    .minRnrTimer(1)
                    .timeout(14)
                    .retryCnt(7)
                    .rnrRetry(7)
                    .sqPsn(1000)
                    .maxRdAtomic(4)
                    .walk(qp);
            System.out.println("PEER " + qp.qpNum() + " " + mr.address() + " " + mr.rkey() + " "
                    + c.queryGid(1, c.defaultGidIndex(1)));
            System.out.flush();
            if (!"CONNECTED".equals(in.readLine())) throw new IllegalStateException("peer did not connect");
            WorkCompletion[] wc = WorkCompletion.array(1);
            qp.postSend(new SendWorkRequest()
                    .wrId(1)
                    .opcode(WrOpcode.RDMA_READ)
                    .signaled(true)
                    .buffer(mr, 2048, 2048)
                    .remote(Long.parseLong(f[2]), Integer.parseInt(f[3])));
            expect(cq, wc, WcOpcode.RDMA_READ);
            for (int i = 0; i < 2048; i++)
                if (mr.segment().get(ValueLayout.JAVA_BYTE, 2048 + i) != (byte) (i * 7 + 99))
                    throw new IllegalStateException("READ data wrong at " + i);
            for (int i = 0; i < 100; i++) mr.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
            qp.postRecv(new RecvWorkRequest().wrId(3).buffer(mr, 3000, 16));
            qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.SEND)
                    .signaled(true)
                    .buffer(mr, 0, 100));
            // the SEND completes on the peer's ACK, which may come after the peer's WRITE_WITH_IMM (an ACK lost or
            // waiting for neighbour discovery is re-sent on the SEND's retry): either order
            WcOpcode first = expect(cq, wc, WcOpcode.SEND, WcOpcode.RECV_RDMA_WITH_IMM);
            expect(cq, wc, first == WcOpcode.SEND ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.SEND);
            for (int i = 0; i < 100; i++)
                if (mr.segment().get(ValueLayout.JAVA_BYTE, 1000 + i) != (byte) (i + 1))
                    throw new IllegalStateException("written-back data wrong at " + i);
            System.out.println("OK");
            System.out.flush();
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    /** Waits for the next completion: successful and of one of the opcodes {@code ops}; returns its opcode. */
    private static WcOpcode expect(CompletionQueue cq, WorkCompletion[] wc, WcOpcode... ops) {
        long end = System.nanoTime() + 20_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > end)
                throw new IllegalStateException("no completion (" + java.util.Arrays.toString(ops) + ")");
            Thread.onSpinWait();
        }
        if (wc[0].status == WcStatus.SUCCESS) for (WcOpcode op : ops) if (wc[0].opcode == op) return op;
        throw new IllegalStateException("expected " + java.util.Arrays.toString(ops) + ": " + wc[0]);
    }
}
