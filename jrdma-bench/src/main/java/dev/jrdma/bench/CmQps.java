package dev.jrdma.bench;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import dev.jrdma.cm.ConnParam;
import dev.jrdma.cm.PortSpace;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.UdWalk;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * perftest's {@code -R}: the test's QPs connected through rdma_cm, one rdma_cm id per QP, on the test's port
 * ({@code create_rdma_cm_connection}). RC: the client connects each QP, the server accepts each request (QP
 * attributes from {@code rdma_init_qp_attr}, 7 retries, RNR retry 7, responder resources = initiator depth = the
 * outstanding reads of a read/atomic test, min RNR timer 12). UD: a datagram id per QP (SIDR): the client learns the
 * server QP's number, Q_Key and address from the answer; in a latency test it then sends one SEND with immediate
 * (its QP number, 4 bytes) so the server can make its address handle from that receive. The client retries a
 * request nobody listens to yet (the server starts listening while the client connects).
 */
final class CmQps implements AutoCloseable {
    /** Where a UD QP sends: the peer QP, its Q_Key and the address handle that reaches it. */
    record UdPeer(AddressHandle ah, int qpn, int qkey) {}

    private static final int MIN_RNR_TIMER = 12;

    private final CmEventChannel events;
    private final QueuePair[] qps;
    private final boolean ud, client;
    private final int responderResources, timeoutSec;
    /** The connections' retry count (perftest's --retry_count, default 7). */
    private final int retryCount;

    private final CmId[] ids;
    private CmId listener;
    private final UdPeer[] peers;
    private boolean closed;

    private CmQps(QueuePair[] qps, boolean ud, boolean client, int responderResources, int timeoutSec, int retryCount)
            throws CmException {
        this.retryCount = retryCount;
        this.events = CmEventChannel.create();
        this.qps = qps;
        this.ud = ud;
        this.client = client;
        this.responderResources = responderResources;
        this.timeoutSec = timeoutSec;
        this.ids = new CmId[qps.length];
        this.peers = new UdPeer[qps.length];
    }

    /** Server, step 1: listens on the port (before the exchange tells the client to connect). */
    static CmQps listen(int port, QueuePair[] qps, boolean ud, int responderResources, int timeoutSec, int retryCount) {
        CmQps c = null;
        try {
            c = new CmQps(qps, ud, false, responderResources, timeoutSec, retryCount);
            c.listener = CmId.create(c.events, ud ? PortSpace.UDP : PortSpace.TCP);
            c.listener.bind(new InetSocketAddress(
                    InetAddress.getByAddress(new byte[4]), port)); // 0.0.0.0, as perftest (AF_INET)
            c.listener.listen(qps.length);
            return c;
        } catch (CmException | UnknownHostException e) {
            if (c != null) c.close();
            throw new BenchException(
                    "rdma_cm: cannot listen for the test's QPs on port " + port + ": " + e.getMessage(), e);
        }
    }

    /** Client: connects every QP to the server's port, in order. */
    static CmQps connect(
            String host,
            int port,
            QueuePair[] qps,
            boolean ud,
            int responderResources,
            int timeoutSec,
            String device,
            int retryCount,
            int tos) {
        CmQps c = null;
        try {
            c = new CmQps(qps, ud, true, responderResources, timeoutSec, retryCount);
            InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(host), port);
            for (int i = 0; i < qps.length; i++) c.connectOne(i, server, device, tos);
            return c;
        } catch (UnknownHostException e) {
            if (c != null) c.close();
            throw new BenchException("unknown host '" + host + "'");
        } catch (CmException e) {
            if (c != null) c.close();
            throw new BenchException("rdma_cm: connecting the test's QPs failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            if (c != null) c.close();
            throw e;
        }
    }

    private void connectOne(int i, InetSocketAddress server, String device, int tos) throws CmException {
        long deadline = System.nanoTime() + timeoutSec * 1_000_000_000L;
        String last = "";
        while (System.nanoTime() < deadline) {
            if (ids[i] != null) ids[i].close();
            CmId id = ids[i] = CmId.create(events, ud ? PortSpace.UDP : PortSpace.TCP);
            CmSteps.resolve(id, events, server, tos);
            checkDevice(id, device);
            QueuePair qp = qps[i];
            qp.modify(new QpAttr().state(QpState.RESET));
            qp.modify(id.initQpAttr(QpState.INIT));
            if (ud) toRtsUd(qp);
            id.connect(param(qp));
            CmEvent e = events.next(Duration.ofSeconds(timeoutSec));
            if (e == null)
                throw new BenchException("rdma_cm: the server at " + server + " did not answer the request of QP " + i);
            switch (e.type()) {
                case CONNECT_RESPONSE -> {
                    // INIT again: with the rights the server's answer grants
                    id.moveQpToRts(qp, rtr -> rtr.minRnrTimer(MIN_RNR_TIMER));
                    id.establish();
                    return;
                }
                case ESTABLISHED -> { // a UD id: the server's QP, Q_Key and address
                    if (e.ah() == null) throw new BenchException("rdma_cm: the server's UD answer carries no address");
                    peers[i] = new UdPeer(qp.pd().createAddressHandle(e.ah()), e.qpNum(), e.qkey());
                    return;
                }
                case REJECTED, UNREACHABLE, CONNECT_ERROR -> last = e.toString(); // not listening yet: again
                default -> throw new BenchException("rdma_cm: unexpected event while connecting QP " + i + ": " + e);
            }
            CmSteps.pause(100);
        }
        throw new BenchException(
                "rdma_cm: the server did not accept QP " + i + " within " + timeoutSec + " s (last: " + last + ")");
    }

    /**
     * UD latency client: tells the server its QP number in a SEND with immediate to the server's QP (what perftest's
     * server makes its address handle from). The server must have posted its receive before it accepted.
     */
    void announceUdQpNumbers(MemoryRegion mr, long offset, CompletionQueue sendCq, WorkCompletion[] wcs) {
        for (int i = 0; i < qps.length; i++) {
            UdPeer p = peers[i];
            qps[i].postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND_WITH_IMM)
                    .immData(qps[i].qpNum())
                    .buffer(mr, offset, 4)
                    .ud(p.ah(), p.qpn(), p.qkey())
                    .signaled(true)
                    .wrId(0));
            WorkCompletion wc = awaitCompletion(sendCq, wcs, "the send of QP " + i + "'s number");
            if (!wc.isSuccess())
                throw new BenchException("rdma_cm UD: sending QP " + i + "'s number failed: " + wc.explain());
        }
    }

    /**
     * Server, step 2: accepts one request per QP. UD latency: a receive of 44 bytes (GRH + the client's QP number)
     * is posted at {@code recvOffset} before each accept, and the client's SEND with immediate gives the peer.
     */
    void accept(
            String device,
            MemoryRegion mr,
            long recvOffset,
            boolean udLatency,
            CompletionQueue recvCq,
            WorkCompletion[] wcs) {
        try {
            for (int i = 0; i < qps.length; i++) {
                CmEvent req = events.next(Duration.ofSeconds(timeoutSec));
                if (req == null)
                    throw new BenchException(
                            "rdma_cm: the client did not connect QP " + i + " within " + timeoutSec + " s");
                if (req.type() != CmEventType.CONNECT_REQUEST)
                    throw new BenchException("rdma_cm: unexpected event while accepting QP " + i + ": " + req);
                CmId id = ids[i] = req.id();
                checkDevice(id, device);
                QueuePair qp = qps[i];
                qp.modify(new QpAttr().state(QpState.RESET));
                if (ud) {
                    qp.modify(id.initQpAttr(QpState.INIT));
                    toRtsUd(qp);
                    if (udLatency)
                        qp.postRecv(new RecvWorkRequest().wrId(0).buffer(mr, recvOffset, BenchResources.UD_GRH + 4));
                } else {
                    id.moveQpToRts(qp, rtr -> rtr.minRnrTimer(MIN_RNR_TIMER));
                }
                id.accept(param(qp));
                if (ud && udLatency) {
                    WorkCompletion wc = awaitCompletion(recvCq, wcs, "the client's QP number (UD)");
                    if (!wc.isSuccess() || !wc.hasImm())
                        throw new BenchException("rdma_cm UD: the client's first message is not its QP number: " + wc);
                    int qkey = id.initQpAttr(QpState.INIT).qkey();
                    AddressHandle ah = qp.pd()
                            .createAddressHandleFromWc(
                                    wc, mr.segment().asSlice(recvOffset, BenchResources.UD_GRH), id.portNum());
                    peers[i] = new UdPeer(ah, wc.immData, qkey);
                }
            }
            listener.close();
            listener = null;
        } catch (CmException e) {
            throw new BenchException("rdma_cm: accepting the test's QPs failed: " + e.getMessage(), e);
        }
    }

    /** UD QP i's peer, or null when this side does not send (a bandwidth server). */
    UdPeer udPeer(int i) {
        return peers[i];
    }

    private ConnParam param(QueuePair qp) {
        return new ConnParam()
                .qpNum(qp.qpNum())
                .responderResources(responderResources)
                .initiatorDepth(responderResources)
                .retryCount(retryCount)
                .rnrRetryCount(7);
    }

    /** A UD QP needs only the states after INIT (rdma_cm gave INIT its port, P_Key index and Q_Key). */
    private static void toRtsUd(QueuePair qp) {
        UdWalk.fromInit(qp, 0);
    }

    private void checkDevice(CmId id, String device) throws CmException {
        String d = id.deviceName();
        if (!device.equals(d))
            throw new BenchException(
                    "rdma_cm put the test's connection on device " + d + ", the exchange's on " + device);
    }

    private WorkCompletion awaitCompletion(CompletionQueue cq, WorkCompletion[] wcs, String what) {
        long deadline = System.nanoTime() + timeoutSec * 1_000_000_000L;
        while (cq.poll(wcs, 1) == 0) {
            if (System.nanoTime() > deadline)
                throw new BenchException("rdma_cm: no completion within " + timeoutSec + " s for " + what);
            Thread.onSpinWait();
        }
        return wcs[0];
    }

    /**
     * Disconnects (once). RC: the client disconnects every connection and waits (at most 3 s) for their DISCONNECTED, as
     * perftest's client does; the server disconnects (answering the client's request) without waiting. UD ids just go.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (!ud) {
            int disconnecting = 0;
            for (CmId id : ids) {
                if (id == null) continue;
                try {
                    id.disconnect();
                    disconnecting++;
                } catch (CmException ignored) {
                    // not connected (any more)
                }
            }
            if (client) {
                long deadline = System.nanoTime() + 3_000_000_000L;
                try {
                    while (disconnecting > 0 && System.nanoTime() < deadline) {
                        CmEvent e = events.next(100);
                        if (e != null && e.type() == CmEventType.DISCONNECTED) disconnecting--;
                    }
                } catch (CmException ignored) {
                    // the channel failed: the ids go anyway
                }
            }
        }
        for (UdPeer p : peers) if (p != null) p.ah().close();
        for (CmId id : ids) if (id != null) id.close();
        if (listener != null) listener.close();
        events.close();
    }
}
