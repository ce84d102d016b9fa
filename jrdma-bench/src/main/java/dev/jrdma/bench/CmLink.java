package dev.jrdma.bench;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import dev.jrdma.cm.ConnParam;
import dev.jrdma.cm.PortSpace;
import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.CompletionChannel;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * perftest's exchange with {@code -R}: an rdma_cm RC connection on the test's port (perftest's "comm" context:
 * {@code create_comm_struct} with {@code use_rdma_cm}). Each message is one signalled SEND of exactly its size;
 * each side keeps one receive of {@code sizeof(struct pingpong_dest)} (56) bytes posted and reposts it after every
 * message. The server listens on every address, accepts one connection and stops listening (the test QPs' own
 * rdma_cm connections then use the same port); the client connects, retrying while nothing listens yet.
 */
final class CmLink implements PerftestWire.Link {
    /** perftest's wr_id of the exchange messages (SYNC_SPEC_ID). */
    private static final int SYNC_WR_ID = 5;

    private static final int MAX_MESSAGE = PerftestWire.BINARY_KEY_SIZE, SEND_AT = 0, RECV_AT = 64;

    private final CmEventChannel events;
    private CmId listener, id;
    private Context ctx;
    private Arena arena;
    private MemoryRegion mr;
    private CompletionChannel completions;
    private CompletionQueue sendCq, recvCq;
    private QueuePair qp;
    private int readTimeoutMs;
    private boolean disconnected, closed;
    private final WorkCompletion[] wc = WorkCompletion.array(1);

    private CmLink() throws CmException {
        events = CmEventChannel.create();
    }

    /** Refuses -R where rdma_cm cannot work: no librdmacm, or a device (-d) that is not a kernel RDMA device. */
    static void checkAvailable(String device) {
        checkAvailable(device, "-R");
    }

    /** As {@link #checkAvailable(String)}, naming {@code flag} (-R, -R -T or -z) in the refusal. */
    static void checkAvailable(String device, String flag) {
        if (device != null) {
            String provider = Verbs.device(device).provider();
            if (!provider.equals("native"))
                throw new BenchException(
                        flag + " connects through rdma_cm (librdmacm), which only kernel RDMA devices have: " + device
                                + " is a " + provider + " device; drop " + flag
                                + " (its TCP exchange works with perftest too)");
        }
        CmEventChannel.unavailableReason().ifPresent(why -> {
            throw new BenchException(flag + " needs librdmacm: " + why);
        });
    }

    /** Client: connects to the -R server on host:port, retrying while nothing listens there, for at most timeoutSec. */
    static CmLink connect(String host, int port, int timeoutSec) {
        InetSocketAddress server;
        try {
            server = new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new BenchException("unknown host '" + host + "': check the name or give an IP address");
        }
        long deadline = System.nanoTime() + timeoutSec * 1_000_000_000L;
        CmLink l = null;
        try {
            l = new CmLink();
            String last = "";
            while (System.nanoTime() < deadline) {
                CmEvent answer = l.tryConnect(server, deadline);
                if (answer == null) return l;
                last = answer.toString();
                CmSteps.pause(200);
            }
            throw new BenchException(
                    "no rdma_cm server answered on " + host + ":" + port + " within " + timeoutSec + " s (last: " + last
                            + "): is the server running with -R, on the same -p, on an address rdma_cm reaches (an RDMA device's IP)?");
        } catch (CmException e) {
            if (l != null) l.close();
            throw new BenchException("rdma_cm connection to " + host + ":" + port + " failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            if (l != null) l.close();
            throw e;
        }
    }

    /** One attempt: null when connected, else the event that refused it (nothing listens yet). */
    private CmEvent tryConnect(InetSocketAddress server, long deadline) throws CmException {
        if (id != null) id.close();
        id = CmId.create(events, PortSpace.TCP);
        CmSteps.resolve(id, events, server, -1); // perftest's exchange keeps the default TOS, -T is for the QPs
        if (ctx == null) setUp(id.deviceName());
        qp.modify(new QpAttr().state(QpState.RESET));
        qp.modify(id.initQpAttr(QpState.INIT));
        postRecv();
        id.connect(new ConnParam()
                .qpNum(qp.qpNum())
                .responderResources(0)
                .initiatorDepth(0)
                .retryCount(7)
                .rnrRetryCount(7));
        CmEvent e = events.next(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        if (e == null)
            throw new BenchException("the rdma_cm server at " + server + " did not answer the connection request");
        switch (e.type()) {
            case CONNECT_RESPONSE -> {
                id.moveQpToRts(qp); // INIT again: with the rights the connection grants
                id.establish();
                return null;
            }
            case REJECTED, UNREACHABLE, CONNECT_ERROR -> {
                return e;
            }
            default -> throw new BenchException("unexpected rdma_cm event while connecting to " + server + ": " + e);
        }
    }

    /**
     * Server: listens on every address's {@code port}, calls {@code listening} (the banner), accepts one client
     * within acceptTimeoutSec (0 = for ever) and stops listening.
     */
    static CmLink accept(int port, int acceptTimeoutSec, Runnable listening) {
        CmLink l = null;
        try {
            l = new CmLink();
            l.listener = CmId.create(l.events, PortSpace.TCP);
            l.listener.bind(new InetSocketAddress(
                    InetAddress.getByAddress(new byte[4]), port)); // 0.0.0.0, as perftest (AF_INET)
            l.listener.listen(1);
            listening.run();
            long deadline =
                    acceptTimeoutSec == 0 ? Long.MAX_VALUE : System.nanoTime() + acceptTimeoutSec * 1_000_000_000L;
            CmEvent req;
            while ((req = l.events.next(1000)) == null) {
                if (System.nanoTime() > deadline)
                    throw new BenchException(
                            "no rdma_cm client connected to port " + port + " within " + acceptTimeoutSec + " s");
            }
            if (req.type() != CmEventType.CONNECT_REQUEST)
                throw new BenchException("unexpected rdma_cm event while listening on port " + port + ": " + req);
            l.id = req.id();
            l.setUp(l.id.deviceName());
            l.id.moveQpToRts(l.qp);
            l.postRecv();
            l.id.accept(new ConnParam()
                    .qpNum(l.qp.qpNum())
                    .responderResources(0)
                    .initiatorDepth(0)
                    .retryCount(7)
                    .rnrRetryCount(7));
            l.listener.close(); // the test QPs' rdma_cm listener binds this port next
            l.listener = null;
            return l;
        } catch (CmException | UnknownHostException e) {
            if (l != null) l.close();
            throw new BenchException(
                    "rdma_cm on port " + port + " failed: " + e.getMessage() + " (another server on this port? use -p)",
                    e);
        } catch (RuntimeException e) {
            if (l != null) l.close();
            throw e;
        }
    }

    /** The verbs device rdma_cm resolved the peer to: the test's QPs use it too. */
    String deviceName() {
        return ctx.device().name();
    }

    @SuppressWarnings("MustBeClosedChecker") // the arena is a field, closed by close()
    private void setUp(String device) {
        if (device == null) throw new BenchException("rdma_cm bound the connection to no RDMA device");
        ctx = Verbs.device(device).open();
        ProtectionDomain pd = ctx.allocPd();
        arena = Arena.ofShared();
        mr = pd.registerMemory(arena.allocate(RECV_AT + MAX_MESSAGE, 64), Access.LOCAL_WRITE);
        completions = ctx.createCompletionChannel();
        sendCq = ctx.createCq(4, completions);
        recvCq = ctx.createCq(4, completions);
        qp = pd.createQueuePair(QpInitAttr.builder(sendCq)
                .recvCq(recvCq)
                .maxSendWr(1)
                .maxRecvWr(1)
                .build());
    }

    private void postRecv() {
        qp.postRecv(new RecvWorkRequest().wrId(SYNC_WR_ID).buffer(mr, RECV_AT, MAX_MESSAGE));
    }

    @Override
    public void write(byte[] b) throws IOException {
        if (b.length > MAX_MESSAGE)
            throw new IllegalArgumentException(
                    b.length + " bytes do not fit perftest's " + MAX_MESSAGE + "-byte receive");
        MemorySegment.copy(b, 0, mr.segment(), ValueLayout.JAVA_BYTE, SEND_AT, b.length);
        qp.postSend(new SendWorkRequest()
                .wrId(SYNC_WR_ID)
                .opcode(WrOpcode.SEND)
                .buffer(mr, SEND_AT, b.length)
                .signaled(true));
        WorkCompletion done = await(sendCq, Math.max(readTimeoutMs, 60_000));
        if (!done.isSuccess()) throw new EOFException("the rdma_cm connection failed: " + done.explain());
    }

    @Override
    public void readFully(byte[] b) throws IOException {
        WorkCompletion got = await(recvCq, readTimeoutMs);
        if (!got.isSuccess()) throw new EOFException("the rdma_cm connection closed: " + got.explain());
        if (got.byteLen < b.length)
            throw new IOException(
                    "the peer sent " + got.byteLen + " bytes where perftest's exchange sends " + b.length);
        MemorySegment.copy(mr.segment(), ValueLayout.JAVA_BYTE, RECV_AT, b, 0, b.length);
        postRecv();
    }

    /**
     * The next completion of cq: blocks on the completion channel (a wait may last a whole run), looks at the
     * rdma_cm events between waits (a peer that went away disconnects), gives up after timeoutMs (0 = never).
     */
    private WorkCompletion await(CompletionQueue cq, int timeoutMs) throws IOException {
        long deadline = timeoutMs == 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            if (cq.poll(wc, 1) == 1) return wc[0];
            cq.requestNotify(false);
            if (cq.poll(wc, 1) == 1) return wc[0];
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) throw new SocketTimeoutException();
            CompletionQueue ready = completions.awaitEvent(Duration.ofMillis(Math.min(left, 200)));
            if (ready != null) ready.ackEvents(1);
            else if (!disconnected) checkPeer();
        }
    }

    private void checkPeer() throws IOException {
        try {
            CmEvent e = events.next(0);
            if (e != null && e.type() == CmEventType.DISCONNECTED) {
                disconnected = true;
                throw new EOFException("the peer disconnected the rdma_cm connection");
            }
        } catch (CmException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    @Override
    public void readTimeout(int ms) {
        readTimeoutMs = ms;
    }

    @Override
    public int readTimeout() {
        return readTimeoutMs;
    }

    @Override
    public boolean binaryKeys() {
        return true;
    }

    /** Disconnects and frees everything; idempotent (the exchange closes it, and so does its try-with-resources). */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (id != null) {
            if (!disconnected) {
                try {
                    id.disconnect();
                } catch (CmException ignored) {
                    // never connected, or already gone
                }
            }
            id.close();
        }
        if (listener != null) listener.close();
        if (ctx != null) ctx.close();
        if (arena != null) arena.close();
        events.close();
    }
}
