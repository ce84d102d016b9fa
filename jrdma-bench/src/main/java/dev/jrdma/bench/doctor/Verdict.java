package dev.jrdma.bench.doctor;

/** A check's verdict. INFO: nothing wrong, nothing to fix, only a fact worth knowing. */
public enum Verdict {
    /** The check passed. */
    OK,
    /** Something may hurt (e.g. a low memlock limit, ECN off): RDMA may work, with the fix it works better. */
    WARN,
    /** Something stops RDMA here (e.g. no device node access); the fix says what to do. */
    FAIL,
    /** Nothing wrong, nothing to fix, only a fact worth knowing. */
    INFO;

    /** {@return the more serious of {@code a} and {@code b}: FAIL over WARN over INFO over OK} */
    static Verdict worse(Verdict a, Verdict b) {
        return rank(b) > rank(a) ? b : a;
    }

    private static int rank(Verdict v) {
        return switch (v) {
            case OK -> 0;
            case INFO -> 1;
            case WARN -> 2;
            case FAIL -> 3;
        };
    }
}
