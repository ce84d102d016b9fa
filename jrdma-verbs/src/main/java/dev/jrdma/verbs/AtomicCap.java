package dev.jrdma.verbs;

/** {@code enum ibv_atomic_cap}: whether and how atomics are atomic. */
public enum AtomicCap {
    NONE, HCA, GLOB;

    public static AtomicCap of(int code) {
        return code >= 0 && code < 3 ? values()[code] : NONE;
    }

    public String ibvName() {
        return "ATOMIC_" + name();
    }
}
