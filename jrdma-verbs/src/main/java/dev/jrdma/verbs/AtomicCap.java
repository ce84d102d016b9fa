package dev.jrdma.verbs;

/** {@code enum ibv_atomic_cap}: whether and how atomics are atomic. */
public enum AtomicCap {
    /** {@code IBV_ATOMIC_NONE} (0): no atomic operations. */
    NONE,
    /** {@code IBV_ATOMIC_HCA} (1): atomic with respect to other atomics through this device, not to CPU accesses. */
    HCA,
    /** {@code IBV_ATOMIC_GLOB} (2): atomic also with respect to the CPU and other devices. */
    GLOB;

    /**
     * The capability of a libibverbs value.
     *
     * @param code an {@code enum ibv_atomic_cap} value
     * @return its capability, or {@link #NONE} for a value outside 0..2
     */
    public static AtomicCap of(int code) {
        return code >= 0 && code < 3 ? values()[code] : NONE;
    }

    /** {@return the name as {@code ibv_devinfo} prints it, e.g. {@code ATOMIC_HCA}} */
    public String ibvName() {
        return "ATOMIC_" + name();
    }
}
