package dev.jrdma.verbs;

/** Path MTU ({@code enum ibv_mtu}): the largest payload of one packet. */
public enum Mtu {
    /** {@code IBV_MTU_256} (1): 256 bytes. */
    MTU_256(1, 256),
    /** {@code IBV_MTU_512} (2): 512 bytes. */
    MTU_512(2, 512),
    /** {@code IBV_MTU_1024} (3): 1024 bytes, what rxe picks on a 1500-byte Ethernet interface. */
    MTU_1024(3, 1024),
    /** {@code IBV_MTU_2048} (4): 2048 bytes. */
    MTU_2048(4, 2048),
    /** {@code IBV_MTU_4096} (5): 4096 bytes, the largest. */
    MTU_4096(5, 4096);

    /** The {@code enum ibv_mtu} value, 1..5. */
    public final int code;
    /** The largest payload of one packet, in bytes. */
    public final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    /**
     * The MTU of an {@code enum ibv_mtu} value.
     *
     * @param code 1..5
     * @return the MTU
     * @throws IllegalArgumentException for another value
     */
    public static Mtu of(int code) {
        for (Mtu m : values()) if (m.code == code) return m;
        throw new IllegalArgumentException("unknown MTU enum value " + code + " (1..5 = 256..4096 bytes)");
    }

    /**
     * The MTU of a size in bytes.
     *
     * @param bytes 256, 512, 1024, 2048 or 4096
     * @return the MTU
     * @throws IllegalArgumentException for another size
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) if (m.bytes == bytes) return m;
        throw new IllegalArgumentException("no path MTU of " + bytes + " bytes: use 256, 512, 1024, 2048 or 4096");
    }

    /**
     * The smaller of two MTUs: what both ends of a path can carry.
     *
     * @param other the other MTU
     * @return the smaller one
     */
    public Mtu min(Mtu other) {
        return code <= other.code ? this : other;
    }

    /** {@return the size in bytes, as ibv_devinfo prints it} */
    @Override
    public String toString() {
        return Integer.toString(bytes);
    }
}
