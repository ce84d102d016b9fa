package dev.jrdma.cli;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Gid;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
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
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One side of a wire-compatibility run between two RDMA devices of any providers (the software device and kernel rxe
 * in the guest): one RC connection, then every opcode (SEND, SEND with immediate, SEND with invalidate, WRITE, WRITE
 * with immediate, READ, compare-and-swap, fetch-and-add) at every size class (0, 1, MTU-1, MTU, MTU+1, 1 MiB) with
 * this side as requester, then the same with the other side as requester. Every case checks the data on both sides
 * (content, length, immediate, invalidated key, atomic original and result) over a TCP control connection. Prints one
 * line per case, then the device's counters; exit status 0 when every case passed.
 *
 * <pre>
 *   InteropMain -d DEV [-x GID_INDEX] [-p TCP_PORT] [--sizes 0,1,...] [--iters N] [--timeout SEC] [--qp-timeout T] [PEER_HOST]
 * </pre>
 * Without PEER_HOST it listens (and is the responder first); with it, it connects (and is the requester first).
 */
public final class InteropMain {
    static final int MTU = 1024;
    static final int AREA = (1 << 20) + 4096;
    static final long ATOMIC_OFF = 3L * AREA; // 8-byte aligned word in the MR
    static final int MR_LEN = 3 * AREA + 4096;

    private final Context ctx;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion mr;
    private final MemorySegment mem;
    private final BufferedReader in;
    private final PrintWriter out;
    private final long timeoutNanos;
    private long peerAddr, doneValue;
    private int peerRkey;
    private final WorkCompletion[] wc = WorkCompletion.array(1);
    private int passed, failed;
    private final List<String> failures = new ArrayList<>();

    private InteropMain(Context ctx, Arena arena, int gidIndex, int qpTimeout, Socket control, long timeoutNanos)
            throws Exception {
        this.ctx = ctx;
        this.timeoutNanos = timeoutNanos;
        in = new BufferedReader(new InputStreamReader(control.getInputStream(), StandardCharsets.US_ASCII));
        out = new PrintWriter(control.getOutputStream(), true, StandardCharsets.US_ASCII);
        pd = ctx.allocPd();
        cq = ctx.createCq(256, null);
        qp = pd.createQueuePair(
                QpInitAttr.builder(cq).maxSendWr(64).maxRecvWr(64).build());
        mem = arena.allocate(MR_LEN, 4096);
        mr = pd.registerMemory(
                mem, Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC, Access.MW_BIND);
        Gid gid = ctx.queryGid(1, gidIndex);
        int psn = (int) (System.nanoTime() & 0xFFFFFF);
        out.println("QP " + qp.qpNum() + " " + psn + " " + gid + " " + mr.address() + " " + mr.rkey());
        String[] p = line("QP").split(" ");
        peerAddr = Long.parseLong(p[4]);
        peerRkey = Integer.parseInt(p[5]);
        new RcWalk()
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC)
                .ah(new AhAttr().global(Gid.parse(p[3]), gidIndex).hopLimit(64))
                .to(Integer.parseInt(p[1]), Integer.parseInt(p[2]))
                .maxDestRdAtomic(16)
                .timeout(qpTimeout)
                .sqPsn(psn)
                .maxRdAtomic(16)
                .walk(qp);
        out.println("RTS");
        line("RTS");
    }

    private String line(String expect) throws Exception {
        String l = in.readLine();
        if (l == null)
            throw new IllegalStateException("the peer closed the control connection (expected " + expect + ")");
        if (!l.startsWith(expect)) throw new IllegalStateException("expected " + expect + " from the peer, got: " + l);
        return l;
    }

    private WorkCompletion completion(String what) {
        long end = System.nanoTime() + timeoutNanos;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > end) throw new IllegalStateException("no completion for " + what);
            Thread.onSpinWait();
        }
        return wc[0];
    }

    private static byte pattern(int c, int i) {
        return (byte) (i * 31 + c * 7 + (i >>> 8));
    }

    private static final WrOpcode[] OPS = {
        WrOpcode.SEND,
        WrOpcode.SEND_WITH_IMM,
        WrOpcode.RDMA_WRITE,
        WrOpcode.RDMA_WRITE_WITH_IMM,
        WrOpcode.RDMA_READ,
        WrOpcode.ATOMIC_CMP_AND_SWP,
        WrOpcode.ATOMIC_FETCH_AND_ADD
    };
    /**
     * Run after both sides were requesters for {@link #OPS}: a failed window bind or invalidation leaves a QP in ERR,
     * which would fail every later case of both directions.
     */
    private static final WrOpcode[] INV_OPS = {WrOpcode.SEND_WITH_INV};

    /** This side posts every case; the peer runs {@link #respond}. */
    private void request(WrOpcode[] ops, int[] sizes, int iters, String dir) throws Exception {
        int c = ops == OPS ? 0 : 1000;
        for (WrOpcode op : ops) {
            int[] ss = op.isAtomic() ? new int[] {8} : sizes;
            for (int size : ss) {
                for (int it = 0; it < iters; it++) {
                    c++;
                    String name = dir + " " + op + " " + size + (iters > 1 ? " #" + it : "");
                    String err;
                    try {
                        err = requestOne(op, size, c);
                    } catch (RuntimeException e) {
                        err = e.toString();
                    }
                    // the responder checks its side once this side is done (or says why it gave up)
                    out.println(err == null ? "DONE " + doneValue : "FAILED " + err);
                    String peer = line("RESULT").substring(6).trim();
                    if (err == null && peer.equals("OK")) {
                        passed++;
                        System.out.println("PASS " + name);
                    } else {
                        failed++;
                        String why = (err != null ? "requester: " + err + " " : "")
                                + (peer.equals("OK") ? "" : "responder: " + peer);
                        failures.add(name + ": " + why);
                        System.out.println("FAIL " + name + ": " + why);
                        if (err != null && err.contains("no completion"))
                            throw new IllegalStateException("stopped after " + name);
                    }
                }
            }
        }
        out.println("END");
    }

    private String requestOne(WrOpcode op, int size, int c) throws Exception {
        out.println("CASE " + op + " " + size + " " + c);
        String[] go = line("GO").split(" ");
        int invRkey = Integer.parseInt(go[1]);
        if (op == WrOpcode.SEND_WITH_INV && invRkey == 0)
            return "the responder bound no window to invalidate (not sent)";
        long local = 0, remote = peerAddr + AREA;
        for (int i = 0; i < size; i++) mem.set(ValueLayout.JAVA_BYTE, local + i, pattern(c, i));
        SendWorkRequest wr = new SendWorkRequest().wrId(c).opcode(op).signaled(true);
        long before = 0x1000L * c + 5, add = 0x10001L * c;
        switch (op) {
            case SEND -> wr.buffer(mr, local, size);
            case SEND_WITH_IMM -> wr.buffer(mr, local, size).immData(0x5EED0000 + c);
            case SEND_WITH_INV -> {
                wr.buffer(mr, local, size);
                wr.invalidateRkey = invRkey;
            }
            case RDMA_WRITE -> wr.buffer(mr, local, size).remote(remote, peerRkey);
            case RDMA_WRITE_WITH_IMM ->
                wr.buffer(mr, local, size).remote(remote, peerRkey).immData(0x5EED0000 + c);
            case RDMA_READ -> {
                mem.asSlice(2L * AREA, Math.max(size, 1)).fill((byte) 0);
                wr.buffer(mr, 2L * AREA, size).remote(peerAddr, peerRkey); // the peer filled its area 0 with pattern(c)
            }
            case ATOMIC_CMP_AND_SWP ->
                wr.buffer(mr, 2L * AREA, 8).atomic(peerAddr + ATOMIC_OFF, peerRkey, before, before ^ 0x7777_0000_1111L);
            case ATOMIC_FETCH_AND_ADD -> wr.buffer(mr, 2L * AREA, 8).atomic(peerAddr + ATOMIC_OFF, peerRkey, add, 0);
            default -> throw new IllegalArgumentException(op.toString());
        }
        qp.postSend(wr);
        WorkCompletion w = completion(op.toString());
        if (w.status != WcStatus.SUCCESS) return "completion " + w;
        if (w.opcode != op.completionOpcode())
            return "completion opcode " + w.opcode + ", expected " + op.completionOpcode();
        if (op == WrOpcode.RDMA_READ) {
            if (w.byteLen != size && size != 0) return "READ completion byte_len " + w.byteLen;
            for (int i = 0; i < size; i++)
                if (mem.get(ValueLayout.JAVA_BYTE, 2L * AREA + i) != pattern(c, i))
                    return "READ data differs at byte " + i;
        }
        if (op.isAtomic()) {
            long orig = mem.get(ValueLayout.JAVA_LONG, 2L * AREA);
            if (orig != before)
                return "atomic returned 0x" + Long.toHexString(orig) + ", expected 0x" + Long.toHexString(before);
        }
        doneValue = op == WrOpcode.ATOMIC_CMP_AND_SWP ? before ^ 0x7777_0000_1111L : before + add;
        return null;
    }

    /** The peer posts; this side prepares each case and checks what arrived. */
    private void respond() throws Exception {
        while (true) {
            String l = in.readLine();
            if (l == null) throw new IllegalStateException("the peer closed the control connection");
            if (l.equals("END")) return;
            if (!l.startsWith("CASE ")) throw new IllegalStateException("expected CASE, got " + l);
            String[] f = l.split(" ");
            WrOpcode op = WrOpcode.valueOf(f[1]);
            int size = Integer.parseInt(f[2]), c = Integer.parseInt(f[3]);
            String err = null;
            // a fresh type 2 window for each SEND_WITH_INV: whether the peer's invalidation freed the last one is
            // what the case checks, not a precondition of the next case
            MemoryWindow mw = null;
            try {
                if (op == WrOpcode.SEND_WITH_INV) mw = pd.allocMemoryWindow(MwType.TYPE_2);
                err = respondOne(op, size, c, mw);
            } catch (RuntimeException e) {
                err = e.toString();
            } finally {
                if (mw != null) {
                    try {
                        mw.close();
                    } catch (RuntimeException e) {
                        err = err != null ? err : "closing the window: " + e;
                    }
                }
            }
            out.println("RESULT " + (err == null ? "OK" : err));
        }
    }

    private String respondOne(WrOpcode op, int size, int c, MemoryWindow mw) throws Exception {
        long before = 0x1000L * c + 5;
        mem.asSlice(AREA, AREA).fill((byte) 0);
        boolean recv = op == WrOpcode.SEND
                || op == WrOpcode.SEND_WITH_IMM
                || op == WrOpcode.SEND_WITH_INV
                || op == WrOpcode.RDMA_WRITE_WITH_IMM;
        if (recv) qp.postRecv(new RecvWorkRequest().wrId(c).buffer(mr, AREA, AREA));
        if (op == WrOpcode.RDMA_READ) for (int i = 0; i < size; i++) mem.set(ValueLayout.JAVA_BYTE, i, pattern(c, i));
        if (op.isAtomic()) mem.set(ValueLayout.JAVA_LONG, ATOMIC_OFF, before);
        int invRkey = 0;
        String bindErr = null;
        if (op == WrOpcode.SEND_WITH_INV) {
            // a type 2 window bound now, for the requester to invalidate; whatever fails, the requester still gets its
            // GO (the control exchange stays in step) and this case reports the failure
            try {
                if (mw == null) throw new IllegalStateException("no type 2 memory window");
                SendWorkRequest bind = new SendWorkRequest()
                        .wrId(-c)
                        .opcode(WrOpcode.BIND_MW)
                        .noBuffer()
                        .signaled(true);
                bind.bindMw = mw;
                bind.bindRkey = (mw.rkey() & 0xFFFFFF00) | ((mw.rkey() + 1) & 0xFF); // a new key byte for each bind
                bind.bindMr = mr;
                bind.bindAddr = mr.address();
                bind.bindLength = 4096;
                bind.bindAccess.add(Access.REMOTE_WRITE);
                qp.postSend(bind);
                WorkCompletion b = completion("BIND_MW");
                if (b.status != WcStatus.SUCCESS) bindErr = "BIND_MW " + b;
                else invRkey = bind.bindRkey;
            } catch (RuntimeException e) {
                bindErr = "BIND_MW: " + e;
            }
        }
        out.println("GO " + invRkey);
        String done = in.readLine();
        if (done == null) throw new IllegalStateException("the peer closed the control connection");
        if (!done.startsWith("DONE")) {
            if (recv) drainRecv();
            return done.startsWith("RESULT") ? "requester failed first" : "expected DONE, got " + done;
        }
        if (bindErr != null) {
            drainRecv();
            return bindErr;
        }
        if (recv) {
            WorkCompletion w = completion("RECV of " + op);
            if (w.status != WcStatus.SUCCESS) return "receive completion " + w;
            WcOpcode want = op == WrOpcode.RDMA_WRITE_WITH_IMM ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV;
            if (w.opcode != want) return "receive opcode " + w.opcode + ", expected " + want;
            if (op != WrOpcode.RDMA_WRITE_WITH_IMM && w.byteLen != size)
                return "receive byte_len " + w.byteLen + ", expected " + size;
            if ((op == WrOpcode.SEND_WITH_IMM || op == WrOpcode.RDMA_WRITE_WITH_IMM)
                    && (!w.hasImm() || w.immData != 0x5EED0000 + c))
                return "immediate " + (w.hasImm() ? "0x" + Integer.toHexString(w.immData) : "missing");
            // Linux rxe reports the invalidation with the kernel's IB_WC_WITH_INVALIDATE bit (1 << 2), which
            // libibverbs calls IBV_WC_IP_CSUM_OK, next to the invalidated rkey: accept that spelling from rxe only
            boolean rxeInv = ctx.device().name().startsWith("rxe") && (w.wcFlags & WorkCompletion.IP_CSUM_OK) != 0;
            if (op == WrOpcode.SEND_WITH_INV && !(w.hasInv() || rxeInv)) {
                return "invalidated rkey missing (wc_flags 0x" + Integer.toHexString(w.wcFlags) + "), expected 0x"
                        + Integer.toHexString(invRkey);
            }
            if (op == WrOpcode.SEND_WITH_INV && w.immData != invRkey)
                return "invalidated rkey 0x" + Integer.toHexString(w.immData) + ", expected 0x"
                        + Integer.toHexString(invRkey);
        }
        if (op != WrOpcode.RDMA_READ && !op.isAtomic()) {
            for (int i = 0; i < size; i++)
                if (mem.get(ValueLayout.JAVA_BYTE, AREA + i) != pattern(c, i)) return "data differs at byte " + i;
            if (size < AREA && mem.get(ValueLayout.JAVA_BYTE, AREA + size) != 0)
                return "a byte written past the message end";
        }
        if (op.isAtomic()) {
            long want = Long.parseLong(done.substring(5).trim()), now = mem.get(ValueLayout.JAVA_LONG, ATOMIC_OFF);
            if (now != want) return "atomic left 0x" + Long.toHexString(now) + ", expected 0x" + Long.toHexString(want);
        }
        return null;
    }

    private void drainRecv() {
        long end = System.nanoTime() + 200_000_000L;
        while (System.nanoTime() < end) if (cq.poll(wc) > 0) return;
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    /** Runs one side as {@link #main} does (printing on {@code System.out}); returns the exit status. */
    static int run(String[] args) throws Exception {
        String dev = null, host = null;
        // QP timeout 17 (4.096 us x 2^17 = 0.5 s): under emulation (TCG) a window of packets takes longer than the
        // usual 67 ms (14) to be acknowledged, and spurious go-back-N retransmissions only add load
        int gidIndex = -1, port = 18800, iters = 1, timeoutSec = 60, qpTimeout = 17;
        int[] sizes = {0, 1, MTU - 1, MTU, MTU + 1, 1 << 20};
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-d" -> dev = args[++i];
                case "-x" -> gidIndex = Integer.parseInt(args[++i]);
                case "-p" -> port = Integer.parseInt(args[++i]);
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                case "--timeout" -> timeoutSec = Integer.parseInt(args[++i]);
                case "--qp-timeout" -> qpTimeout = Integer.parseInt(args[++i]);
                case "--sizes" ->
                    sizes = java.util.Arrays.stream(args[++i].split(","))
                            .mapToInt(Integer::parseInt)
                            .toArray();
                default -> host = args[i];
            }
        }
        if (dev == null) {
            System.err.println(
                    "usage: InteropMain -d DEV [-x GID_INDEX] [-p TCP_PORT] [--sizes A,B,..] [--iters N] [--timeout SEC] [PEER_HOST]");
            return 2;
        }
        boolean client = host != null;
        int rc;
        try (Arena arena = Arena.ofShared();
                Context ctx = Verbs.device(dev).open();
                Socket control = connect(host, port, timeoutSec)) {
            control.setSoTimeout(timeoutSec * 1000 * 4);
            if (gidIndex < 0)
                gidIndex = ctx.defaultGidIndex(1); // as perftest without -x; the soft device: its own address's GID
            InteropMain m = new InteropMain(ctx, arena, gidIndex, qpTimeout, control, timeoutSec * 1_000_000_000L);
            String me = dev;
            try {
                if (client) {
                    m.request(OPS, sizes, iters, me + " requests");
                    m.respond();
                    m.request(INV_OPS, sizes, iters, me + " requests");
                    m.respond();
                } else {
                    m.respond();
                    m.request(OPS, sizes, iters, me + " requests");
                    m.respond();
                    m.request(INV_OPS, sizes, iters, me + " requests");
                }
            } catch (Exception e) {
                m.failed++;
                m.failures.add("aborted: " + e);
                System.out.println("FAIL aborted: " + e);
            }
            StringBuilder sb = new StringBuilder("counters of " + dev + ":");
            try {
                for (Map.Entry<String, Long> e : ctx.counters().entrySet())
                    if (e.getValue() != 0)
                        sb.append(' ').append(e.getKey()).append('=').append(e.getValue());
            } catch (RuntimeException e) {
                sb.append(" unavailable (").append(e.getMessage()).append(')');
            }
            System.out.println(sb);
            System.out.println(dev + ": " + m.passed + " passed, " + m.failed + " failed as requester");
            rc = m.failed == 0 ? 0 : 1;
        }
        return rc;
    }

    private static Socket connect(String host, int port, int timeoutSec) throws Exception {
        if (host == null) {
            try (ServerSocket ss = new ServerSocket()) {
                ss.setReuseAddress(true);
                ss.bind(new InetSocketAddress(port));
                ss.setSoTimeout(timeoutSec * 4000);
                return ss.accept();
            }
        }
        long end = System.nanoTime() + timeoutSec * 4_000_000_000L;
        while (true) {
            try {
                Socket s = new Socket();
                s.connect(new InetSocketAddress(host, port), 5000);
                return s;
            } catch (java.io.IOException e) {
                if (System.nanoTime() > end) throw e;
                Thread.sleep(200);
            }
        }
    }
}
