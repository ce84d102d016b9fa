package dev.jrdma.bench;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/** Server and client of one test in this JVM, on loopback, each with its own output. */
final class Loopback {
    private Loopback() {}

    /** A free TCP port. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    record Outcome<T>(T server, T client, String serverOut, String clientOut) {}

    static <T> Outcome<T> run(Function<PrintStream, T> server, Function<PrintStream, T> client, int timeoutSec)
            throws Exception {
        ByteArrayOutputStream so = new ByteArrayOutputStream(), co = new ByteArrayOutputStream();
        PrintStream sps = new PrintStream(so, true, StandardCharsets.UTF_8),
                cps = new PrintStream(co, true, StandardCharsets.UTF_8);
        // own threads: the common pool has one worker on a 2-core machine, and both sides block
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "loopback");
            t.setDaemon(true);
            return t;
        });
        CompletableFuture<T> s = CompletableFuture.supplyAsync(() -> server.apply(sps), pool);
        CompletableFuture<T> c = CompletableFuture.supplyAsync(() -> client.apply(cps), pool);
        pool.shutdown();
        T cr;
        try {
            cr = c.get(timeoutSec, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("client failed: " + e + "\n--- client:\n" + co + "\n--- server:\n" + so, e);
        }
        T sr;
        try {
            sr = s.get(timeoutSec, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("server failed: " + e + "\n--- client:\n" + co + "\n--- server:\n" + so, e);
        }
        return new Outcome<>(sr, cr, so.toString(StandardCharsets.UTF_8), co.toString(StandardCharsets.UTF_8));
    }
}
