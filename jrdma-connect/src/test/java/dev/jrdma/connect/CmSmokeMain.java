package dev.jrdma.connect;

import dev.jrdma.verbs.WcStatus;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * rdma_cm end to end on a native device (run it in the Soft-RoCE guest, where rxe0 has 10.99.0.1):
 * <pre>vm/run-in-guest -- java --enable-native-access=ALL-UNNAMED -cp CP dev.jrdma.connect.CmSmokeMain 10.99.0.1</pre>
 * Prints one line per check and exits 0 when all pass.
 */
public final class CmSmokeMain {
    private static int failures;

    private static void check(String what, boolean ok, Object detail) {
        System.out.println((ok ? "PASS " : "FAIL ") + what + (detail == null ? "" : ": " + detail));
        if (!ok) failures++;
    }

    public static void main(String[] args) throws Exception {
        String host = args.length > 0 ? args[0] : "10.99.0.1";
        System.out.println(
                "rdma_cm: " + dev.jrdma.cm.CmEventChannel.unavailableReason().orElse("available"));
        EndpointConfig cfg = EndpointConfig.builder()
                .connectionManager(ConnectionManager.RDMA_CM)
                .timeout(Duration.ofSeconds(20))
                .slabSize(1 << 16)
                .recvQueueDepth(4)
                .sendQueueDepth(16)
                .cqSize(256)
                .remoteAccess(
                        dev.jrdma.verbs.Access.REMOTE_READ,
                        dev.jrdma.verbs.Access.REMOTE_WRITE,
                        dev.jrdma.verbs.Access.REMOTE_ATOMIC)
                .build();
        check(
                "AUTO picks rdma_cm for the native default device",
                CmConnector.useCm(cfg.toBuilder()
                        .connectionManager(ConnectionManager.AUTO)
                        .build()),
                null);

        long t0;
        // an address no device reaches
        try {
            Endpoint.connect(
                            "192.0.2.1",
                            7999,
                            cfg.toBuilder().timeout(Duration.ofSeconds(5)).build())
                    .close();
            check("unreachable address fails", false, "connected");
        } catch (RdmaConnectException e) {
            check(
                    "unreachable address -> " + e.reason(),
                    e.reason() == RdmaConnectException.Reason.ADDRESS_ERROR
                            || e.reason() == RdmaConnectException.Reason.TIMEOUT,
                    e.getMessage());
        }

        try (ServerEndpoint server = ServerEndpoint.bind(new InetSocketAddress(host, 0), cfg);
                RegisteredBuffer exported = server.pool().allocate(4096)) {
            check(
                    "server uses rdma_cm",
                    server.connectionManager() == ConnectionManager.RDMA_CM,
                    server.localAddress() + " on " + server.group().device().name());
            exported.segment().fill((byte) 0);
            exported.byteBuffer().put(100, "exported over rdma_cm".getBytes(StandardCharsets.UTF_8));
            server.export(exported.remote());
            server.filter(
                    (addr, priv) -> new String(priv, StandardCharsets.UTF_8).equals("go away") ? "not today" : null);

            // rejected with a reason
            CompletableFuture<Endpoint> acc0 = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(15));
                } catch (RdmaConnectException e) {
                    return null;
                }
            });
            try {
                Endpoint.connect(
                                host,
                                server.port(),
                                cfg.toBuilder()
                                        .privateData("go away".getBytes(StandardCharsets.UTF_8))
                                        .build())
                        .close();
                check("rejection", false, "connected");
            } catch (RdmaConnectException e) {
                check(
                        "rejected -> " + e.reason(),
                        e.reason() == RdmaConnectException.Reason.REJECTED
                                && e.getMessage().contains("not today"),
                        e.getMessage());
            }

            try (Endpoint c = Endpoint.connect(
                            host,
                            server.port(),
                            cfg.toBuilder()
                                    .privateData("hi".getBytes(StandardCharsets.UTF_8))
                                    .build());
                    Endpoint s = acc0.get();
                    RegisteredBuffer local = c.pool().allocate(4096)) {
                check("connected through rdma_cm", s != null && c.isConnected(), c + " / " + s);
                check(
                        "private data arrived",
                        new String(s.peerPrivateData(), StandardCharsets.UTF_8).equals("hi"),
                        null);
                check(
                        "export arrived as this connection's own window",
                        s.localExport() != null
                                && s.localExport().remote().equals(c.peerExport())
                                && c.peerExport().address() == exported.address()
                                && c.peerExport().rkey() != exported.rkey(),
                        c.peerExport());
                c.sendSync("over rdma_cm".getBytes(StandardCharsets.UTF_8));
                check("send/receive", s.receive(Duration.ofSeconds(10)).text().equals("over rdma_cm"), null);
                for (int i = 0; i < 100; i++) c.send(new byte[] {(byte) i});
                boolean inOrder = true;
                for (int i = 0; i < 100; i++)
                    inOrder &= s.receive(Duration.ofSeconds(10)).bytes()[0] == (byte) i;
                check("100 sends through 4 receive buffers, in order, no RNR", inOrder, null);
                c.readSync(local, 0, c.peerExport(), 100, 21);
                byte[] got = new byte[21];
                local.byteBuffer().get(0, got);
                check(
                        "RDMA read",
                        new String(got, StandardCharsets.UTF_8).equals("exported over rdma_cm"),
                        new String(got, StandardCharsets.UTF_8));
                local.byteBuffer().put(0, "written".getBytes(StandardCharsets.UTF_8));
                c.writeSync(local, 0, c.peerExport(), 200, 7);
                byte[] w = new byte[7];
                exported.byteBuffer().get(200, w);
                check("RDMA write", new String(w, StandardCharsets.UTF_8).equals("written"), null);
                long before = c.fetchAndAddSync(c.peerExport(), 8, 5);
                check(
                        "fetch-and-add",
                        before == 0 && exported.segment().get(ValueLayout.JAVA_LONG, 8) == 5,
                        exported.segment().get(ValueLayout.JAVA_LONG, 8));
                RemoteLock lock = new RemoteLock(c, c.peerExport().slice(16, 8));
                check("lock", lock.tryLock(Duration.ofSeconds(1)), null);
                lock.unlock();
                try {
                    c.writeSync(local, 0, new RemoteBuffer(exported.address(), exported.rkey() ^ 0x5A5A00, 64), 0, 8);
                    check("wrong rkey fails", false, null);
                } catch (RdmaException e) {
                    check("wrong rkey -> " + e.status(), e.status() == WcStatus.REM_ACCESS_ERR, e.getMessage());
                }
            }

            // graceful close seen by the peer
            CompletableFuture<Endpoint> acc = CompletableFuture.supplyAsync(() -> {
                try {
                    return server.accept(Duration.ofSeconds(15));
                } catch (RdmaConnectException e) {
                    throw new RuntimeException(e);
                }
            });
            Endpoint c2 = Endpoint.connect(host, server.port(), cfg);
            try (Endpoint s2 = acc.get()) {
                CompletableFuture<Message> waiting = s2.receive();
                t0 = System.nanoTime();
                c2.close();
                try {
                    waiting.get(10, java.util.concurrent.TimeUnit.SECONDS);
                    check("peer close", false, "got a message");
                } catch (java.util.concurrent.ExecutionException e) {
                    RdmaException r = (RdmaException) e.getCause();
                    check(
                            "peer close -> " + r.kind(),
                            r.kind() == RdmaException.Kind.PEER_CLOSED,
                            r.getMessage() + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
                }
            }
        }
        // nothing listening (after the connections: a cold JVM under TCG spends most of the 10 s on its first rdma_cm
        // calls)
        t0 = System.nanoTime();
        try {
            Endpoint.connect(
                            host,
                            7999,
                            cfg.toBuilder().timeout(Duration.ofSeconds(10)).build())
                    .close();
            check("nothing listening fails", false, "connected");
        } catch (RdmaConnectException e) {
            check(
                    "nothing listening -> " + e.reason(),
                    e.reason() == RdmaConnectException.Reason.NOTHING_LISTENING,
                    e.getMessage() + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        }
        System.out.println(failures == 0 ? "ALL PASS" : failures + " FAILED");
        System.exit(failures == 0 ? 0 : 1);
    }
}
