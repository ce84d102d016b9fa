package dev.jrdma.examples;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import dev.jrdma.cm.ConnParam;
import dev.jrdma.cm.PortSpace;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * rping's ping-pong over the public rdma_cm API ({@code dev.jrdma.cm}) and the verbs API, so jrdma interoperates
 * with rdma-core's {@code rping} both ways. The protocol (rdma-core librdmacm/examples/rping.c): both sides exchange
 * a 16-byte advertisement {@code {be64 addr, be32 rkey, be32 size}} by SEND. Each ping, the client advertises its
 * source buffer; the server RDMA READs it and SENDs a go-ahead; the client advertises its sink buffer; the server
 * RDMA WRITEs the data there (up to and including its NUL) and SENDs a go-ahead. The client's data is
 * {@code "rdma-ping-N: "} followed by letters cycling from 'A' to 'z', ending in a NUL.
 */
public final class Rping {
    /** rping's default port. */
    public static final int DEFAULT_PORT = 7174;

    private static final int INFO_BYTES = 16;
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(30);

    /**
     * rping's options: -s/-c, -a, -p, -C, -S, -V, -v.
     *
     * @param server   {@code -s}: run the server side; false ({@code -c}) for the client
     * @param address  {@code -a}: the address the server binds or the client connects to
     * @param port     {@code -p}: the rdma_cm port
     * @param count    {@code -C}: how many pings; 0 pings until interrupted, as rping
     * @param size     {@code -S}: the ping data size in bytes, 26 to 65535
     * @param validate {@code -V}: check the data that came back
     * @param verbose  {@code -v}: print each ping's data
     */
    public record Options(
            boolean server, String address, int port, int count, int size, boolean validate, boolean verbose) {
        /**
         * Checks the values as rping does.
         *
         * @throws IllegalArgumentException for a size outside 26..65535 or a negative count
         */
        public Options {
            if (size < 26 || size > 65535)
                throw new IllegalArgumentException(
                        "-S " + size + ": the ping data size is 26 to 65535 bytes (as rping)");
            if (count < 0) throw new IllegalArgumentException("-C " + count + " is negative");
        }
    }

    private final Options opt;
    private final PrintStream out;
    private final CmEventChannel channel;
    private CmId listener, id;
    private Context ctx;
    private ProtectionDomain pd;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemoryRegion recvMr, sendMr, rdmaMr, startMr;
    private final Arena arena = Arena.ofShared();
    private final WorkCompletion[] wcs = WorkCompletion.array(4);
    private boolean disconnected;

    private Rping(Options opt, PrintStream out) throws CmException {
        this.opt = opt;
        this.out = out;
        this.channel = CmEventChannel.create();
    }

    /**
     * Runs one side.
     *
     * @param opt the options
     * @param out where progress (and with {@code -v} the data) is printed
     * @return 0 when every ping went through (the server: when the client disconnected after its pings)
     * @throws Exception when rdma_cm or a verb fails
     */
    public static int run(Options opt, PrintStream out) throws Exception {
        Rping r = new Rping(opt, out);
        try {
            return opt.server() ? r.serve() : r.ping();
        } finally {
            r.close();
        }
    }

    // ---- client -------------------------------------------------------------------------------------------------

    private int ping() throws Exception {
        id = CmId.create(channel, PortSpace.TCP);
        InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(opt.address()), opt.port());
        id.resolveAddress(null, server, Duration.ofSeconds(2));
        expect(CmEventType.ADDR_RESOLVED, "address resolution of " + server);
        id.resolveRoute(Duration.ofSeconds(2));
        expect(CmEventType.ROUTE_RESOLVED, "route resolution to " + server);
        setUp(id.deviceName());
        startMr = register(opt.size(), Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE);
        qp.modify(id.initQpAttr(QpState.INIT)); // a receive needs INIT
        postRecv();
        id.connect(new ConnParam().qpNum(qp.qpNum()));
        expect(CmEventType.CONNECT_RESPONSE, "the server's answer");
        toRts(id); // INIT again: now with the access rights the server's answer allows, then RTR and RTS
        id.establish();
        int start = 'A';
        for (int ping = 0; opt.count() == 0 || ping < opt.count(); ping++) {
            fillPing(startMr.segment(), ping, start);
            start = start == 'z' ? 'A' : start + 1;
            advertise(startMr);
            if (awaitRecv() < 0) return failure("the server went away before its go-ahead");
            advertise(rdmaMr);
            if (awaitRecv() < 0) return failure("the server went away before writing back");
            if (opt.validate() && startMr.segment().mismatch(rdmaMr.segment()) >= 0) {
                return failure(
                        "data mismatch in ping " + ping + ": wrote " + text(startMr) + ", read back " + text(rdmaMr));
            }
            if (opt.verbose()) out.println("ping data: " + text(rdmaMr));
        }
        id.disconnect();
        return 0;
    }

    /** rping's ping data: the header, then letters from {@code start} cycling A..z, and a NUL in the last byte. */
    static void fillPing(MemorySegment buf, int ping, int start) {
        byte[] head = ("rdma-ping-" + ping + ": ").getBytes(StandardCharsets.US_ASCII);
        int size = (int) Math.min(buf.byteSize(), Integer.MAX_VALUE);
        byte[] data = new byte[size];
        System.arraycopy(head, 0, data, 0, Math.min(head.length, size));
        int c = start;
        for (int i = head.length; i < size; i++) {
            data[i] = (byte) c;
            c = c == 'z' ? 'A' : c + 1;
        }
        data[size - 1] = 0;
        MemorySegment.copy(data, 0, buf, ValueLayout.JAVA_BYTE, 0, size);
    }

    // ---- server -------------------------------------------------------------------------------------------------

    private int serve() throws Exception {
        listener = CmId.create(channel, PortSpace.TCP);
        listener.bind(new InetSocketAddress(InetAddress.getByName(opt.address()), opt.port()));
        listener.listen(3);
        out.println("rping server listening on " + listener.localAddress());
        CmEvent req = expect(CmEventType.CONNECT_REQUEST, "a connection request", Duration.ofMinutes(10));
        id = req.id();
        setUp(id.deviceName());
        toRts(id);
        postRecv();
        id.accept(new ConnParam()
                .qpNum(qp.qpNum())
                .responderResources(Math.min(1, req.initiatorDepth()))
                .initiatorDepth(Math.min(1, req.responderResources())));
        expect(CmEventType.ESTABLISHED, "the client's confirmation");
        while (true) {
            if (awaitRecv() < 0) break; // the client disconnected: done
            Advert source = advert();
            if (source.size() > opt.size())
                return failure(
                        "the client advertises " + source.size() + " bytes, more than this server's -S " + opt.size());
            rdma(WrOpcode.RDMA_READ, source, source.size());
            if (opt.verbose()) out.println("server ping data: " + text(rdmaMr));
            send(sendMr, INFO_BYTES); // go ahead
            if (awaitRecv() < 0) return failure("the client went away before advertising its sink buffer");
            Advert sink = advert();
            int len = (int) Math.min(strlen(rdmaMr.segment()) + 1, opt.size());
            if (len > sink.size())
                return failure("the client's sink buffer holds " + sink.size() + " bytes, the data " + len);
            rdma(WrOpcode.RDMA_WRITE, sink, len);
            send(sendMr, INFO_BYTES); // go ahead
        }
        id.disconnect();
        return 0;
    }

    record Advert(long addr, int rkey, int size) {}

    private Advert advert() {
        MemorySegment m = recvMr.segment();
        ValueLayout.OfLong be64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        ValueLayout.OfInt be32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        return new Advert(m.get(be64, 0), m.get(be32, 8), m.get(be32, 12));
    }

    // ---- shared -------------------------------------------------------------------------------------------------

    private void setUp(String device) {
        ctx = Verbs.device(device).open();
        pd = ctx.allocPd();
        cq = ctx.createCq(32, null);
        qp = pd.createQueuePair(QpInitAttr.builder(cq)
                .maxSendWr(16)
                .maxRecvWr(2)
                .maxSendSge(1)
                .maxRecvSge(1)
                .build());
        recvMr = register(INFO_BYTES, Access.LOCAL_WRITE);
        sendMr = register(INFO_BYTES);
        rdmaMr = register(opt.size(), Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE);
    }

    private MemoryRegion register(int bytes, Access... access) {
        return pd.registerMemory(arena.allocate(bytes, 64), access);
    }

    /** INIT (again), RTR, RTS with the attributes rdma_cm computed for this connection. */
    private void toRts(CmId conn) throws CmException {
        qp.modify(conn.initQpAttr(QpState.INIT));
        qp.modify(conn.initQpAttr(QpState.RTR));
        qp.modify(conn.initQpAttr(QpState.RTS));
    }

    private void postRecv() {
        qp.postRecv(new RecvWorkRequest().wrId(1).buffer(recvMr, 0, INFO_BYTES));
    }

    private void advertise(MemoryRegion mr) throws Exception {
        MemorySegment m = sendMr.segment();
        m.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 0, mr.address());
        m.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 8, mr.rkey());
        m.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 12, opt.size());
        send(sendMr, INFO_BYTES);
    }

    private void send(MemoryRegion mr, int len) throws Exception {
        qp.postSend(new SendWorkRequest()
                .wrId(2)
                .opcode(WrOpcode.SEND)
                .buffer(mr, 0, len)
                .signaled(true));
        awaitCompletion(WcOpcode.SEND);
    }

    private void rdma(WrOpcode op, Advert remote, int len) throws Exception {
        qp.postSend(new SendWorkRequest()
                .wrId(3)
                .opcode(op)
                .buffer(rdmaMr, 0, len)
                .remote(remote.addr(), remote.rkey())
                .signaled(true));
        awaitCompletion(op == WrOpcode.RDMA_READ ? WcOpcode.RDMA_READ : WcOpcode.RDMA_WRITE);
    }

    /** Waits for the next receive (reposting it); its byte count, or -1 when the peer disconnected first. */
    private int awaitRecv() throws Exception {
        WorkCompletion wc = awaitCompletion(WcOpcode.RECV);
        if (wc == null) return -1;
        int len = wc.byteLen;
        if (len != INFO_BYTES)
            throw new IllegalStateException("received " + len + " bytes, not rping's 16-byte advertisement");
        postRecv();
        return len;
    }

    /** The completion of {@code op} (send completions that arrive meanwhile are consumed), or null on a disconnect. */
    private WorkCompletion awaitCompletion(WcOpcode op) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            int n = cq.poll(wcs, 1);
            if (n == 1) {
                WorkCompletion wc = wcs[0];
                if (wc.status == WcStatus.WR_FLUSH_ERR && disconnected) return null;
                if (wc.status != WcStatus.SUCCESS)
                    throw new IllegalStateException(
                            wc.opcode + " completed with " + wc.status + ": " + wc.status.describe());
                if (wc.opcode == op) return wc;
                if (wc.opcode == WcOpcode.RECV)
                    throw new IllegalStateException("an advertisement arrived while waiting for " + op
                            + ": the peer does not follow rping's protocol");
                continue;
            }
            if (disconnected) return null;
            CmEvent e = channel.next(1);
            if (e != null) {
                if (e.type() == CmEventType.DISCONNECTED) {
                    disconnected = true;
                    if (op == WcOpcode.RECV) return null;
                } else if (e.type() != CmEventType.TIMEWAIT_EXIT) {
                    throw new IllegalStateException("unexpected " + e);
                }
            }
        }
        throw new IllegalStateException("no " + op + " completion within " + STEP_TIMEOUT.toSeconds() + " s");
    }

    private CmEvent expect(CmEventType type, String what) throws Exception {
        return expect(type, what, STEP_TIMEOUT);
    }

    private CmEvent expect(CmEventType type, String what, Duration timeout) throws Exception {
        CmEvent e = channel.next(timeout);
        if (e == null)
            throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what);
        if (e.type() != type) throw new IllegalStateException(what + ": expected " + type.cName() + ", got " + e);
        return e;
    }

    private int failure(String why) {
        out.println("rping failed: " + why);
        return 1;
    }

    private static long strlen(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) if (s.get(ValueLayout.JAVA_BYTE, i) == 0) return i;
        return s.byteSize();
    }

    private static String text(MemoryRegion mr) {
        MemorySegment s = mr.segment();
        byte[] b = s.asSlice(0, strlen(s)).toArray(ValueLayout.JAVA_BYTE);
        return new String(b, StandardCharsets.US_ASCII);
    }

    private void close() {
        if (id != null && !disconnected) {
            try {
                id.disconnect();
            } catch (CmException ignored) {
                // not connected
            }
        }
        if (ctx != null) ctx.close();
        if (id != null) id.close();
        if (listener != null) listener.close();
        channel.close();
        arena.close();
    }

    /**
     * {@code java ... dev.jrdma.examples.Rping -s|-c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-V] [-v]}, as rping; exits
     * with {@link #run}'s status.
     *
     * @param args rping's options
     * @throws Exception when rdma_cm or a verb fails
     * @throws IllegalArgumentException for an unknown option or a missing {@code -a}
     */
    public static void main(String[] args) throws Exception {
        boolean server = false, validate = false, verbose = false;
        String addr = null;
        int port = DEFAULT_PORT, count = 0, size = 64;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-s" -> server = true;
                case "-c" -> server = false;
                case "-a" -> addr = args[++i];
                case "-p" -> port = Integer.parseInt(args[++i]);
                case "-C" -> count = Integer.parseInt(args[++i]);
                case "-S" -> size = Integer.parseInt(args[++i]);
                case "-V" -> validate = true;
                case "-v" -> verbose = true;
                default ->
                    throw new IllegalArgumentException("unknown option " + args[i]
                            + " (rping's -s|-c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-V] [-v])");
            }
        }
        if (addr == null) throw new IllegalArgumentException("-a ADDR is required");
        System.exit(run(new Options(server, addr, port, count, size, validate, verbose), System.out));
    }
}
