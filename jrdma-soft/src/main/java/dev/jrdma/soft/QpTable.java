package dev.jrdma.soft;

import dev.jrdma.verbs.VerbsException;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The QP numbers of one software device and the QP each names (rxe's {@code rxe_pool.c} for QPs): numbers are
 * handed out by {@link #add}, looked up for every received packet by {@link #get} (no lock, no allocation).
 */
final class QpTable {
    static final int SIZE = 1 << 16;
    /** The first QP number handed out: 0 and 1 are the special QPs of IBA (SMI, GSI), the rest below as rxe reserves them. */
    static final int FIRST_QPN = 0x11;
    /** The most QPs open at once (device attribute max_qp). */
    static final int MAX_QPS = SIZE - FIRST_QPN;

    /**
     * RoCE carries no authentication: whoever guesses a QP number, a PSN and an rkey can inject packets. So QP
     * numbers start at a random point (ReDMArk, USENIX Security 2021, exploited the predictable ones).
     */
    private static final SecureRandom RANDOM = new SecureRandom();

    private final AtomicReferenceArray<SoftQp> qps = new AtomicReferenceArray<>(SIZE);
    private int nextQpn = FIRST_QPN + RANDOM.nextInt(SIZE - FIRST_QPN);

    /** A free QP number for {@code qp}, which it names from now on. */
    synchronized int add(SoftQp qp) {
        for (int i = 0; i < SIZE; i++) {
            int n = nextQpn;
            nextQpn = nextQpn + 1 >= SIZE ? FIRST_QPN : nextQpn + 1;
            if (qps.get(n) == null) {
                qps.set(n, qp);
                return n;
            }
        }
        throw new VerbsException("ibv_create_qp", VerbsException.ENOMEM, "the soft device has no free QP number (65000 QPs open): close some");
    }

    /** {@code qpn} no longer names {@code qp} (nothing happens when it names another QP by now). */
    void remove(int qpn, SoftQp qp) { qps.compareAndSet(qpn & (SIZE - 1), qp, null); }

    /** The QP {@code qpn} names, or null. */
    SoftQp get(int qpn) { return qpn >= 0 && qpn < SIZE ? qps.get(qpn) : null; }
}
