package dev.jrdma.examples;

import dev.jrdma.connect.ConnParams;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AhAttr;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.DeviceAttr;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.MemoryWindow;
import dev.jrdma.verbs.MwType;
import dev.jrdma.verbs.PortAttr;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendFlag;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.TimeoutException;

/**
 * The seed articles' first RDMA application, step by step: open the device, PD, MR, CQ, QP; exchange the
 * connection parameters over TCP; walk the QP to RTS; then Send/Receive, RDMA Write with immediate, RDMA Read,
 * a chain of work requests, fetch-and-add as a counter, compare-and-swap as a lock, a memory window granted and
 * revoked, recovery of the connection after an error, and one deliberate error (a wrong rkey) explained.
 *
 * <p>Run the two sides as two processes: {@code server [--port P] [--device D] [--gid-index N]} and
 * {@code client HOST [--port P] [--device D] [--gid-index N]} ({@code jrdma demo} starts both). Without
 * {@code --gid-index} a side sends from its device's default GID (a RoCE device's IPv4 one); {@code --gid-index}
 * picks another, e.g. an IPv6 GID, as perftest's {@code -x}.
 * The sides keep in step through the TCP connection: each step ends with a one-byte barrier.
 */
public final class FirstRdmaApp implements AutoCloseable {
    /** The TCP port the server side listens on unless {@code --port} says otherwise. */
    public static final int DEFAULT_PORT = 18600;

    static final int BUF_SIZE = 4096;
    // Layout of each side's buffer: where each step puts its data.
    static final int OFF_SEND = 0,
            OFF_RECV = 256,
            OFF_WRITE = 512,
            OFF_READ = 1024,
            OFF_CHAIN = 1536,
            OFF_COUNTER = 2048,
            OFF_LOCK = 2056,
            OFF_ATOMIC_RESULT = 2064,
            OFF_WINDOW = 3072,
            WINDOW_LEN = 64;
    static final Duration STEP_TIMEOUT = Duration.ofSeconds(20);
    static final int PORT_NUM = 1;
    /** {@code run}'s GID index meaning "the device's default GID" ({@link Context#defaultGidIndex}). */
    public static final int DEFAULT_GID = -1;

    private final boolean server;
    private final PrintStream out;
    private final Arena arena = Arena.ofShared();
    private Context ctx;
    private ProtectionDomain pd;
    private MemorySegment buf;
    private MemoryRegion mr;
    private CompletionChannel channel;
    private CompletionQueue cq;
    private QueuePair qp;
    private Completions completions;
    private int gidIndex;
    private ConnParams local, remote;
    private DataInputStream in;
    private DataOutputStream ctl;
    private Socket sock;
    private final SendWorkRequest swr = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);
    private long stepStart;
    private int step;

    FirstRdmaApp(boolean server, PrintStream out) {
        this.server = server;
        this.out = out;
    }

    /**
     * Runs one side: {@code server [--port P] [--device D] [--gid-index N]} or
     * {@code client HOST [--port P] [--device D] [--gid-index N]}. Exits with status 1 after printing the failure when a
     * step fails, 2 on a usage error.
     *
     * @param args the side and its options
     * @throws Exception when an option is malformed
     */
    public static void main(String[] args) throws Exception {
        if (args.length == 0 || !(args[0].equals("server") || args[0].equals("client"))) {
            System.err.println(
                    "usage: FirstRdmaApp server [--port P] [--device DEV] [--gid-index N] | client HOST [--port P] [--device DEV] [--gid-index N]");
            System.exit(2);
        }
        boolean isServer = args[0].equals("server");
        String host = null;
        int port = DEFAULT_PORT;
        String device = null;
        int gidIndex = DEFAULT_GID;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--device" -> device = args[++i];
                case "--gid-index" -> gidIndex = Integer.parseInt(args[++i]);
                default -> {
                    if (!isServer && host == null) host = args[i];
                    else throw new IllegalArgumentException("unexpected argument " + args[i]);
                }
            }
        }
        if (!isServer && host == null) throw new IllegalArgumentException("client needs the server's host");
        try (FirstRdmaApp app = new FirstRdmaApp(isServer, System.out)) {
            app.run(device, host, port, gidIndex);
        } catch (Exception e) {
            System.out.println("FAILED: " + e);
            System.exit(1);
        }
    }

    /**
     * Runs every step; returns normally only when all of them did what they should.
     *
     * @param deviceName the device to use, or null for {@link Verbs#defaultDevice()}
     * @param host       the server's host (client side); ignored on the server side
     * @param port       the TCP port of the exchange: the server listens on it, the client connects to it
     * @throws Exception when a step fails; the message says which and why
     */
    public void run(String deviceName, String host, int port) throws Exception {
        run(deviceName, host, port, DEFAULT_GID);
    }

    /**
     * Runs every step, sending from the GID at {@code sgidIndex} of port 1 ({@link #DEFAULT_GID}: the device's default).
     *
     * @param deviceName the device to use, or null for {@link Verbs#defaultDevice()}
     * @param host       the server's host (client side); ignored on the server side
     * @param port       the TCP port of the exchange: the server listens on it, the client connects to it
     * @param sgidIndex  the index in the port's GID table to send from, or {@link #DEFAULT_GID}
     * @throws Exception when a step fails; the message says which and why
     */
    public void run(String deviceName, String host, int port, int sgidIndex) throws Exception {
        begin("open the device");
        Device dev = deviceName == null ? Verbs.defaultDevice() : Verbs.device(deviceName);
        ctx = dev.open();
        DeviceAttr attr = ctx.queryDevice();
        PortAttr pattr = ctx.queryPort(PORT_NUM);
        if (sgidIndex != DEFAULT_GID
                && (sgidIndex < 0
                        || sgidIndex >= pattr.gidTblLen()
                        || ctx.queryGid(PORT_NUM, sgidIndex).isZero())) {
            throw new IllegalArgumentException("--gid-index " + sgidIndex + " is not a GID of " + dev.name()
                    + " (its table has " + pattr.gidTblLen() + " entries, this one "
                    + (sgidIndex < 0 || sgidIndex >= pattr.gidTblLen() ? "outside it" : "empty")
                    + "); jrdma devinfo -v -d " + dev.name() + " lists the GIDs");
        }
        gidIndex = sgidIndex == DEFAULT_GID ? pickGidIndex(ctx) : sgidIndex;
        done(
                "%s (%s provider), port %d %s, link %s, active MTU %s, GID[%d] %s",
                dev.name(),
                dev.provider(),
                PORT_NUM,
                pattr.state().ibvName(),
                pattr.linkLayer().ibvName(),
                pattr.activeMtu(),
                gidIndex,
                ctx.queryGid(PORT_NUM, gidIndex));

        begin("allocate a protection domain");
        pd = ctx.allocPd();
        done("ok");

        begin("register a memory region");
        buf = arena.allocate(BUF_SIZE, 64);
        EnumSet<Access> access =
                EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC);
        if (attr.supportsMemoryWindows()) access.add(Access.MW_BIND);
        mr = pd.registerMemory(buf, access);
        done(
                "%d bytes at 0x%x, lkey 0x%08x, rkey 0x%08x, access %s",
                mr.length(), mr.address(), mr.lkey(), mr.rkey(), mr.access());

        begin("create a completion channel and queue");
        channel = ctx.createCompletionChannel();
        cq = ctx.createCq(64, channel);
        completions = new Completions(cq);
        done("CQ holds %d completions; waits block on the channel", cq.capacity());

        begin("create an RC queue pair");
        qp = pd.createQueuePair(QpInitAttr.builder(cq)
                .maxSendWr(32)
                .maxRecvWr(32)
                .maxInlineData(64)
                .build());
        done("QP number 0x%06x, state %s, caps %s", qp.qpNum(), qp.state(), qp.cap());

        begin(server ? "wait for the client (TCP " + port + ")" : "connect to the server over TCP");
        sock = server ? accept(port) : connect(host, port);
        sock.setTcpNoDelay(true);
        in = new DataInputStream(sock.getInputStream());
        ctl = new DataOutputStream(sock.getOutputStream());
        done("%s", sock.getRemoteSocketAddress());

        connectQp("exchange connection parameters and walk the QP RESET->INIT->RTR->RTS");

        sendReceive();
        writeWithImmediate();
        read();
        chain();
        fetchAndAdd();
        compareAndSwapLock();
        if (attr.supportsMemoryWindows()) {
            memoryWindow(attr.supportsType2Windows() ? MwType.TYPE_2 : MwType.TYPE_1);
            connectQp("recover: reset both QPs and connect again");
        } else {
            skip("memory window", "the device does not support memory windows");
        }
        wrongRkey();
        out.println("all steps done");
    }

    // ---- steps ------------------------------------------------------------------------------------------------

    private void sendReceive() throws Exception {
        begin("Send/Receive");
        if (server) {
            postRecv(1, OFF_RECV, 256);
            barrier();
            WorkCompletion wc = expect(WcOpcode.RECV, 1);
            done("received %d bytes: \"%s\"", wc.byteLen, string(OFF_RECV, wc.byteLen));
        } else {
            int n = putString(OFF_SEND, "Hello from the client over RDMA Send");
            barrier();
            swr.opcode(WrOpcode.SEND).wrId(2).buffer(mr, OFF_SEND, n).next(null);
            signaled(true);
            qp.postSend(swr);
            expect(WcOpcode.SEND, 2);
            done("sent %d bytes", n);
        }
        barrier();
    }

    private void writeWithImmediate() throws Exception {
        begin("RDMA Write with immediate");
        int imm = 0xC0FFEE;
        if (server) {
            postRecv(3, OFF_RECV, 0);
            barrier();
            WorkCompletion wc = expect(WcOpcode.RECV_RDMA_WITH_IMM, 3);
            check(wc.hasImm() && wc.immData == imm, "immediate data 0x%x, expected 0x%x", wc.immData, imm);
            done(
                    "the client wrote %d bytes into my memory: \"%s\", immediate 0x%x",
                    wc.byteLen, string(OFF_WRITE, wc.byteLen), wc.immData);
        } else {
            int n = putString(OFF_SEND, "Written by the client with RDMA Write");
            barrier();
            swr.opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .wrId(4)
                    .buffer(mr, OFF_SEND, n)
                    .remote(remote.addr() + OFF_WRITE, remote.rkey())
                    .immData(imm)
                    .next(null);
            signaled(true);
            qp.postSend(swr);
            expect(WcOpcode.RDMA_WRITE, 4);
            done(
                    "wrote %d bytes to 0x%x (rkey 0x%08x) with immediate 0x%x",
                    n, remote.addr() + OFF_WRITE, remote.rkey(), imm);
        }
        barrier();
    }

    private void read() throws Exception {
        begin("RDMA Read");
        String text = "Read from the server's memory; its CPU took no part";
        if (server) {
            putString(OFF_READ, text);
            barrier();
            barrier();
            done("served %d bytes: no receive posted, no call made by this application", text.length());
        } else {
            barrier();
            swr.opcode(WrOpcode.RDMA_READ)
                    .wrId(5)
                    .buffer(mr, OFF_READ, text.length())
                    .remote(remote.addr() + OFF_READ, remote.rkey())
                    .next(null);
            signaled(true);
            qp.postSend(swr);
            WorkCompletion wc = expect(WcOpcode.RDMA_READ, 5);
            String got = string(OFF_READ, text.length());
            check(got.equals(text), "read \"%s\"", got);
            done("read %d bytes: \"%s\"", wc.byteLen, got);
            barrier();
        }
    }

    private void chain() throws Exception {
        begin("a chain of work requests posted with one call");
        String[] parts = {"Chained ", "work requests ", "arrive in order"};
        if (server) {
            postRecv(6, OFF_RECV, 64);
            barrier();
            WorkCompletion wc = expect(WcOpcode.RECV, 6);
            int total = (int) buf.get(ValueLayout.JAVA_INT_UNALIGNED, OFF_RECV);
            done("notified after %d chained writes: \"%s\"", parts.length, string(OFF_CHAIN, total));
            check(wc.byteLen == 4, "notification of %d bytes", wc.byteLen);
        } else {
            SendWorkRequest[] chain = new SendWorkRequest[parts.length + 1];
            int off = 0;
            for (int i = 0; i < parts.length; i++) {
                int n = putString(OFF_SEND + off, parts[i]);
                // Unsignaled: only the last request of the chain reports; its completion implies the others'.
                chain[i] = new SendWorkRequest()
                        .opcode(WrOpcode.RDMA_WRITE)
                        .wrId(100 + i)
                        .buffer(mr, OFF_SEND + off, n)
                        .remote(remote.addr() + OFF_CHAIN + off, remote.rkey());
                off += n;
            }
            buf.set(ValueLayout.JAVA_INT_UNALIGNED, OFF_SEND + 200, off);
            chain[parts.length] = new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .wrId(7)
                    .buffer(mr, OFF_SEND + 200, 4)
                    .signaled(true);
            for (int i = 0; i < parts.length; i++) chain[i].next = chain[i + 1];
            barrier();
            qp.postSend(chain[0]);
            expect(WcOpcode.SEND, 7);
            done("%d RDMA writes + 1 send in one post, one completion", parts.length);
        }
        barrier();
    }

    private void fetchAndAdd() throws Exception {
        begin("fetch-and-add as a remote counter");
        int adds = 5;
        if (server) {
            buf.set(ValueLayout.JAVA_LONG, OFF_COUNTER, 100);
            barrier();
            barrier();
            long v = buf.get(ValueLayout.JAVA_LONG, OFF_COUNTER);
            check(v == 100 + adds, "counter is %d, expected %d", v, 100 + adds);
            done("counter went from 100 to %d: the device applied the adds, this application made no call", v);
        } else {
            barrier();
            StringBuilder olds = new StringBuilder();
            for (int i = 0; i < adds; i++) {
                swr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                        .wrId(8)
                        .buffer(mr, OFF_ATOMIC_RESULT, 8)
                        .atomic(remote.addr() + OFF_COUNTER, remote.rkey(), 1, 0)
                        .next(null);
                signaled(true);
                qp.postSend(swr);
                expect(WcOpcode.FETCH_ADD, 8);
                olds.append(i == 0 ? "" : ", ").append(buf.get(ValueLayout.JAVA_LONG, OFF_ATOMIC_RESULT));
            }
            done("%d fetch-and-adds returned %s", adds, olds);
            barrier();
        }
    }

    private void compareAndSwapLock() throws Exception {
        begin("compare-and-swap as a distributed lock");
        long me = 0xC11E47L, other = 0x07E4L;
        if (server) {
            buf.set(ValueLayout.JAVA_LONG, OFF_LOCK, 0);
            barrier();
            barrier();
            check(buf.get(ValueLayout.JAVA_LONG, OFF_LOCK) == 0, "lock word not released");
            done("lock word back to 0 (free)");
        } else {
            barrier();
            long old = cas(0, me);
            check(old == 0, "acquire saw 0x%x", old);
            long seen = cas(0, other);
            check(seen == me, "second owner saw 0x%x", seen);
            long released = cas(me, 0);
            check(released == me, "release saw 0x%x", released);
            done("acquired (0 -> 0x%x), a second owner was refused (saw 0x%x), released (0x%x -> 0)", me, seen, me);
            barrier();
        }
    }

    private long cas(long expect, long swap) throws Exception {
        swr.opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .wrId(9)
                .buffer(mr, OFF_ATOMIC_RESULT, 8)
                .atomic(remote.addr() + OFF_LOCK, remote.rkey(), expect, swap)
                .next(null);
        signaled(true);
        qp.postSend(swr);
        expect(WcOpcode.COMP_SWAP, 9);
        return buf.get(ValueLayout.JAVA_LONG, OFF_ATOMIC_RESULT);
    }

    private void memoryWindow(MwType type) throws Exception {
        begin("a memory window granted and revoked (" + type + ")");
        String secret = "Visible through the window only";
        if (server) {
            putString(OFF_WINDOW, secret);
            MemoryWindow mw = pd.allocMemoryWindow(type);
            int rkey;
            if (type == MwType.TYPE_1) {
                rkey = qp.bindMemoryWindow(
                        mw, 10, true, mr, mr.address() + OFF_WINDOW, WINDOW_LEN, EnumSet.of(Access.REMOTE_READ));
                expect(WcOpcode.BIND_MW, 10);
            } else {
                rkey = (mw.rkey() & 0xFFFFFF00) | ((mw.rkey() + 1) & 0xFF);
                swr.opcode(WrOpcode.BIND_MW).wrId(10).noBuffer().next(null);
                swr.bindMw = mw;
                swr.bindRkey = rkey;
                swr.bindMr = mr;
                swr.bindAddr = mr.address() + OFF_WINDOW;
                swr.bindLength = WINDOW_LEN;
                swr.bindAccess.clear();
                swr.bindAccess.add(Access.REMOTE_READ);
                signaled(true);
                qp.postSend(swr);
                expect(WcOpcode.BIND_MW, 10);
                swr.bindMw = null;
                swr.bindMr = null;
            }
            ctl.writeInt(rkey);
            ctl.flush();
            barrier(); // the client read through the window
            if (type == MwType.TYPE_1) {
                mw.close(); // deallocating a type 1 window revokes it
            } else {
                swr.opcode(WrOpcode.LOCAL_INV).wrId(11).noBuffer().next(null);
                swr.invalidateRkey = rkey;
                signaled(true);
                qp.postSend(swr);
                expect(WcOpcode.LOCAL_INV, 11);
            }
            done(
                    "granted %d bytes at 0x%x under rkey 0x%08x, then revoked it",
                    WINDOW_LEN, mr.address() + OFF_WINDOW, rkey);
            barrier(); // revoked
            barrier(); // the client saw the revocation
            out.printf(
                    "        after refusing the access this QP is in %s (a responder error ends the connection)%n",
                    qp.state());
        } else {
            int rkey = in.readInt();
            swr.opcode(WrOpcode.RDMA_READ)
                    .wrId(12)
                    .buffer(mr, OFF_WINDOW, secret.length())
                    .remote(remote.addr() + OFF_WINDOW, rkey)
                    .next(null);
            signaled(true);
            qp.postSend(swr);
            expect(WcOpcode.RDMA_READ, 12);
            String got = string(OFF_WINDOW, secret.length());
            check(got.equals(secret), "read \"%s\" through the window", got);
            barrier();
            barrier(); // the server revoked the window
            swr.wrId(13);
            qp.postSend(swr);
            WorkCompletion wc = completions.next(STEP_TIMEOUT);
            check(wc.status == WcStatus.REM_ACCESS_ERR, "access after revocation completed with %s", wc.status);
            done(
                    "read \"%s\" under rkey 0x%08x; after revocation the same read fails: %s",
                    got, rkey, wc.status.cName());
            barrier();
        }
    }

    private void wrongRkey() throws Exception {
        begin("a deliberate error: RDMA Write with a wrong rkey");
        if (server) {
            barrier();
            barrier();
            done(
                    "refused the write (my QP is now %s); my memory is untouched: \"%s\"",
                    qp.state(), string(OFF_WRITE, 10));
        } else {
            barrier();
            int n = putString(OFF_SEND, "must never arrive");
            int wrong = remote.rkey() ^ 0x5A5A00;
            swr.opcode(WrOpcode.RDMA_WRITE)
                    .wrId(14)
                    .buffer(mr, OFF_SEND, n)
                    .remote(remote.addr() + OFF_WRITE, wrong)
                    .next(null);
            signaled(true);
            qp.postSend(swr);
            WorkCompletion wc = completions.next(STEP_TIMEOUT);
            check(wc.status == WcStatus.REM_ACCESS_ERR, "the wrong rkey completed with %s", wc.status);
            done(
                    "rkey 0x%08x instead of 0x%08x -> %s%n        %s%n        what to do: %s",
                    wrong, remote.rkey(), wc.status.cName(), wc.status.explanation(), wc.status.remedy());
            barrier();
        }
    }

    // ---- connection set-up ------------------------------------------------------------------------------------

    private void connectQp(String title) throws Exception {
        begin(title);
        if (qp.state() != QpState.RESET) qp.modify(new QpAttr().state(QpState.RESET));
        int psn = new SecureRandom().nextInt() & 0xFFFFFF;
        PortAttr port = ctx.queryPort(PORT_NUM);
        local = new ConnParams(
                mr.address(),
                mr.rkey(),
                qp.qpNum(),
                port.lid(),
                ctx.queryGid(PORT_NUM, gidIndex),
                psn,
                port.activeMtu());
        // The client writes first, the server reads first: neither can block the other.
        if (server) {
            remote = ConnParams.readFrom(in);
            local.writeTo(ctl);
            ctl.flush();
        } else {
            local.writeTo(ctl);
            ctl.flush();
            remote = ConnParams.readFrom(in);
        }
        qp.modify(new QpAttr()
                .state(QpState.INIT)
                .pkeyIndex(0)
                .port(PORT_NUM)
                .access(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC));
        AhAttr ah = new AhAttr().dlid(remote.lid()).portNum(PORT_NUM);
        if (!remote.gid().isZero()) ah.global(remote.gid(), gidIndex).hopLimit(64);
        qp.modify(new QpAttr()
                .state(QpState.RTR)
                .ah(ah)
                .pathMtu(local.mtu().min(remote.mtu()))
                .destQpNum(remote.qpNum())
                .rqPsn(remote.psn())
                .maxDestRdAtomic(4)
                .minRnrTimer(12));
        qp.modify(new QpAttr()
                .state(QpState.RTS)
                .timeout(14)
                .retryCnt(7)
                .rnrRetry(7)
                .sqPsn(local.psn())
                .maxRdAtomic(4));
        barrier(); // both QPs are in RTS before anyone sends
        done("local  %s%n        remote %s%n        QP state %s", local, remote, qp.state());
    }

    private static int pickGidIndex(Context ctx) {
        // the GID a RoCE application sends from without -x: the IPv4-mapped RoCE v2 one (the software device: its own
        // address's, IPv4 or IPv6); InfiniBand and the rest use GID 0
        return ctx.defaultGidIndex(PORT_NUM);
    }

    private Socket accept(int port) throws IOException {
        try (ServerSocket ss = new ServerSocket()) {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port));
            ss.setSoTimeout((int) Duration.ofSeconds(60).toMillis());
            out.println("        listening on TCP port " + port);
            return ss.accept();
        }
    }

    private static Socket connect(String host, int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), 2000);
                s.setSoTimeout((int) STEP_TIMEOUT.toMillis() * 3);
                return s;
            } catch (IOException e) {
                s.close();
                if (System.nanoTime() > deadline)
                    throw new IOException("no server at " + host + ":" + port + " within 30 s: " + e.getMessage(), e);
                Thread.sleep(100);
            }
        }
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    private void barrier() throws IOException {
        if (server) {
            if (in.read() < 0) throw new IOException("the client closed the connection");
            ctl.write(1);
            ctl.flush();
        } else {
            ctl.write(1);
            ctl.flush();
            if (in.read() < 0) throw new IOException("the server closed the connection");
        }
    }

    private void postRecv(long wrId, int offset, int length) {
        rwr.wrId(wrId).next(null);
        if (length == 0) rwr.numSge(0);
        else rwr.buffer(mr, offset, length);
        qp.postRecv(rwr);
    }

    private void signaled(boolean on) {
        swr.flags.clear();
        if (on) swr.flags.add(SendFlag.SIGNALED);
    }

    private WorkCompletion expect(WcOpcode opcode, long wrId) throws TimeoutException {
        WorkCompletion wc = completions.next(STEP_TIMEOUT);
        if (!wc.isSuccess()) throw new IllegalStateException("step failed: " + wc.explain());
        check(wc.opcode == opcode && wc.wrId == wrId, "expected %s completion of wr %d, got %s", opcode, wrId, wc);
        return wc;
    }

    private int putString(int offset, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(b, 0, buf, ValueLayout.JAVA_BYTE, offset, b.length);
        return b.length;
    }

    private String string(int offset, int length) {
        byte[] b = new byte[length];
        MemorySegment.copy(buf, ValueLayout.JAVA_BYTE, offset, b, 0, length);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static void check(boolean ok, String fmt, Object... args) {
        if (!ok) throw new IllegalStateException("check failed: " + String.format(fmt, args));
    }

    private void begin(String what) {
        step++;
        stepStart = System.nanoTime();
        out.printf("[%2d] %s ...%n", step, what);
    }

    private void done(String fmt, Object... args) {
        double us = (System.nanoTime() - stepStart) / 1e3;
        out.printf("     ok (%.0f us): %s%n", us, String.format(fmt, args));
        out.flush();
    }

    private void skip(String what, String why) {
        step++;
        out.printf("[%2d] %s: skipped, %s%n", step, what, why);
    }

    @Override
    public void close() {
        try {
            if (sock != null) sock.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        if (ctx != null) ctx.close(); // closes QP, CQ, channel, MR, PD in the right order
        arena.close();
    }
}
