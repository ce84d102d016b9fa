package dev.jrdma.bench;

import dev.jrdma.cm.CmEvent;
import dev.jrdma.cm.CmEventChannel;
import dev.jrdma.cm.CmEventType;
import dev.jrdma.cm.CmException;
import dev.jrdma.cm.CmId;
import java.net.InetSocketAddress;
import java.time.Duration;

/** The rdma_cm steps that the perftest exchange over rdma_cm ({@link CmLink}) and the test's connections ({@link CmQps}) share. */
final class CmSteps {
    /** How long rdma_cm may take to resolve an address or a route (perftest's 2000 ms). */
    static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(2);

    private CmSteps() {}

    /**
     * Resolves the address of {@code server} and the route to it on {@code id}, waiting on {@code events} for each;
     * a {@code tos} of 0..255 is set between the two (where perftest's -T sets it: the route takes it from the id).
     */
    static void resolve(CmId id, CmEventChannel events, InetSocketAddress server, int tos) throws CmException {
        id.resolveAddress(null, server, RESOLVE_TIMEOUT);
        expect(events, CmEventType.ADDR_RESOLVED, "address resolution of " + server);
        if (tos >= 0) id.setTos(tos);
        id.resolveRoute(RESOLVE_TIMEOUT);
        expect(events, CmEventType.ROUTE_RESOLVED, "route resolution to " + server);
    }

    private static void expect(CmEventChannel events, CmEventType type, String what) throws CmException {
        Duration timeout = RESOLVE_TIMEOUT.multipliedBy(2);
        CmEvent e = events.next(timeout);
        if (e == null) throw new BenchException("rdma_cm: no answer within " + timeout.toSeconds() + " s to " + what);
        if (e.type() != type) throw new BenchException("rdma_cm: " + what + " failed: " + e);
    }

    /** Waits {@code ms} between connection attempts; an interrupt ends the run. */
    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BenchException("interrupted");
        }
    }
}
