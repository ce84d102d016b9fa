package dev.jrdma.soft.wire;

/** The IB path MTU values and their enumeration codes (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5). */
public enum Mtu {
    /** 256 bytes ({@code IBV_MTU_256}). */
    MTU_256(1, 256),
    /** 512 bytes ({@code IBV_MTU_512}). */
    MTU_512(2, 512),
    /** 1024 bytes ({@code IBV_MTU_1024}). */
    MTU_1024(3, 1024),
    /** 2048 bytes ({@code IBV_MTU_2048}). */
    MTU_2048(4, 2048),
    /** 4096 bytes ({@code IBV_MTU_4096}). */
    MTU_4096(5, 4096);

    private static final Mtu[] VALUES = values();
    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    /** {@return the verbs enumeration value ({@code enum ibv_mtu}), 1..5} */
    public int code() {
        return code;
    }

    /** {@return the payload size of a full packet, in bytes} */
    public int bytes() {
        return bytes;
    }

    /**
     * The MTU of a verbs enumeration value.
     *
     * @param code {@code IBV_MTU_256} (1) .. {@code IBV_MTU_4096} (5)
     * @return the MTU
     * @throws IllegalArgumentException when {@code code} is outside 1..5
     */
    public static Mtu ofCode(int code) {
        if (code < 1 || code > 5)
            throw new IllegalArgumentException("MTU code must be 1..5 (256..4096 bytes), got " + code);
        return VALUES[code - 1];
    }

    /**
     * The MTU of a size.
     *
     * @param bytes 256, 512, 1024, 2048 or 4096
     * @return the MTU
     * @throws IllegalArgumentException when {@code bytes} is another size
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : VALUES) if (m.bytes == bytes) return m;
        throw new IllegalArgumentException("MTU must be 256, 512, 1024, 2048 or 4096 bytes, got " + bytes);
    }

    /**
     * {@return the largest MTU not above {@code bytes} (at least 256), e.g. 1024 for a 1500-byte link's payload}
     *
     * @param bytes a size in bytes
     */
    public static Mtu floor(int bytes) {
        Mtu r = MTU_256;
        for (Mtu m : VALUES) if (m.bytes <= bytes) r = m;
        return r;
    }
}
