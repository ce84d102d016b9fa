package dev.jrdma.examples;

import dev.jrdma.connect.Endpoint;
import dev.jrdma.connect.RdmaException;
import dev.jrdma.connect.RegisteredBuffer;
import dev.jrdma.connect.RemoteBuffer;
import dev.jrdma.connect.ServerEndpoint;
import dev.jrdma.verbs.Access;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * A remote key-value lookup by one-sided RDMA READ: the server fills a hash table in registered memory and
 * exports it in the handshake; the client finds keys by reading slots (open addressing, linear probing) without
 * any work by the server's CPU.
 * <pre>
 *   slot (64 bytes): u8 used, u8 keyLen, u8 valueLen, 5 bytes pad, key[24], value[32]
 *   jrdma example kv | jrdma example kv --server | jrdma example kv --connect HOST
 * </pre>
 */
public final class KvExample {
    /** The TCP port the key-value server listens on unless {@code --port} says otherwise. */
    public static final int DEFAULT_PORT = 18612;

    static final int SLOT = 64, KEY_OFF = 8, KEY_MAX = 24, VALUE_OFF = 32, VALUE_MAX = 32, SLOTS = 4096;

    private KvExample() {} // only static entry points

    /**
     * Runs the example from the command line and exits with its status.
     *
     * @param args the {@link ExampleOptions} flags
     * @throws Exception when set-up or a read fails
     */
    public static void main(String[] args) throws Exception {
        System.exit(run(ExampleOptions.parse(args, DEFAULT_PORT), System.out));
    }

    /**
     * Runs the server, the client or both: the server fills {@code --count} entries (1000 by default, at most 2048),
     * the client looks each one up by RDMA READ.
     *
     * @param o   the parsed options
     * @param out where the progress and the lookup times are printed
     * @return 0 when every lookup found the right value, 1 otherwise
     * @throws Exception when set-up or a read fails
     */
    public static int run(ExampleOptions o, PrintStream out) throws Exception {
        int entries = o.count < 0 ? 1000 : Math.min(o.count, SLOTS / 2);
        if (o.role == ExampleOptions.Role.CLIENT) return client(o, o.port, entries, out);
        if (o.role == ExampleOptions.Role.BOTH) o.port = 0;
        // clients only read the table: the server's queue pairs allow RDMA READ and nothing else
        try (ServerEndpoint server = ServerEndpoint.bind(
                        o.serverAddress(),
                        o.config().remoteAccess(Access.REMOTE_READ).build());
                RegisteredBuffer table = server.pool().allocate((long) SLOTS * SLOT)) {
            table.segment().fill((byte) 0);
            for (int i = 0; i < entries; i++) put(table.segment(), "key-" + i, "value-" + i);
            server.export(table.remote());
            out.printf(
                    "kv server on %s (device %s): %d entries in %d slots at %s%n",
                    server.localAddress(), server.group().device().name(), entries, SLOTS, table.remote());
            if (o.role == ExampleOptions.Role.SERVER) {
                int clients = o.clients < 0 ? 1 : o.clients;
                for (int i = 0; i < clients; i++) serve(server, o.timeout, out);
                return 0;
            }
            CompletableFuture<Void> serving = ExampleOptions.background("kv-server", () -> {
                serve(server, o.timeout, out);
                return null;
            });
            int rc = client(o, server.port(), entries, out);
            serving.get();
            return rc;
        }
    }

    /** The server's CPU only waits for the client to finish: lookups never reach it. */
    private static void serve(ServerEndpoint server, Duration timeout, PrintStream out) throws Exception {
        try (Endpoint ep = server.accept(timeout)) {
            out.printf("server: client %s connected; serving lookups without this CPU%n", ep.remoteAddress());
            try {
                ep.receive(Duration.ofMinutes(10));
            } catch (RdmaException e) {
                // the client closed or went away: done either way
            }
            out.println("server: client done");
        }
    }

    static int hash(byte[] key) {
        int h = 0x811C9DC5;
        for (byte b : key) h = (h ^ (b & 0xFF)) * 0x01000193;
        return (h & 0x7FFFFFFF) % SLOTS;
    }

    static void put(MemorySegment table, String k, String v) {
        byte[] key = k.getBytes(StandardCharsets.UTF_8), value = v.getBytes(StandardCharsets.UTF_8);
        if (key.length > KEY_MAX || value.length > VALUE_MAX)
            throw new IllegalArgumentException("key or value too long");
        for (int i = 0, s = hash(key); i < SLOTS; i++, s = (s + 1) % SLOTS) {
            long base = (long) s * SLOT;
            if (table.get(ValueLayout.JAVA_BYTE, base) == 0) {
                table.set(ValueLayout.JAVA_BYTE, base + 1, (byte) key.length);
                table.set(ValueLayout.JAVA_BYTE, base + 2, (byte) value.length);
                MemorySegment.copy(key, 0, table, ValueLayout.JAVA_BYTE, base + KEY_OFF, key.length);
                MemorySegment.copy(value, 0, table, ValueLayout.JAVA_BYTE, base + VALUE_OFF, value.length);
                table.set(ValueLayout.JAVA_BYTE, base, (byte) 1);
                return;
            }
        }
        throw new IllegalStateException("table full");
    }

    /** Looks a key up with RDMA READs of its slots; null when absent. */
    static String get(Endpoint ep, RemoteBuffer table, RegisteredBuffer slot, String k, int[] reads) {
        byte[] key = k.getBytes(StandardCharsets.UTF_8);
        for (int i = 0, s = hash(key); i < SLOTS; i++, s = (s + 1) % SLOTS) {
            ep.readSync(slot, 0, table, (long) s * SLOT, SLOT);
            reads[0]++;
            MemorySegment m = slot.segment();
            if (m.get(ValueLayout.JAVA_BYTE, 0) == 0) return null;
            int kl = m.get(ValueLayout.JAVA_BYTE, 1), vl = m.get(ValueLayout.JAVA_BYTE, 2);
            byte[] found = m.asSlice(KEY_OFF, kl).toArray(ValueLayout.JAVA_BYTE);
            if (Arrays.equals(found, key))
                return new String(m.asSlice(VALUE_OFF, vl).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        }
        return null;
    }

    private static int client(ExampleOptions o, int port, int entries, PrintStream out) throws Exception {
        try (Endpoint ep = o.config()
                        .localAddress(o.clientLocal(0))
                        .retryConnect(true)
                        .connect(o.serverHost(), port);
                RegisteredBuffer slot = ep.pool().allocate(SLOT)) {
            RemoteBuffer table = ep.peerExport();
            if (table == null) {
                out.println("client: the server exported no table");
                return 1;
            }
            out.printf("client: connected to %s; table %s%n", ep.remoteAddress(), table);
            int[] reads = {0};
            int lookups = Math.max(1, Math.min(entries, 200));
            long t0 = System.nanoTime();
            for (int i = 0; i < lookups; i++) {
                int k = (int) ((long) i * 7919 % entries);
                String v = get(ep, table, slot, "key-" + k, reads);
                if (!("value-" + k).equals(v)) {
                    out.printf("client: FAILED, key-%d -> %s%n", k, v);
                    return 1;
                }
            }
            double us = (System.nanoTime() - t0) / 1e3 / lookups;
            String missing = get(ep, table, slot, "no-such-key", reads);
            if (missing != null) {
                out.println("client: FAILED, found a key that was never stored");
                return 1;
            }
            out.printf(
                    "client: %d lookups ok (%.2f RDMA reads each, %.1f us per lookup); key-%d -> %s; no-such-key -> not found%n",
                    lookups,
                    reads[0] / (double) (lookups + 1),
                    us,
                    entries - 1,
                    get(ep, table, slot, "key-" + (entries - 1), reads));
            ep.sendSync("done".getBytes(StandardCharsets.UTF_8));
            return 0;
        }
    }
}
