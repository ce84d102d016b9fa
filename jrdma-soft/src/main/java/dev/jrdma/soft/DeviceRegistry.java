package dev.jrdma.soft;

import dev.jrdma.verbs.VerbsException;
import java.io.IOException;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The transports open in this process, one per local address and port, shared by every context opened on it and
 * closed when the last one is released. A transport released and acquired again at once waits for the old one's
 * socket to close, so that the new bind does not fail with EADDRINUSE.
 */
final class DeviceRegistry {
    /** The registry of this process's devices. */
    static final DeviceRegistry SHARED = new DeviceRegistry(Clock.SYSTEM);
    /** How long {@link #acquire} waits for a released transport on the same address to close before it binds anyway. */
    static final long CLOSE_WAIT_NANOS = 5_000_000_000L;

    private final Clock clock;
    /** The transports open, by {@link #key}, and how many contexts hold each; the monitor of every field. */
    private final Map<String, Held> open = new HashMap<>();
    /** Transports released but whose socket is not closed yet: opening the same address and port waits for them. */
    private final Map<String, Transport> closing = new HashMap<>();

    private static final class Held {
        final Transport transport;
        int refs;

        Held(Transport transport) {
            this.transport = transport;
        }
    }

    DeviceRegistry(Clock clock) {
        this.clock = clock;
    }

    /** The name of a device's transport: address and port, e.g. "127.0.0.1:4791". */
    static String key(IpAddress address, int port) {
        return address.literal() + ":" + port;
    }

    /**
     * The transport of {@code address} and {@code port}, opened now (its link wrapped by {@code wrap}: tests, a link
     * that stalls or drops) unless one is open; each call needs one {@link #release}.
     */
    Transport acquire(InetAddress address, int port, UnaryOperator<Link> wrap) {
        String k = key(IpAddress.of(address), port);
        synchronized (open) {
            awaitClosed(k);
            Held h = open.get(k);
            if (h == null) {
                try {
                    h = new Held(Transport.open(this, address, port, wrap));
                } catch (IOException e) {
                    throw new VerbsException(
                            "ibv_open_device",
                            VerbsException.EBUSY,
                            "cannot bind UDP " + k + " for the soft device (" + e.getMessage()
                                    + "): another process (or kernel Soft-RoCE) "
                                    + "holds the port, or the address is not local; pick another address (soft@127.0.0.2) or port (-Djrdma.soft.port)",
                            e);
                }
                open.put(k, h);
            }
            h.refs++;
            return h.transport;
        }
    }

    /**
     * Waits (holding the monitor, which wait gives up) until a released transport on {@code k} has closed its socket:
     * a device closed and opened again at once on the same address would otherwise fail to bind (EADDRINUSE).
     */
    private void awaitClosed(String k) {
        long deadline = clock.nanoTime() + CLOSE_WAIT_NANOS;
        boolean interrupted = false;
        while (closing.containsKey(k)) {
            long left = (deadline - clock.nanoTime()) / 1_000_000;
            if (left <= 0) break; // its close hangs: the bind says EBUSY
            try {
                open.wait(left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** One holder of {@code t} is done with it: the last one's release closes it (outside the monitor: closing takes a while). */
    void release(Transport t) {
        String k = t.key;
        synchronized (open) {
            Held h = open.get(k);
            if (h == null || h.transport != t || --h.refs > 0) return;
            open.remove(k);
            closing.put(k, t);
        }
        try {
            t.stop();
        } finally {
            synchronized (open) {
                closing.remove(k, t);
                open.notifyAll();
            }
        }
    }
}
