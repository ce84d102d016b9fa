package dev.jrdma.connect;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * The other process of the multi-process tests, started with the test's own java and class path.
 * <ul>
 * <li>{@code lock HOST PORT LOCAL_ADDR ITERATIONS}: connect from LOCAL_ADDR, then ITERATIONS times: take the lock on
 *     the server's exported word 0, read the counter (word 1) by RDMA READ, add one, write it back, unlock.</li>
 * <li>{@code halt HOST PORT LOCAL_ADDR}: connect, say "ready", then die without closing anything.</li>
 * <li>{@code echo HOST PORT LOCAL_ADDR}: connect, send "hello", wait for its echo, print {@code ECHO <microseconds from
 *     the connect's start to the echo>}, then wait to be killed (the test ends it with SIGTERM or SIGKILL).</li>
 * </ul>
 */
public final class ChildMain {
    public static void main(String[] args) throws Exception {
        System.setProperty("jrdma.connect.rnrRetry", "0");
        String mode = args[0], host = args[1];
        int port = Integer.parseInt(args[2]);
        EndpointConfig cfg = EndpointConfig.builder()
                .localAddress(args[3])
                .timeout(Duration.ofSeconds(10))
                .retryConnect(true)
                .slabSize(1 << 16)
                .recvQueueDepth(4)
                .sendQueueDepth(8)
                .cqSize(256)
                .build();
        switch (mode) {
            case "lock" -> {
                int iterations = Integer.parseInt(args[4]);
                try (Endpoint ep = Endpoint.connect(host, port, cfg);
                        RegisteredBuffer local = ep.pool().allocate(8)) {
                    RemoteBuffer shared = ep.peerExport();
                    RemoteLock lock = new RemoteLock(ep, shared.slice(0, 8));
                    for (int i = 0; i < iterations; i++) {
                        lock.lock();
                        try {
                            ep.readSync(local, 0, shared, 8, 8);
                            long v = local.segment().get(ValueLayout.JAVA_LONG, 0);
                            LockSupport.parkNanos(200_000); // widen the window a missing lock would leave open
                            local.segment().set(ValueLayout.JAVA_LONG, 0, v + 1);
                            ep.writeSync(local, 0, shared, 8, 8);
                        } finally {
                            lock.unlock();
                        }
                    }
                    ep.sendSync("done".getBytes());
                    // the server's ack (everything arrived) comes once every child is done: wait as long as the test
                    // waits
                    // for the slowest (the children start as separate JVMs, seconds apart on a loaded machine). With 10
                    // s, a
                    // child that finished more than 10 s before a sibling left early and the test's ack to it failed
                    ep.receive(Duration.ofSeconds(100));
                }
                System.out.println("child " + args[3] + " done");
            }
            case "halt" -> {
                Endpoint ep = Endpoint.connect(host, port, cfg);
                ep.sendSync("ready".getBytes());
                ep.receive(Duration.ofSeconds(10));
                Runtime.getRuntime().halt(3); // no close, no goodbye
            }
            case "echo" -> {
                long start = System.nanoTime();
                Endpoint ep = Endpoint.connect(host, port, cfg);
                ep.sendSync("hello".getBytes());
                String echo = ep.receive(Duration.ofSeconds(10)).text();
                System.out.println("ECHO " + (System.nanoTime() - start) / 1000 + " " + echo);
                System.out.flush();
                Thread.sleep(60_000); // until killed, holding the endpoint open as a running client does
            }
            default -> throw new IllegalArgumentException(mode);
        }
    }

    static Process start(String... args) throws java.io.IOException {
        String javaBin = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(
                javaBin,
                "--enable-native-access=ALL-UNNAMED",
                "-Djrdma.soft.port="
                        + dev.jrdma.soft.SoftProvider.configuredPort(), // this JVM's devices' port (tests: a free one)
                "-cp",
                System.getProperty("java.class.path"),
                ChildMain.class.getName()));
        cmd.addAll(java.util.List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }
}
