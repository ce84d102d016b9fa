package dev.jrdma.soft;

import dev.jrdma.verbs.VerbsException;
import java.util.random.RandomGenerator;

/**
 * The QP numbers of one software device and the QP each names (rxe's {@code rxe_pool.c} for QPs): numbers are
 * drawn at random by {@link #add} (see {@link RandomIdTable}: never within 2^16 of the one before), looked up for
 * every received packet by {@link #get} (no lock, no allocation).
 */
final class QpTable {
    /** The least QP number handed out: 0 and 1 are the special QPs of IBA (SMI, GSI), the rest below as rxe reserves them. */
    static final int FIRST_QPN = 0x11;
    /** The greatest: 0xFFFFFF is the multicast QP number (IBA 10.5.2.1). */
    static final int LAST_QPN = 0xFF_FFFE;
    /** The most QPs open at once (device attribute max_qp). */
    static final int MAX_QPS = (1 << 16) - FIRST_QPN;

    private final RandomIdTable<SoftQp> qps;

    QpTable() {
        this(RandomIdTable.SYSTEM_RANDOM);
    }

    /** A table drawing its numbers from {@code random} (tests: a seeded source, for numbers the same in every run). */
    QpTable(RandomGenerator random) {
        qps = new RandomIdTable<>(FIRST_QPN, LAST_QPN, MAX_QPS, random);
    }

    /** A free QP number, drawn at random, for {@code qp}, which it names from now on. */
    synchronized int add(SoftQp qp) {
        int qpn = qps.add(qp);
        if (qpn < 0)
            throw new VerbsException(
                    "ibv_create_qp",
                    VerbsException.ENOMEM,
                    "the soft device has " + MAX_QPS + " QPs open, its most: close some");
        return qpn;
    }

    /** {@code qpn} no longer names {@code qp} (nothing happens when it names another QP by now). */
    synchronized void remove(int qpn, SoftQp qp) {
        qps.remove(qpn, qp);
    }

    /** The QP {@code qpn} names, or null. */
    SoftQp get(int qpn) {
        return qps.get(qpn);
    }
}
