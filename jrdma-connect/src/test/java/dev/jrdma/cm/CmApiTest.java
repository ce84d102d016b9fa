package dev.jrdma.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.verbs.Access;
import dev.jrdma.verbs.AddressHandle;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Grh;
import dev.jrdma.verbs.MemoryRegion;
import dev.jrdma.verbs.ProtectionDomain;
import dev.jrdma.verbs.QpAttr;
import dev.jrdma.verbs.QpAttrMask;
import dev.jrdma.verbs.QpInitAttr;
import dev.jrdma.verbs.QpState;
import dev.jrdma.verbs.QpType;
import dev.jrdma.verbs.QueuePair;
import dev.jrdma.verbs.RecvWorkRequest;
import dev.jrdma.verbs.SendWorkRequest;
import dev.jrdma.verbs.Verbs;
import dev.jrdma.verbs.WcOpcode;
import dev.jrdma.verbs.WcStatus;
import dev.jrdma.verbs.WorkCompletion;
import dev.jrdma.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The public rdma_cm API end to end on a kernel RDMA device: both sides in this JVM, each with its own event
 * channel, native QPs moved with {@code rdma_init_qp_attr}'s attributes. Runs where rdma_cm is available (the
 * Soft-RoCE guest: {@code -Djrdma.cm.test.host=10.99.0.1}); on a machine without it only the checks of the error
 * path and the parameters run.
 */
@Timeout(120)
class CmApiTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String HOST = System.getProperty("jrdma.cm.test.host", "10.99.0.1");

    private static void assumeRdmaCm() {
        Assumptions.assumeTrue(
                CmEventChannel.unavailableReason().isEmpty(),
                () -> "no rdma_cm here: " + CmEventChannel.unavailableReason().orElse(""));
    }

    @Test
    void withoutRdmaCmEveryCallSaysWhy() {
        Assumptions.assumeTrue(CmEventChannel.unavailableReason().isPresent(), "rdma_cm is available here");
        CmException e = assertThrows(CmException.class, CmEventChannel::create);
        assertEquals("rdma_create_event_channel", e.call());
        assertTrue(e.getMessage().contains(CmEventChannel.unavailableReason().get()), e.getMessage());
    }

    @Test
    void connParamRefusesWhatTheStructCannotHold() {
        assertThrows(IllegalArgumentException.class, () -> new ConnParam().retryCount(8));
        assertThrows(IllegalArgumentException.class, () -> new ConnParam().rnrRetryCount(-1));
        assertThrows(IllegalArgumentException.class, () -> new ConnParam().initiatorDepth(256));
        assertThrows(IllegalArgumentException.class, () -> new ConnParam().privateData(new byte[256]));
        assertEquals(0xABCDEF, new ConnParam().qpNum(0x7FABCDEF).qpNum(), "a QPN has 24 bits");
        assertEquals(CmEventType.TIMEWAIT_EXIT, CmEventType.of(15));
        assertThrows(IllegalArgumentException.class, () -> CmEventType.of(99));
        assertEquals(PortSpace.UDP, PortSpace.of(0x0111));
    }

    /** One side: its channel, and once the id knows its device, a context, PD, CQ, QP and a buffer. */
    private static final class Side implements AutoCloseable {
        final CmEventChannel channel;
        final Arena arena = Arena.ofShared();
        Context ctx;
        ProtectionDomain pd;
        CompletionQueue cq;
        QueuePair qp;
        MemoryRegion mr;

        Side() throws CmException {
            channel = CmEventChannel.create();
        }

        void open(CmId id, QpType type) throws CmException {
            ctx = Verbs.device(id.deviceName()).open();
            pd = ctx.allocPd();
            cq = ctx.createCq(16, null);
            qp = pd.createQueuePair(QpInitAttr.builder(cq)
                    .type(type)
                    .maxSendWr(8)
                    .maxRecvWr(8)
                    .maxSendSge(1)
                    .maxRecvSge(1)
                    .build());
            mr = pd.registerMemory(arena.allocate(4096, 64), Access.LOCAL_WRITE);
        }

        CmEvent expect(CmEventType type) throws CmException {
            CmEvent e = channel.next(WAIT);
            assertNotNull(e, "no event within " + WAIT + ", expected " + type);
            assertEquals(type, e.type(), e::toString);
            return e;
        }

        WorkCompletion completion() {
            WorkCompletion[] wcs = WorkCompletion.array(1);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                if (cq.poll(wcs) == 1) {
                    assertEquals(WcStatus.SUCCESS, wcs[0].status, wcs[0]::toString);
                    return wcs[0];
                }
                Thread.onSpinWait();
            }
            throw new AssertionError("no completion within " + WAIT);
        }

        @Override
        public void close() {
            if (ctx != null) ctx.close();
            channel.close();
            arena.close();
        }
    }

    private static CmId resolved(Side client, InetSocketAddress server, PortSpace ps) throws CmException {
        CmId id = CmId.create(client.channel, ps);
        id.resolveAddress(null, server, WAIT);
        CmEvent addr = client.expect(CmEventType.ADDR_RESOLVED);
        assertTrue(addr.isSuccess() && addr.id() == id, addr::toString);
        id.resolveRoute(WAIT);
        client.expect(CmEventType.ROUTE_RESOLVED);
        assertNotNull(id.deviceName(), "a resolved id is bound to a device");
        assertTrue(id.portNum() >= 1);
        return id;
    }

    private static CmId listen(Side server, PortSpace ps) throws Exception {
        CmId listener = CmId.create(server.channel, ps);
        listener.bind(new InetSocketAddress(InetAddress.getByName(HOST), 0));
        listener.listen(4);
        assertNotEquals(0, listener.localAddress().getPort(), "a bind to port 0 picks a port");
        return listener;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] prefix(byte[] b, int n) {
        return Arrays.copyOf(b, Math.min(n, b.length));
    }

    @Test
    void reliableConnectionWithPrivateDataBothWaysSendAndDisconnect() throws Exception {
        assumeRdmaCm();
        try (Side server = new Side();
                Side client = new Side();
                CmId listener = listen(server, PortSpace.TCP);
                CmId id = resolved(client, listener.localAddress(), PortSpace.TCP)) {
            client.open(id, QpType.RC);
            QpAttr init = id.initQpAttr(QpState.INIT);
            assertEquals(QpState.INIT, init.state());
            assertTrue(init.has(QpAttrMask.PORT) && init.port() == id.portNum(), init::toString);
            client.qp.modify(init);
            id.connect(new ConnParam()
                    .privateData(bytes("hello from jrdma"))
                    .qpNum(client.qp.qpNum())
                    .initiatorDepth(1)
                    .responderResources(1));

            CmEvent req = server.expect(CmEventType.CONNECT_REQUEST);
            assertSame(listener, req.listenId());
            CmId conn = req.id();
            assertNotEquals(listener, conn, "a request comes with an id of its own");
            assertArrayEquals(bytes("hello from jrdma"), prefix(req.privateData(), 16));
            assertEquals(client.qp.qpNum(), req.qpNum(), "the request names the client's QP");
            assertEquals(1, req.initiatorDepth());
            assertEquals(id.localAddress(), conn.remoteAddress(), "the server sees the client's address");
            server.open(conn, QpType.RC);
            conn.moveQpToRts(server.qp);
            server.qp.postRecv(new RecvWorkRequest().wrId(7).buffer(server.mr, 0, 64));
            conn.accept(new ConnParam().privateData(bytes("welcome")).qpNum(server.qp.qpNum()));

            CmEvent rep = client.expect(CmEventType.CONNECT_RESPONSE);
            assertArrayEquals(bytes("welcome"), prefix(rep.privateData(), 7));
            assertEquals(server.qp.qpNum(), rep.qpNum());
            QpAttr rtr = id.initQpAttr(QpState.RTR);
            assertEquals(server.qp.qpNum(), rtr.destQpNum(), "rdma_init_qp_attr(RTR) names the server's QP");
            assertNotNull(rtr.ah());
            id.moveQpToRts(client.qp);
            id.establish();
            server.expect(CmEventType.ESTABLISHED);

            client.mr.segment().setString(0, "over rdma_cm");
            client.qp.postSend(new SendWorkRequest()
                    .opcode(WrOpcode.SEND)
                    .buffer(client.mr, 0, 13)
                    .signaled(true));
            assertEquals(WcOpcode.SEND, client.completion().opcode);
            WorkCompletion got = server.completion();
            assertEquals(7, got.wrId);
            assertEquals("over rdma_cm", server.mr.segment().getString(0));

            id.disconnect(); // a DREQ: the server hears of it, and its own disconnect (the DREP) completes the client's
            server.expect(CmEventType.DISCONNECTED);
            conn.disconnect();
            assertTrue(client.expect(CmEventType.DISCONNECTED).isSuccess());
            conn.close();
            assertTrue(conn.isClosed());
            assertThrows(CmException.class, conn::disconnect, "a closed id says so");
        }
    }

    @Test
    void typeOfServiceSetBeforeTheRouteIsTheConnectionsTrafficClass() throws Exception {
        assumeRdmaCm();
        try (Side server = new Side();
                Side client = new Side();
                CmId listener = listen(server, PortSpace.TCP);
                CmId id = CmId.create(client.channel, PortSpace.TCP)) {
            assertThrows(IllegalArgumentException.class, () -> id.setTos(256));
            id.resolveAddress(null, listener.localAddress(), WAIT);
            client.expect(CmEventType.ADDR_RESOLVED);
            id.setTos(0x68); // as perftest's -T: after the address, before the route
            id.resolveRoute(WAIT);
            client.expect(CmEventType.ROUTE_RESOLVED);
            client.open(id, QpType.RC);
            client.qp.modify(id.initQpAttr(QpState.INIT));
            id.connect(new ConnParam().qpNum(client.qp.qpNum()));
            CmEvent req = server.expect(CmEventType.CONNECT_REQUEST);
            server.open(req.id(), QpType.RC);
            req.id().moveQpToRts(server.qp);
            req.id().accept(new ConnParam().qpNum(server.qp.qpNum()));
            client.expect(CmEventType.CONNECT_RESPONSE);
            assertEquals(0x68, id.initQpAttr(QpState.RTR).ah().trafficClass, "the route's traffic class is the TOS");
            req.id().close();
        }
        CmId closed;
        try (Side client = new Side()) {
            closed = CmId.create(client.channel, PortSpace.TCP);
            closed.close();
            CmException e = assertThrows(CmException.class, () -> closed.setTos(0));
            assertEquals(0, e.errno(), "a closed id says so without calling librdmacm");
        }
    }

    @Test
    void rejectionCarriesTheReasonAndPrivateData() throws Exception {
        assumeRdmaCm();
        try (Side server = new Side();
                Side client = new Side();
                CmId listener = listen(server, PortSpace.TCP);
                CmId id = resolved(client, listener.localAddress(), PortSpace.TCP)) {
            client.open(id, QpType.RC);
            client.qp.modify(id.initQpAttr(QpState.INIT));
            id.connect(new ConnParam().qpNum(client.qp.qpNum()));
            CmEvent req = server.expect(CmEventType.CONNECT_REQUEST);
            req.id().reject(bytes("not today"));
            CmEvent rej = client.expect(CmEventType.REJECTED);
            assertEquals(CmEvent.REJECT_CONSUMER_DEFINED, rej.status(), rej::toString);
            assertArrayEquals(bytes("not today"), prefix(rej.privateData(), 9));
            assertTrue(rej.statusText().contains("consumer defined"), rej.statusText());
            req.id().close();
        }
    }

    @Test
    void nothingListeningIsARejectionWithInvalidServiceId() throws Exception {
        assumeRdmaCm();
        try (Side server = new Side();
                Side client = new Side()) {
            int port;
            try (CmId probe = listen(server, PortSpace.TCP)) {
                port = probe.localAddress().getPort(); // free now: nothing listens there once closed
            }
            try (CmId id = resolved(client, new InetSocketAddress(InetAddress.getByName(HOST), port), PortSpace.TCP)) {
                client.open(id, QpType.RC);
                client.qp.modify(id.initQpAttr(QpState.INIT));
                id.connect(new ConnParam().qpNum(client.qp.qpNum()));
                CmEvent e = client.channel.next(WAIT);
                assertNotNull(e);
                assertEquals(CmEventType.REJECTED, e.type(), e::toString);
                assertEquals(CmEvent.REJECT_INVALID_SERVICE_ID, e.status(), e::toString);
            }
        }
    }

    @Test
    void addressNoDeviceReachesIsRefusedWithItsErrno() throws Exception {
        assumeRdmaCm();
        try (Side client = new Side();
                CmId id = CmId.create(client.channel, PortSpace.TCP)) {
            CmException e = assertThrows(
                    CmException.class,
                    () -> id.resolveAddress(
                            null, new InetSocketAddress(InetAddress.getByName("192.0.2.1"), 7), Duration.ofSeconds(2)));
            assertEquals("rdma_resolve_addr", e.call());
            assertTrue(e.errno() == 101 || e.errno() == 113 || e.errno() == 99, e::getMessage);
        }
    }

    @Test
    void datagramIdsHandOverQpnAndQkeyAndCarryADatagram() throws Exception {
        assumeRdmaCm();
        try (Side server = new Side();
                Side client = new Side();
                CmId listener = listen(server, PortSpace.UDP);
                CmId id = resolved(client, listener.localAddress(), PortSpace.UDP)) {
            server.open(listener, QpType.UD);
            QpAttr serverInit = listener.initQpAttr(QpState.INIT);
            assertTrue(serverInit.has(QpAttrMask.QKEY), "a UD id's INIT attributes carry the Q_Key: " + serverInit);
            udToRts(server.qp, serverInit);
            server.qp.postRecv(new RecvWorkRequest().wrId(3).buffer(server.mr, 0, Grh.BYTES + 64));

            client.open(id, QpType.UD);
            udToRts(client.qp, id.initQpAttr(QpState.INIT));
            id.connect(new ConnParam().privateData(bytes("ud hello")).qpNum(client.qp.qpNum()));
            CmEvent req = server.expect(CmEventType.CONNECT_REQUEST);
            assertArrayEquals(bytes("ud hello"), prefix(req.privateData(), 8));
            req.id().accept(new ConnParam().qpNum(server.qp.qpNum()));

            CmEvent up = client.expect(CmEventType.ESTABLISHED);
            assertEquals(server.qp.qpNum(), up.qpNum(), up::toString);
            assertEquals(serverInit.qkey(), up.qkey(), "the SIDR reply carries the server's Q_Key");
            assertNotNull(up.ah(), "a UD ESTABLISHED event carries the address handle attributes");
            try (AddressHandle ah = client.pd.createAddressHandle(up.ah())) {
                client.mr.segment().setString(0, "datagram via rdma_cm");
                client.qp.postSend(new SendWorkRequest()
                        .opcode(WrOpcode.SEND)
                        .buffer(client.mr, 0, 21)
                        .ud(ah, up.qpNum(), up.qkey())
                        .signaled(true));
                client.completion();
                WorkCompletion wc = server.completion();
                assertEquals(3, wc.wrId);
                assertEquals(client.qp.qpNum(), wc.srcQp);
                assertEquals(Grh.BYTES + 21, wc.byteLen);
                MemorySegment payload = server.mr.segment().asSlice(Grh.BYTES);
                assertEquals("datagram via rdma_cm", payload.getString(0));
                assertEquals(0, payload.get(ValueLayout.JAVA_BYTE, 20));
            }
            req.id().close();
        }
    }

    private static void udToRts(QueuePair qp, QpAttr init) {
        qp.modify(init);
        dev.jrdma.verbs.UdWalk.fromInit(qp, 0);
    }
}
