package dev.jrdma.verbs;

/**
 * Memory window types ({@code enum ibv_mw_type}): type 1 is bound with the bind verb, type 2 with a BIND_MW work
 * request.
 */
public enum MwType {
    /** {@code IBV_MW_TYPE_1} (1): bound with {@link QueuePair#bindMemoryWindow}, usable on every QP of its PD. */
    TYPE_1(1),
    /** {@code IBV_MW_TYPE_2} (2): bound with a BIND_MW work request to one QP, revoked with LOCAL_INV or SEND_WITH_INV. */
    TYPE_2(2);

    /** The {@code enum ibv_mw_type} value. */
    public final int code;

    MwType(int code) {
        this.code = code;
    }

    /**
     * The window type of a libibverbs value.
     *
     * @param code 1 or 2
     * @return its type, or null for another value
     */
    public static MwType of(int code) {
        return code == 1 ? TYPE_1 : code == 2 ? TYPE_2 : null;
    }
}
