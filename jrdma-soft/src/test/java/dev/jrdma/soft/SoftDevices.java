package dev.jrdma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.jrdma.testkit.RcPair;
import dev.jrdma.verbs.CompletionQueue;
import dev.jrdma.verbs.Context;
import dev.jrdma.verbs.Device;
import dev.jrdma.verbs.VerbsException;
import dev.jrdma.verbs.WorkCompletion;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The software device with its threads, as the kit's threaded backend: two devices on 127.0.0.1 and 127.0.0.2 that
 * share one free UDP port (kept bound for the whole run), and {@link RcPair}s between them.
 */
final class SoftDevices {
    static final Inet4Address A = ip("127.0.0.1"), B = ip("127.0.0.2");
    static final int PORT;
    private static final Context ANCHOR_A, ANCHOR_B;

    static {
        int port = 0;
        Context ca = null, cb = null;
        for (int attempt = 0; attempt < 50 && ca == null; attempt++) {
            int p = 20000 + (int) (Math.random() * 30000);
            try {
                ca = SoftProvider.open(A, p).open();
                cb = SoftProvider.open(B, p).open();
                port = p;
            } catch (VerbsException e) {
                if (ca != null) ca.close();
                ca = null;
            }
        }
        if (ca == null) throw new IllegalStateException("no free UDP port pair on 127.0.0.1/127.0.0.2");
        PORT = port;
        ANCHOR_A = ca; // keep the sockets bound for the whole run
        ANCHOR_B = cb;
    }

    private SoftDevices() {}

    /**
     * Opens {@code n} devices on 127.0.0.1, 127.0.0.2, ... on one free UDP port, whose links damage what they send as
     * {@code faults} say; the caller closes the contexts (the port is released with the last one).
     */
    static Context[] openFaulty(Faults faults, int n) {
        for (int attempt = 0; attempt < 50; attempt++) {
            int p = 20000 + (int) (Math.random() * 30000);
            Context[] cs = new Context[n];
            try {
                for (int i = 0; i < n; i++)
                    cs[i] = SoftDevice.withFaults(ip("127.0.0." + (i + 1)), p, faults)
                            .open();
                return cs;
            } catch (VerbsException e) {
                for (Context c : cs) if (c != null) c.close();
            }
        }
        throw new IllegalStateException("no free UDP port on 127.0.0.1..127.0.0." + n);
    }

    static Inet4Address ip(String s) {
        try {
            return (Inet4Address) InetAddress.getByName(s);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Device devA() {
        return SoftProvider.open(A, PORT);
    }

    static Device devB() {
        return SoftProvider.open(B, PORT);
    }

    /** The threaded backend: side A on {@code a}, side B on {@code b} (the same device: one context for both). */
    static RcPair.Backend backend(Device a, Device b) {
        return RcPair.threaded("the software device (threaded)", () -> {
            Context ca = a.open();
            if (a.equals(b)) return new Context[] {ca, ca};
            try {
                return new Context[] {ca, b.open()};
            } catch (RuntimeException e) {
                ca.close();
                throw e;
            }
        });
    }

    /** A connected pair between 127.0.0.1 and 127.0.0.2 with the kit's defaults. */
    static RcPair pair() {
        return pair(o -> {});
    }

    /** A connected pair between 127.0.0.1 and 127.0.0.2, built as {@code tune} says. */
    static RcPair pair(Consumer<RcPair.Builder> tune) {
        return pair(devA(), devB(), tune);
    }

    /** A pair between devices {@code a} and {@code b} (one device: one context), built as {@code tune} says. */
    static RcPair pair(Device a, Device b, Consumer<RcPair.Builder> tune) {
        RcPair.Builder builder = RcPair.on(backend(a, b));
        tune.accept(builder);
        return builder.build();
    }

    /** Polls one completion of a threaded device or fails after {@code ms}. */
    static WorkCompletion poll(CompletionQueue cq, long ms) {
        WorkCompletion[] wc = WorkCompletion.array(1);
        long end = System.nanoTime() + ms * 1_000_000;
        for (int spins = 0; System.nanoTime() < end; spins++) {
            if (cq.poll(wc) == 1) return wc[0];
            // spin briefly, then nap: a test that spins flat out starves the kernel's loopback delivery on small
            // machines
            if (spins < 200) Thread.onSpinWait();
            else LockSupport.parkNanos(50_000);
        }
        return fail("no completion within " + ms + " ms");
    }

    static WorkCompletion poll(CompletionQueue cq) {
        return poll(cq, 5000);
    }

    /**
     * Waits (at most 5 s) until the counter {@code name} of {@code ctx} is at least {@code want} and returns its value
     * then: a device counts what it receives on its receive thread, after the sender's completion, at whatever moment
     * a loaded machine schedules that thread.
     */
    static long awaitCounter(Context ctx, String name, long want) throws InterruptedException {
        long end = System.nanoTime() + 5_000_000_000L;
        long v;
        while ((v = ctx.counters().get(name)) < want && System.nanoTime() < end) Thread.sleep(1);
        return v;
    }

    /** Asserts no completion arrives within {@code ms}. */
    static void assertNoCompletion(CompletionQueue cq, long ms) throws InterruptedException {
        Thread.sleep(ms);
        WorkCompletion[] wc = WorkCompletion.array(1);
        int n = cq.poll(wc);
        assertEquals(0, n, () -> "unexpected completion " + wc[0]);
    }
}
