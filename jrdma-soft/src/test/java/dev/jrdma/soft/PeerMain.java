package dev.jrdma.soft;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RcWalk;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;

/**
 * The second process of {@link MultiProcessTest} and {@link NetnsTest}: a soft device on 127.0.0.2 (or the
 * address given), driven over stdin/stdout; an optional third argument TC,FLOW,HOP sets its address vector's IP header fields.
 * Receives a SEND, writes what it got back into the parent's memory with RDMA WRITE_WITH_IMM.
 */
public final class PeerMain {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String address = args.length > 1 ? args[1] : "127.0.0.2";
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (Arena arena = Arena.ofShared();
                Context ctx = Verbs.device("soft@" + address + ":" + port).open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(16, null);
            QueuePair qp = pd.createQueuePair(QpInitAttr.builder(cq).build());
            MemoryRegion mr = pd.registerMemory(
                    arena.allocate(4096, 8), Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            for (int i = 0; i < 4096; i++) mr.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 99));
            System.out.println("READY " + qp.qpNum() + " " + mr.address() + " " + mr.rkey() + " "
                    + ctx.queryGid(1, ctx.defaultGidIndex(1)));
            System.out.flush();
            String[] peer = in.readLine().split(" ");
            int peerQpn = Integer.parseInt(peer[1]);
            long peerAddr = Long.parseLong(peer[2]);
            int peerRkey = Integer.parseInt(peer[3]);
            Gid peerGid = Gid.parse(peer[4]);
            new RcWalk()
                    .pkeyIndex(0)
                    .port(1)
                    .access(Access.REMOTE_WRITE, Access.REMOTE_READ)
                    .ah(headerFields(new AhAttr().global(peerGid, ctx.defaultGidIndex(1)), args))
                    .pathMtu(dev.jrdma.verbs.Mtu.MTU_1024)
                    .to(peerQpn, 1000)
                    .maxDestRdAtomic(4)
                    .minRnrTimer(1)
                    .timeout(14)
                    .retryCnt(7)
                    .rnrRetry(7)
                    .sqPsn(2000)
                    .maxRdAtomic(4)
                    .walk(qp);
            qp.postRecv(new RecvWorkRequest().wrId(1).buffer(mr, 0, 4096));
            System.out.println("CONNECTED");
            System.out.flush();
            WorkCompletion[] wc = WorkCompletion.array(1);
            long end = System.nanoTime() + 20_000_000_000L;
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() > end) throw new IllegalStateException("no message from the parent");
                Thread.onSpinWait();
            }
            if (wc[0].status != WcStatus.SUCCESS) throw new IllegalStateException("receive failed: " + wc[0]);
            int n = wc[0].byteLen;
            qp.postSend(new SendWorkRequest()
                    .wrId(2)
                    .opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .immData(n)
                    .signaled(true)
                    .buffer(mr, 0, n)
                    .remote(peerAddr + 1000, peerRkey));
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() > end) throw new IllegalStateException("no completion of the write");
                Thread.onSpinWait();
            }
            if (wc[0].status != WcStatus.SUCCESS) throw new IllegalStateException("write failed: " + wc[0]);
            System.out.println("DONE");
            System.out.flush();
            String bye = in.readLine();
            if (!"BYE".equals(bye)) throw new IllegalStateException("expected BYE, got " + bye);
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    /** The address vector's traffic class, flow label and hop limit from the optional third argument {@code TC,FLOW,HOP}. */
    static AhAttr headerFields(AhAttr av, String[] args) {
        if (args.length < 3) return av;
        String[] f = args[2].split(",");
        av.trafficClass = Integer.decode(f[0]);
        av.flowLabel = Integer.decode(f[1]);
        av.hopLimit = Integer.decode(f[2]);
        return av;
    }
}
